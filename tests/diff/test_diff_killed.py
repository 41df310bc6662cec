"""A killed ``rlgen diff`` leaves nothing git remembers, and the next one removes what it left
in the temporary folder: the base revision is read from git's object store, never checked out
as a registered worktree."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.repos import git, ok, rlgen_in

# Longer than any test waits: a diff that waited for this build to end would time out.
SLOW = ("#!/bin/sh\necho $$ > \"{started}.tmp\" && mv \"{started}.tmp\" \"{started}\"\n"
        "sleep 600\nexec \"{real}\" \"$@\"\n")


def a_run_changed(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "epochs")
    ok(rlgen_in(repo, "run", "set", "baseline", "trainer.total_epochs=3"))


def slow_kustomize(folder: Path) -> tuple[dict, Path]:
    """A kustomize that says it started, then waits: the diff is killed while it builds."""
    real = shutil.which("kustomize") or shutil.which("kubectl")
    bin_dir, started = folder / "slow-bin", folder / "started"
    bin_dir.mkdir()
    wrapper = bin_dir / Path(real).name
    wrapper.write_text(SLOW.format(started=started, real=real))
    wrapper.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, started


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def group_ends(pgid: int) -> bool:
    """Whether the group is gone within a few seconds (its killed processes are reaped by init
    once their parent, the diff, has exited)."""
    deadline = time.monotonic() + 5
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not group_alive(pgid)


def killed_while_building(repo: Path, tmp: Path, sig: int) -> tuple[subprocess.CompletedProcess, int]:
    """The diff's result, and the process group of the build it was killed in."""
    env, started = slow_kustomize(tmp.parent)
    proc = subprocess.Popen([sys.executable, "-m", "rlgen", "diff", "-o", "json"], cwd=repo, text=True,
                            env={**os.environ, **env, "TMPDIR": str(tmp)}, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        build = int(started.read_text())
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        # The waiting kustomize processes are this test's own: end them with their groups.
        for group in (proc.pid, *([build] if started.exists() else [])):
            if group_alive(group):
                os.killpg(group, signal.SIGKILL)
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), build


def leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("rlgen-diff-"))


def test_sigkill_registers_nothing_and_the_next_diff_cleans_up(repo, tmp_path):
    a_run_changed(repo)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    killed, _ = killed_while_building(repo, tmp, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert len(leftovers(tmp)) == 1  # nothing runs on SIGKILL: its folder stays, unregistered

    again = rlgen_in(repo, "diff", "-o", "table", env={**os.environ, "TMPDIR": str(tmp)})
    assert "~ baseline: RayJob" in ok(again)
    assert leftovers(tmp) == []
    assert git(repo, "status", "--porcelain") == ""


def test_sigterm_cleans_up_at_once(repo, tmp_path):
    a_run_changed(repo)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    killed, build = killed_while_building(repo, tmp, signal.SIGTERM)
    assert killed.returncode == 130, killed.stderr
    assert leftovers(tmp) == [] and len(git(repo, "worktree", "list").splitlines()) == 1
    assert group_ends(build), subprocess.run(["ps", "-o", "pid,stat,args", "-g", str(build)], capture_output=True,
                                             text=True).stdout


def test_a_worktree_an_earlier_release_left_is_removed(repo, tmp_path):
    """Earlier releases checked the base out with git worktree add: one killed left it registered."""
    a_run_changed(repo)
    tmp = tmp_path / "tmp"
    old = tmp / "rlgen-diff-old" / "base"
    old.parent.mkdir(parents=True)
    git(repo, "worktree", "add", "--detach", "--quiet", str(old), "HEAD")
    ok(rlgen_in(repo, "diff", "-o", "json", env={**os.environ, "TMPDIR": str(tmp)}))
    assert leftovers(tmp) == [] and len(git(repo, "worktree", "list").splitlines()) == 1
