"""``rlgen secret set/list`` with the sops plugin: the real sops encrypts each value for the age
recipients of ``.sops.yaml``, read from stdin or an environment variable; only ciphertext reaches
the disk and Git, and a secret scanner finds none of the values in the repository or its history."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.repos import REQUIRED, build, commit_all, git, one_error_line, rlgen_in, run_rlgen
from support.toolchain import tool

from rlgen.repo import secret_files

#: Values shaped like credentials the scanner knows (an AWS key id, a GitHub token, a private key).
AK_ID = "AKIAZ7QX3V5N8K2M4P6R"
ADMIN_KEY = "ghp_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVc"
AK_SECRET = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lm\n-----END RSA PRIVATE KEY-----"
#: Pattern detectors only: ciphertext and pinned commit hashes are random by design (entropy
#: detectors flag them), and "secrets: sops" is no password (the keyword detector flags it).
NOT_PATTERNS = ("Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector")


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("age")
    subprocess.run([tool("age-keygen"), "-o", str(folder / "key.txt")], check=True, capture_output=True)
    public = subprocess.run([tool("age-keygen"), "-y", str(folder / "key.txt")], check=True, capture_output=True,
                            text=True).stdout.strip()
    return folder / "key.txt", public


@pytest.fixture
def repo(keys, tmp_path) -> Path:
    tool("sops")
    target = tmp_path / "repo"
    result = run_rlgen("new", str(target), *REQUIRED, "--plugin", "sops", "--set", f"sops.age_recipients={keys[1]}",
                       "--no-input", env=_env())
    assert result.returncode == 0, result.stderr
    return target


def _env(**extra) -> dict:
    bin_dir = str(Path(tool("sops")).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"], **extra}


def decrypt(key: Path, path: Path) -> str:
    result = subprocess.run([tool("sops"), "decrypt", "--input-type", "binary", "--output-type", "binary", str(path)],
                            capture_output=True, env=_env(SOPS_AGE_KEY_FILE=str(key)), check=True)
    return result.stdout.decode()


def scan(folder: Path) -> dict:
    result = subprocess.run([str(Path(os.sys.executable).parent / "detect-secrets"), "scan", "--all-files",
                             *[a for p in NOT_PATTERNS for a in ("--disable-plugin", p)], "."],
                            cwd=folder, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["results"]


def history(repo: Path, into: Path) -> Path:
    """Every blob of every commit of ``repo``, one file each."""
    into.mkdir()
    for line in git(repo, "rev-list", "--all", "--objects").splitlines():
        sha = line.split()[0]
        if git(repo, "cat-file", "-t", sha).strip() == "blob":
            (into / sha).write_bytes(subprocess.run(["git", "cat-file", "blob", sha], cwd=repo, capture_output=True,
                                                    check=True).stdout)
    return into


def test_set_encrypts_from_stdin_and_env_commits_and_leaks_nothing(repo, keys, tmp_path):
    first = rlgen_in(repo, "secret", "set", "oss-credentials", "akId", "-o", "table", input=AK_ID + "\n", env=_env())
    assert first.returncode == 0, first.stderr
    assert "Set akId of Secret rl-training/oss-credentials" in first.stdout
    second = rlgen_in(repo, "secret", "set", "oss-credentials", "akSecret", "--from-env", "AK",
                      env=_env(AK=AK_SECRET))
    third = rlgen_in(repo, "secret", "set", "sandbox-admin-api-key", "adminApiKey", input=ADMIN_KEY, env=_env())
    assert second.returncode == 0 and third.returncode == 0, second.stderr + third.stderr
    # One commit per value, nothing left uncommitted; only the owner of the age key reads the values back.
    assert git(repo, "log", "--format=%s", "-3").splitlines() == [
        "Secret sandbox-system/sandbox-admin-api-key: set adminApiKey",
        "Secret rl-training/oss-credentials: set akSecret", "Secret rl-training/oss-credentials: set akId"]
    assert git(repo, "status", "--porcelain") == ""
    folder = repo / "secrets" / "rl-training" / "oss-credentials"
    assert decrypt(keys[0], folder / "akId") == AK_ID and decrypt(keys[0], folder / "akSecret") == AK_SECRET
    listed = json.loads(rlgen_in(repo, "secret", "list", "-o", "json", env=_env()).stdout)["secrets"]
    assert {r["name"]: r["keys"] for r in listed}["oss-credentials"] == {"akId": True, "akSecret": True}
    assert {r["name"]: r["keys"] for r in listed}["sandbox-api-key"] == {"apiKey": False}
    # The scanner finds each value when it is in plain sight, and none in the repository or its history.
    control = tmp_path / "control"
    control.mkdir()
    for i, value in enumerate((AK_ID, ADMIN_KEY, AK_SECRET)):
        (control / f"leak-{i}.txt").write_text(value + "\n")
    assert len(scan(control)) == 3
    assert scan(repo) == {}
    assert scan(history(repo, tmp_path / "blobs")) == {}
    on_disk = [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts]
    assert not [p for p in on_disk for v in (AK_ID, ADMIN_KEY, "MIIEowIBAAKCAQEA") if v.encode() in p.read_bytes()]
    # kustomize builds the stage with the ciphertext (Flux decrypts it in the cluster); validate is
    # content with the encrypted values and still names the one required key left unset.
    result = rlgen_in(repo, "validate", "-o", "json", env=_env())
    assert [(p["obj"], p["message"].split(" (")[0]) for p in json.loads(result.stdout)["problems"]] == [
        ("Secret/rl-training/sandbox-api-key", "key apiKey has no encrypted value"),
        ("Secret/flux-system/git-webhook-token", "key token has no encrypted value")]
    for value in (AK_ID, ADMIN_KEY, "MIIEowIBAAKCAQEA"):
        assert value not in result.stdout + result.stderr


def test_a_value_is_never_an_argument_nor_empty(repo):
    assert rlgen_in(repo, "secret", "set", "hf-token", "token", "hf_value", env=_env()).returncode == 2
    assert one_error_line(rlgen_in(repo, "secret", "set", "hf-token", "token", input="", env=_env())) == (
        "rlgen: error: the value is empty: give it on standard input or with --from-env VAR")
    assert one_error_line(rlgen_in(repo, "secret", "set", "hf-token", "token", "--from-env", "UNSET_VAR_X",
                                   env=_env())) == "rlgen: error: --from-env UNSET_VAR_X: the variable is not set"
    assert git(repo, "log", "--format=%s").count("\n") == 1


def test_validate_names_a_file_not_encrypted_or_for_other_recipients(repo, keys, tmp_path):
    assert rlgen_in(repo, "secret", "set", "oss-credentials", "akId", input=AK_ID, env=_env()).returncode == 0
    assert rlgen_in(repo, "secret", "set", "oss-credentials", "akSecret", input="x", env=_env()).returncode == 0
    folder = repo / "secrets" / "rl-training" / "oss-credentials"
    (folder / "akSecret").write_text("plain value\n")
    other = tmp_path / "other.txt"
    subprocess.run([tool("age-keygen"), "-o", str(other)], check=True, capture_output=True)
    public = subprocess.run([tool("age-keygen"), "-y", str(other)], capture_output=True, text=True).stdout.strip()
    config = repo / ".sops.yaml"
    config.write_text(config.read_text().replace(keys[1], public))
    commit_all(repo, "edits by hand")
    result = rlgen_in(repo, "validate", "-o", "json", env=_env())
    problems = {(p["source"], p["message"].split(":")[0]) for p in json.loads(result.stdout)["problems"]}
    assert result.returncode == 1
    assert ("secrets/rl-training/oss-credentials/akSecret", "not encrypted by sops") in problems
    assert ("secrets/rl-training/oss-credentials/akId",
            f"encrypted for {keys[1]}, not for the recipients of .sops.yaml") in problems


def test_set_refuses_changes_to_its_own_files_only_and_names_them(repo):
    (repo / "README.md").write_text("changed\n")
    (repo / "notes.txt").write_text("mine\n")
    kustomization = repo / "secrets" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "# mine\n")
    line = one_error_line(rlgen_in(repo, "secret", "set", "hf-token", "token", input="v", env=_env()))
    assert "uncommitted changes to secrets/kustomization.yaml, which this command writes" in line
    assert not (repo / "secrets" / "rl-training").exists()
    git(repo, "checkout", "--", "secrets/kustomization.yaml")
    ok = rlgen_in(repo, "secret", "set", "hf-token", "token", input="v", env=_env())
    assert ok.returncode == 0, ok.stderr
    # The user's own changes elsewhere stay theirs: neither committed nor undone.
    assert git(repo, "status", "--porcelain").splitlines() == [" M README.md", "?? notes.txt"]


def test_sops_missing_is_one_line(repo):
    env = {**os.environ, "PATH": str(Path(shutil.which("git")).parent)}
    line = one_error_line(rlgen_in(repo, "secret", "set", "hf-token", "token", input="v", env=env))
    assert line.startswith("rlgen: error: sops is not on PATH")
    assert git(repo, "status", "--porcelain") == ""


def test_set_in_json_and_as_a_dry_run(repo):
    dry = rlgen_in(repo, "secret", "set", "hf-token", "token", "--dry-run", "-o", "table", input="hf_dry\n", env=_env())
    assert dry.returncode == 0, dry.stderr
    assert "Dry run: nothing written" in dry.stdout and "secrets/rl-training/hf-token/token" in dry.stdout
    assert "hf_dry" not in dry.stdout + dry.stderr
    assert git(repo, "status", "--porcelain", "--ignored") == "" and git(repo, "log", "--format=%s").count("\n") == 1
    assert not (repo / "secrets" / "rl-training" / "hf-token").exists()

    done = json.loads(rlgen_in(repo, "secret", "set", "hf-token", "token", "-o", "json", input="hf_real\n",
                               env=_env()).stdout)
    assert done["secret"] == "hf-token" and done["namespace"] == "rl-training" and done["key"] == "token"
    assert done["file"] == "secrets/rl-training/hf-token/token" and done["dry_run"] is False
    assert done["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert "secrets/rl-training/hf-token/token" in done["files"]["added"]


def test_a_secret_read_by_its_labels_gets_them_from_the_generator(repo):
    """A plugin that finds its Secret by label (SecretRef.labels; Argo CD's webhook Secret did,
    but argo with sops is refused) gets the Secret the generator makes with those labels."""
    value = repo / secret_files.value_path("flux-system", "git-webhook-token", "token")
    value.parent.mkdir(parents=True)
    value.write_text("ciphertext: kustomize reads the file as it is")
    secret_files.add(repo, "flux-system", "git-webhook-token", "token", {"example.com/reader": "webhook"})
    (secret,) = [o for o in build(repo / "secrets") if o["kind"] == "Secret"]
    assert secret["metadata"]["labels"] == {"example.com/reader": "webhook"}
