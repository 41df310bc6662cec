"""Modules imported on a thread while a command waits for git (rlgen.collector)."""
from __future__ import annotations

import importlib
import sys

import pytest

from rlgen.collector import import_meanwhile


def test_a_module_imported_meanwhile_is_there_for_the_command(monkeypatch):
    monkeypatch.delitem(sys.modules, "rlgen.diff.report", raising=False)
    import_meanwhile("rlgen.diff.report").join()
    assert "rlgen.diff.report" in sys.modules


def test_a_failing_import_meanwhile_says_nothing_and_is_the_commands_own_to_report(capfd):
    import_meanwhile("rlgen.no_such_module", "rlgen.diff.report").join()
    assert capfd.readouterr() == ("", "")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rlgen.no_such_module")
