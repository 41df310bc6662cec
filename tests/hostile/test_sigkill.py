"""Hostile timing, the hard way: ``rlgen run new``, ``rlgen update`` and ``rlgen cluster add``
killed with SIGKILL (no handler, no cleanup) at moments spread over the whole command, then run
again. The rerun finds what the killed one left (its journal, the branch it made, its git's lock
files), undoes it or keeps its finished commit, and succeeds; the repository is consistent
after it: git fsck passes, the tree is clean, no lock, journal or scratch ref is left, and the
change is there once."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.hostile import leftovers, record
from support.repos import git, link

TRIALS = {"run-new": 10, "update": 6, "cluster-add": 6}
COMMANDS = {
    "run-new": ("run", "new", "second"),
    "update": ("update", "--set", "ak-storage.bucket=other-bucket"),
    "cluster-add": ("cluster", "add", "second", "--env", "staging"),
}


def _done(repo: Path, name: str) -> bool:
    """The change is on the branch HEAD is on, once."""
    if name == "run-new":
        return git(repo, "branch", "--show-current").strip() == "run/second" and \
            (repo / "runs" / "second" / "run.yaml").is_file() and \
            (repo / link("second")).is_file()
    if name == "update":
        return "bucket: other-bucket" in (repo / "rlgen.yaml").read_text()
    return (repo / "clusters" / "second").is_dir() and "second: staging" in (repo / "rlgen.yaml").read_text()


def _run(repo: Path, args: tuple[str, ...]):
    return subprocess.Popen([sys.executable, "-m", "rlgen", *args], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def seconds(generate, tmp_path_factory) -> dict[str, float]:
    """How long each command takes here, undisturbed: the kills are spread over it."""
    took = {}
    for name, args in COMMANDS.items():
        repo = shutil.copytree(generate(), tmp_path_factory.mktemp("timing") / "repo", symlinks=True)
        started = time.monotonic()
        proc = _run(repo, args)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        took[name] = time.monotonic() - started
    return took


CASES = [(name, i) for name, n in TRIALS.items() for i in range(n)]


@pytest.mark.parametrize(("name", "trial"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_killed_then_rerun(name, trial, seconds, generate, tmp_path, record_property):
    repo = Path(shutil.copytree(generate(), tmp_path / "repo", symlinks=True))
    proc = _run(repo, COMMANDS[name])
    started = time.monotonic()
    if trial % 2 == 0:
        # Spread from just after start-up to the end of the command (the last may find it done).
        time.sleep(seconds[name] * (0.3 + 0.8 * (trial + 0.5) / TRIALS[name]))
    else:
        # Inside the change itself: once its journal exists, after 0, 0.05, 0.1, ... s.
        journal = repo / ".git" / "rlgen-change.json"
        while not journal.exists() and proc.poll() is None and time.monotonic() - started < 120:
            time.sleep(0.005)
        time.sleep(0.05 * (2 ** (trial // 2) - 1))
    delay = time.monotonic() - started
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    time.sleep(0.2)  # its git children die with it (PR_SET_PDEATHSIG); give the kernel a moment
    rerun = subprocess.run([sys.executable, "-m", "rlgen", *COMMANDS[name]], cwd=repo, capture_output=True, text=True,
                           timeout=300)
    fsck = subprocess.run(["git", "fsck", "--no-dangling", "--no-progress"], cwd=repo, capture_output=True, text=True)
    left = leftovers(repo)
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    consistent = fsck.returncode == 0 and not left and status == "" and _done(repo, name)
    # A rerun after a kill that came once the commit was made finds its own work done: run
    # new's branch or cluster add's cluster exists (one line, exit 2), update is up to date.
    finished_before = rerun.returncode == 2 and any(
        said in rerun.stderr for said in ("branch run/second already exists", "cluster 'second' already exists"))
    record(record_property, expected=2 if finished_before else 0, result=rerun, changed=not consistent,
           leftovers=left)
    record_property("hostile_kill", "already done" if finished_before or "Up to date" in rerun.stdout else
                    "undone, rerun made it" if "put the repository back" in rerun.stdout else
                    "kept, rerun made it" if "kept its commit" in rerun.stdout else "nothing to undo, rerun made it")
    assert rerun.returncode == 0 or finished_before, f"killed after {delay:.2f} s: {rerun.stderr}"
    if finished_before:
        assert len(rerun.stderr.strip().splitlines()) == 1, rerun.stderr
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert left == [] and status == "", (left, status)
    assert _done(repo, name), f"killed after {delay:.2f} s: {rerun.stdout}{rerun.stderr}"


def test_update_killed_inside_its_merge_commit_is_undone(generate, tmp_path):
    """Killed while its git commit runs (MERGE_HEAD written, no commit yet): a pre-commit hook
    kills rlgen itself, by the pid its journal names. The rerun puts the merge state away first
    (git switch refuses to leave a merge in progress) and makes the update."""
    repo = Path(shutil.copytree(generate(), tmp_path / "repo", symlinks=True))
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\n"
                    "pid=$(sed 's/.*\"pid\": *\\([0-9]*\\).*/\\1/' .git/rlgen-change.json)\n"
                    "kill -9 \"$pid\"\nsleep 5\nexit 1\n")
    hook.chmod(0o755)
    killed = subprocess.run([sys.executable, "-m", "rlgen", *COMMANDS["update"]], cwd=repo, capture_output=True,
                            text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (repo / ".git" / "MERGE_HEAD").is_file()
    hook.unlink()
    time.sleep(0.2)
    rerun = subprocess.run([sys.executable, "-m", "rlgen", *COMMANDS["update"]], cwd=repo, capture_output=True,
                           text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert "put the repository back" in rerun.stdout
    assert _done(repo, "update") and leftovers(repo) == []
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
