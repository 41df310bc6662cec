"""No credential reaches a generated repository, its history or rlgen's output: every answer
that carries one is offered to ``rlgen new`` and ``rlgen update`` (and refused), the
repository is generated and updated in the same folder, and two secret scanners, detect-secrets
and trufflehog3, read the tree, the whole history and everything rlgen printed. The same
scanners find the same credentials once planted, so the scan is no test that cannot fail."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.repos import GIT_URL, INSTALL, REGISTRY, commit_all, git, storage_answers
from support.toolchain import missing

TOKEN = "ghp_" + "Hostile0Corpus1Token2Value3abcdefghi"  # the shape of a GitHub token (36 characters)
PASSWORD = "Hunter2-Hostile-Password-9x"
CREDENTIAL_ANSWERS = [
    f"rlgen.git_url=https://{TOKEN}@git.rl.test/platform/rl-repo.git",
    f"rlgen.git_url=https://deploy:{PASSWORD}@git.rl.test/platform/rl-repo.git",
    f"rlgen.install=rlgen==0.1.0 --index-url https://ci:{PASSWORD}@pypi.rl.test/simple",
    f"rlgen.install=rlgen @ git+https://{TOKEN}@git.rl.test/rlgen.git@v0.1.0",
    f"rlgen.dataset_source=https://hf:{PASSWORD}@hub.rl.test/openai/gsm8k",
    f"mlflow.tracking_uri=https://admin:{PASSWORD}@mlflow.rl.test",
    f"mlflow.tracking_uri=https://mlflow.rl.test/?access_token={TOKEN}",
    f"ak-storage.endpoint=https://id:{PASSWORD}@oss-cn-hangzhou.aliyuncs.com",
]
CLEAN = ["rlgen.registry=" + REGISTRY, "rlgen.node_pool=lingjun", "rlgen.node_cpu=180", "rlgen.node_memory=1800", "rlgen.git_url=" + GIT_URL, "rlgen.install=" + INSTALL,
         "rlgen.git_host=github",
         "mlflow.tracking_uri=https://mlflow.rl.test", *storage_answers()[1::2]]


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed (make setup installs it)")
        missing(f"{name} is not installed")
    return path


def _rlgen(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlgen", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(cwd / "tmp")})


def _sets(answers: list[str]) -> list[str]:
    return [a for answer in answers for a in ("--set", answer)]


def _findings(folder: Path, secret_names: set[str]) -> list[str]:
    """What detect-secrets and trufflehog3 report in ``folder`` (files and, for a repository, its
    whole history as ``git log -p``). Not counted, as public by design: a hex string (a commit
    or digest pin), a Kubernetes Secret's name (``secret_names``), a plugin's name and a shell variable that
    names where a secret comes from (``password="$MLFLOW_PASSWORD"``), a plugin's version (a development
    build's, ``0.1.dev9+g<commit>``, reads as a keyword's value to detect-secrets)."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    _tool("trufflehog3")
    files = [p for p in folder.rglob("*") if p.is_file() and ".git" not in p.relative_to(folder).parts]
    if (folder / ".git").exists():
        history = folder.parent / f"{folder.name}-history.patch"
        history.write_text(git(folder, "log", "-p", "--all", "--format=%H %s%n%b"))
        files.append(history)
    found = []
    collection = SecretsCollection()
    with default_settings():
        for path in files:
            collection.scan_file(str(path))
    from rlgen.plugin_host.discovery import discover

    # "secrets: manual-secrets" names a plugin, not a secret; "manual-secrets: 0.2.1.dev3" is its version.
    installed = discover()
    plugins = set(installed) | {item.version for item in installed.values()}
    for path, secret in collection:
        value = secret.secret_value or ""
        if secret.type == "Hex High Entropy String" or value in secret_names | plugins or value.startswith("$"):
            continue
        found.append(f"detect-secrets {secret.type} in {path}:{secret.line_number}")
    scan = subprocess.run([_tool("trufflehog3"), "--format", "json", "--zero", str(folder)],
                          capture_output=True, text=True, check=True)
    for item in json.loads(scan.stdout or "[]"):
        value = item.get("secret", "")
        if not all(c in "0123456789abcdef" for c in value.lower()) and value not in secret_names:
            found.append(f"trufflehog3 {item['rule']['id']} in {item['path']}: {value[:8]}...")
    return found


def test_credentials_offered_everywhere_reach_no_file_history_or_output(tmp_path, record_property):
    top = tmp_path / "work"
    (top / "tmp").mkdir(parents=True)
    outputs = []
    for answer in CREDENTIAL_ANSWERS:
        result = _rlgen(top, "new", "repo", "--plugin", "mlflow", *_sets(CLEAN), "--set", answer, "--no-input")
        assert result.returncode == 2 and "credentials" in result.stderr or "secret" in result.stderr, result.stderr
        outputs.append(result.stdout + result.stderr)
    assert not (top / "repo").exists()
    result = _rlgen(top, "new", "repo", "--plugin", "mlflow", *_sets(CLEAN), "--no-input")
    assert result.returncode == 0, result.stderr
    outputs.append(result.stdout + result.stderr)
    repo = top / "repo"
    (repo / "tmp").mkdir()
    for answer in CREDENTIAL_ANSWERS:
        result = _rlgen(repo, "update", "--set", answer)
        assert result.returncode == 2, result.stderr
        outputs.append(result.stdout + result.stderr)
    shutil.rmtree(repo / "tmp")
    assert git(repo, "status", "--porcelain") == ""
    crash_files = [p.read_text() for p in (top / "tmp").glob("rlgen-crash-*")]
    (tmp_path / "outputs.txt").write_text("\n".join(outputs + crash_files))
    text = (tmp_path / "outputs.txt").read_text()
    assert TOKEN not in text and PASSWORD not in text

    names = set(yaml.safe_load((repo / "rlgen.yaml").read_text())["external"]["secrets"])
    in_repo = _findings(repo, names)
    outputs_folder = tmp_path / "outputs"
    outputs_folder.mkdir()
    shutil.move(tmp_path / "outputs.txt", outputs_folder / "outputs.txt")
    in_outputs = _findings(outputs_folder, names)
    record_property("hostile_scanner_findings", len(in_repo) + len(in_outputs))
    record_property("hostile_scanned", ["tree", "history", "outputs", "crash files"])
    assert in_repo == []
    assert in_outputs == []

    # The scanners do find these credentials once one is committed: the scan above could fail.
    planted = Path(shutil.copytree(repo, tmp_path / "planted", symlinks=True))
    (planted / "notes.md").write_text(f"clone https://deploy:{PASSWORD}@git.rl.test/p/r.git\ntoken {TOKEN}\n")
    commit_all(planted, "planted")
    (planted / "notes.md").unlink()
    commit_all(planted, "removed again: still in the history")
    found = _findings(planted, names)
    assert any(f.startswith("detect-secrets") for f in found), found
    assert any(f.startswith("trufflehog3") for f in found), found
