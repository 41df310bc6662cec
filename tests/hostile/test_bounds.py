"""Every wait and count bounded, each bound said in --help: a kustomization whose aliases
expand past rlgen's bound is refused in one line naming it (kustomize and rlgen's own walk
of its paths would visit every expansion), and rlgen e2e refuses a pool or a --timeout
beyond its bounds, or a --timeout of nothing, before it starts anything."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.hostile import record, repository_state
from support.repos import commit_all

#: Ten to the ninth nodes once expanded, in nine short lines.
ALIAS_BOMB = "".join(["a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"]
                     + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)])
KUSTOMIZATION = "runs/baseline/kustomization.yaml"


def _rlgen(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    tmp = cwd.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    # The bound is what ends the command; the timeout only keeps a regression from hanging the suite.
    return subprocess.run([sys.executable, "-m", "rlgen", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp)}, timeout=300)


@pytest.mark.parametrize("command", [("validate",), ("render",), ("render", "runs/baseline"), ("doctor",)])
def test_an_alias_bomb_in_a_kustomization_is_one_line_naming_it(command, generate, tmp_path, record_property):
    repo = Path(shutil.copytree(generate(), tmp_path / "case" / "repo", symlinks=True))
    path = repo / KUSTOMIZATION
    path.write_text(path.read_text() + ALIAS_BOMB)
    commit_all(repo, "alias bomb")
    before = repository_state(repo)
    result = _rlgen(repo, *command)
    record(record_property, expected=2, result=result, changed=repository_state(repo) != before)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert lines and "aliases expand to more than" in lines[-1] and KUSTOMIZATION in lines[-1], result.stderr
    assert repository_state(repo) == before


@pytest.mark.parametrize("args,says", [
    (("--gpu-nodes", "65"), "--gpu-nodes"),
    (("--gpu-nodes", "100000"), "--gpu-nodes"),
    (("--timeout", "0s"), "--timeout"),
    (("--timeout", "0"), "--timeout"),
    (("--timeout", "7h"), "--timeout"),
])
def test_e2e_refuses_counts_and_waits_beyond_its_bounds(args, says, generate, tmp_path, record_property):
    repo = Path(shutil.copytree(generate(), tmp_path / "case" / "repo", symlinks=True))
    result = _rlgen(repo, "e2e", *args)
    record(record_property, expected=2, result=result)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr
    assert not list((tmp_path / "case" / "tmp").iterdir()), "nothing started, nothing left"


def test_each_bound_is_named_in_help(tmp_path):
    e2e = " ".join(_rlgen(tmp_path, "e2e", "--help").stdout.split())
    assert "at most 64" in e2e and "at most 6h" in e2e and "default: 10m" in e2e
    upload = " ".join(_rlgen(tmp_path, "data", "upload", "--help").stdout.split())
    assert "--deadline" in upload and "default: 2700" in upload
