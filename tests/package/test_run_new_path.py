"""A reader following ``rlgen run new`` through the code visits few of rlgen's modules: the
command's library and the run package (``rlgen/run/``), not a trip back and forth between the
generator, the repository floor and the run's files.

Measured in process: every rlgen function called while ``rlgen run new`` runs in a generated
repository (import-time code left out). Not counted are the command's own module, and the floors
everything stands on: those below the repository floor (rlgen's tools, verl's tables, the plugin
host that rebuilds the Spec, names, errors, output) and the repository's shared facts (where
things are, ``rlgen.yaml``, opening the workspace)."""
from __future__ import annotations

import importlib.util
import shutil
import sys
import threading
from pathlib import Path

from support.repos import git

MOST = 6
#: The repository floor's facts every command shares.
SHARED = {"rlgen.repo.layout", "rlgen.repo.answers", "rlgen.repo.workspace"}


def _floors() -> tuple:
    path = Path(__file__).with_name("test_import_floors.py")
    spec = importlib.util.spec_from_file_location("_floors_of_rlgen", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FLOORS


def _counted(module: str) -> bool:
    floors = _floors()
    repo_floor = next(i for i, floor in enumerate(floors) if "repo" in floor)
    commands = next(i for i, floor in enumerate(floors) if "commands" in floor)
    package = module.split(".")[1] if "." in module else "__init__"
    floor = next(i for i, names in enumerate(floors) if package in names)
    return repo_floor <= floor < commands and module not in SHARED


def _entered(argv: list[str]) -> set[str]:
    """The rlgen modules whose functions run while ``rlgen ARGV`` runs in this process."""
    from rlgen import cli

    entered: set[str] = set()
    importing = [0]

    def imported(frame, event, arg):
        if event == "return":
            importing[0] -= 1

    def trace(frame, event, arg):
        if frame.f_code.co_name == "<module>":  # an import: its module's own code, and all it calls
            importing[0] += 1
            frame.f_trace_lines = False
            return imported
        if not importing[0]:
            entered.add(frame.f_globals.get("__name__", ""))
        return None

    threading.settrace(trace)
    sys.settrace(trace)
    try:
        cli.main(argv)
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return {m for m in entered if m.startswith("rlgen.")}


def test_run_new_enters_at_most_six_of_rlgens_modules(generate, tmp_path, monkeypatch, capsys):
    repo = shutil.copytree(generate(), tmp_path / "repo", symlinks=True)
    monkeypatch.chdir(repo)
    entered = _entered(["run", "new", "traced", "--set", "trainer.total_epochs=2"])
    assert "traced" in capsys.readouterr().out
    assert git(repo, "branch", "--show-current").strip() == "run/traced"
    # The measure sees the whole path: the run's files are read, written and named.
    assert {"rlgen.runs.edits", "rlgen.repo.workspace", "rlgen.run.files", "rlgen.run.naming"} <= entered
    counted = sorted(m for m in entered if _counted(m))
    assert len(counted) <= MOST, f"rlgen run new enters {len(counted)} modules: {', '.join(counted)}"
