"""Every command that commits honours the repository's hooks and signing settings, with real
git and a real ssh key: a refusing hook stops the command (exit 2, one line naming the hook,
nothing left: branch, ref, index, lock, journal), and with ``commit.gpgsign`` every commit the
command adds is signed and verifies. ``rlgen update`` merges its render, a commit it makes in
git's object store with no hook; it says so in one line."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.hostile import record, repository_state
from support.repos import REQUIRED, git, run_rlgen
from support.toolchain import missing, tool

#: Each committing command, run in a copy of the generated repository on its main branch.
COMMANDS = {
    "run-new": ("run", "new", "second"),
    "run-set": ("run", "set", "baseline", "trainer.total_epochs=3"),
    "run-rm": ("run", "rm", "baseline"),
    "update": ("update", "--set", "ak-storage.bucket=other-bucket"),
    "cluster-add": ("cluster", "add", "second", "--env", "staging"),
}


def _hook(folder: Path, name: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"#!/bin/sh\n{body}\n")
    (folder / name).chmod(0o755)


def _rlgen(cwd: Path, *args: str, env: dict | None = None, input: str | None = None):
    return run_rlgen(*args, cwd=cwd, env={**os.environ, **(env or {})}, input=input)


@pytest.fixture(scope="module")
def signing_key(tmp_path_factory) -> tuple[Path, Path]:
    """A real ed25519 key from ssh-keygen and the allowed-signers file git verifies with."""
    folder = tmp_path_factory.mktemp("ssh")
    key = folder / "signer"
    subprocess.run([shutil.which("ssh-keygen") or missing("ssh-keygen is not installed"), "-q", "-t",
                    "ed25519", "-N", "", "-C", "rlgen-test", "-f", str(key)], check=True)
    allowed = folder / "allowed_signers"
    allowed.write_text(f'* namespaces="git" {(folder / "signer.pub").read_text().strip()}\n')
    return key, allowed


def _sign_config(key: Path, allowed: Path) -> dict[str, str]:
    return {"gpg.format": "ssh", "user.signingkey": f"{key}.pub", "commit.gpgsign": "true",
            "gpg.ssh.allowedSignersFile": str(allowed)}


@pytest.mark.parametrize("hook", ["pre-commit", "commit-msg"])
@pytest.mark.parametrize("name", COMMANDS)
def test_a_refusing_hook_stops_every_committing_command(name, hook, repo, record_property):
    _hook(repo / ".git" / "hooks", hook, "echo 'policy: no commits today' >&2\nexit 1")
    before = repository_state(repo)
    result = _rlgen(repo, *COMMANDS[name])
    after = repository_state(repo)
    record(record_property, expected=2, result=result, changed=after != before, leftovers=after["leftovers"])
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and f"the {hook} hook (.git/hooks/{hook}) refused the commit" in line, line
    assert "policy: no commits today" in line
    assert after == before


def test_a_refusing_hook_stops_rlgen_new(tmp_path, record_property):
    """``rlgen new`` commits in a fresh repository: hooks reach it from the user's git config
    (core.hooksPath); refused, no repository and no staging folder is left."""
    _hook(tmp_path / "hooks", "pre-commit", "echo 'policy: no commits today' >&2\nexit 1")
    config = tmp_path / "gitconfig"
    config.write_text(f"[core]\n\thooksPath = {tmp_path / 'hooks'}\n")
    (tmp_path / "work").mkdir()
    result = _rlgen(tmp_path / "work", "new", "repo", *REQUIRED, "--no-input", env={"GIT_CONFIG_GLOBAL": str(config)})
    left = sorted(p.name for p in (tmp_path / "work").iterdir())
    record(record_property, expected=2, result=result, leftovers=left)
    assert result.returncode == 2, result.stderr
    assert f"the pre-commit hook ({tmp_path / 'hooks' / 'pre-commit'}) refused" in result.stderr.strip()
    assert left == []


def test_every_commit_of_every_command_is_signed_and_hooks_ran(repo, signing_key, tmp_path):
    key, allowed = signing_key
    for option, value in _sign_config(key, allowed).items():
        git(repo, "config", option, value)
    ran = tmp_path / "hooks-ran"
    for hook in ("pre-commit", "commit-msg"):
        _hook(repo / ".git" / "hooks", hook, f"echo {hook} >> '{ran}'")
    start = git(repo, "rev-parse", "HEAD").strip()
    for name, args in COMMANDS.items():
        git(repo, "switch", "-q", "main")
        result = _rlgen(repo, *args)
        assert result.returncode == 0, (name, result.stderr)
        if name in ("update", "cluster-add"):
            said = [line for line in result.stderr.splitlines() if line.startswith("Hooks: ")]
            assert len(said) == 1 and "ran no pre-commit or commit-msg hook" in said[0], result.stderr
            assert "Hooks: " not in result.stdout
    added = git(repo, "rev-list", "--all", f"^{start}").split()
    # run new, set, rm: one commit each; update and cluster add: the render and the merge.
    assert len(added) == 3 + 2 * 2
    for commit in added:
        assert "\ngpgsig -----BEGIN SSH SIGNATURE-----" in git(repo, "cat-file", "commit", commit)
        verified = subprocess.run(["git", "verify-commit", commit], cwd=repo, capture_output=True, text=True)
        assert verified.returncode == 0 and 'Good "git" signature' in verified.stderr, verified.stderr
    # Every commit but the two renders ran both hooks.
    assert ran.read_text().split().count("pre-commit") == 5
    assert ran.read_text().split().count("commit-msg") == 5


def test_rlgen_new_signs_its_first_commit(tmp_path, signing_key):
    key, allowed = signing_key
    config = tmp_path / "gitconfig"
    for option, value in _sign_config(key, allowed).items():
        subprocess.run(["git", "config", "--file", str(config), option, value], check=True)
    result = _rlgen(tmp_path, "new", "repo", *REQUIRED, "--no-input", env={"GIT_CONFIG_GLOBAL": str(config)})
    assert result.returncode == 0, result.stderr
    verified = subprocess.run(["git", "verify-commit", "HEAD"], cwd=tmp_path / "repo", capture_output=True, text=True,
                              env={**os.environ, "GIT_CONFIG_GLOBAL": str(config)})
    assert verified.returncode == 0 and 'Good "git" signature' in verified.stderr, verified.stderr


def test_a_signing_key_that_is_missing_stops_the_command(repo, tmp_path, record_property):
    for option, value in {"gpg.format": "ssh", "user.signingkey": str(tmp_path / "no-such-key.pub"),
                          "commit.gpgsign": "true"}.items():
        git(repo, "config", option, value)
    before = repository_state(repo)
    result = _rlgen(repo, *COMMANDS["run-new"])
    after = repository_state(repo)
    record(record_property, expected=2, result=result, changed=after != before, leftovers=after["leftovers"])
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "git commit failed" in result.stderr
    assert after == before


@pytest.fixture
def sops_repo(tmp_path) -> tuple[Path, dict]:
    folder = tmp_path / "age"
    folder.mkdir()
    subprocess.run([tool("age-keygen"), "-o", str(folder / "key.txt")], check=True, capture_output=True)
    public = subprocess.run([tool("age-keygen"), "-y", str(folder / "key.txt")], check=True, capture_output=True,
                            text=True).stdout.strip()
    env = {"PATH": str(Path(tool("sops")).parent) + os.pathsep + os.environ["PATH"]}
    result = _rlgen(tmp_path, "new", "repo", *REQUIRED, "--plugin", "sops", "--set", f"sops.age_recipients={public}",
                    "--no-input", env=env)
    assert result.returncode == 0, result.stderr
    return tmp_path / "repo", env


def test_secret_set_honours_hooks_and_signing(sops_repo, signing_key, record_property):
    repo, env = sops_repo
    _hook(repo / ".git" / "hooks", "pre-commit", "echo 'policy: no commits today' >&2\nexit 1")
    before = repository_state(repo)
    result = _rlgen(repo, "secret", "set", "oss-credentials", "akId", env=env, input="value-1\n")
    after = repository_state(repo)
    record(record_property, expected=2, result=result, changed=after != before, leftovers=after["leftovers"])
    assert result.returncode == 2 and "the pre-commit hook" in result.stderr.strip(), result.stderr
    assert after == before
    (repo / ".git" / "hooks" / "pre-commit").unlink()
    key, allowed = signing_key
    for option, value in _sign_config(key, allowed).items():
        git(repo, "config", option, value)
    result = _rlgen(repo, "secret", "set", "oss-credentials", "akId", env=env, input="value-1\n")
    assert result.returncode == 0, result.stderr
    verified = subprocess.run(["git", "verify-commit", "HEAD"], cwd=repo, capture_output=True, text=True)
    assert verified.returncode == 0, verified.stderr
