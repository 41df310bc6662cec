"""``rlgen diff`` starts its builds before it checks the hand-edited files that changed: a
refusal is still one line, and leaves no build running and nothing written in the repository."""
from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from support.repos import git, ok, one_error_line, rlgen_in

# Says its pid, then stands for a build that takes long (exec: the pid is the build's own).
WAITING = "#!/bin/sh\necho $$ >> \"{pids}\"\nexec sleep 60\n"


def a_broken_run_changed(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "epochs")
    ok(rlgen_in(repo, "run", "set", "baseline", "trainer.total_epochs=3"))
    run_yaml = repo / "runs" / "baseline" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("total_epochs: 3", "total_epochs: three"))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead, only not yet reaped by its parent.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_a_refusal_stops_the_builds_it_started(repo, tmp_path):
    a_broken_run_changed(repo)
    real = shutil.which("kustomize") or shutil.which("kubectl")
    bin_dir, pids = tmp_path / "waiting-bin", tmp_path / "pids"
    bin_dir.mkdir()
    wrapper = bin_dir / Path(real).name
    wrapper.write_text(WAITING.format(pids=pids))
    wrapper.chmod(0o755)

    start = time.monotonic()
    try:
        line = one_error_line(rlgen_in(repo, "diff", "-o", "table",
                                       env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}))
        assert "runs/baseline/run.yaml" in line and "trainer.total_epochs" in line, line
        assert time.monotonic() - start < 30  # not after the builds' 60 s
        # The check may also refuse before a build got to start: then none was.
        assert not [pid for pid in started(pids) if alive(pid)]
    finally:
        for pid in started(pids):  # this test's own processes, should one be left
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def started(pids: Path) -> list[int]:
    return [int(p) for p in pids.read_text().split()] if pids.exists() else []


def test_a_refusal_writes_no_render_to_the_cache(repo):
    a_broken_run_changed(repo)
    assert "runs/baseline/run.yaml" in one_error_line(rlgen_in(repo, "diff", "-o", "table"))
    assert not (repo / ".rlgen-cache").exists()
    assert git(repo, "status", "--porcelain") == " M runs/baseline/run.yaml\n"


def test_answers_diff_cannot_take_are_refused_as_every_command_refuses_them(repo):
    """diff reads rlgen.yaml by the fast reader, the other commands by the round-trip one:
    the same files are refused, in the same line naming the place."""
    answers = repo / "rlgen.yaml"
    text = answers.read_text()
    for value in ("2024-01-01", "!Ref x", "!!binary aGk=", "&a [*a]"):
        answers.write_text(text.replace("\n  rlgen:\n", f"\n  rlgen:\n    note: {value}\n", 1))
        line = one_error_line(rlgen_in(repo, "diff", "-o", "table"))
        assert line == one_error_line(rlgen_in(repo, "run", "list")), value
        # The place: the line and column of the value, or of an alias inside what it names.
        note = text.splitlines().index("  rlgen:") + 2
        column = 15 if value.startswith("&") else 11
        assert "rlgen.yaml" in line and f"line {note}, column {column}" in line, line
    answers.write_text(text + "plugins: {}\n")
    line = one_error_line(rlgen_in(repo, "diff", "-o", "table"))
    assert line == one_error_line(rlgen_in(repo, "run", "list")) and "duplicate" in line, line
