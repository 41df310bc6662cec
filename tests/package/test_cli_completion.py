"""rlgen completion SHELL prints a script that completes commands through click, as a shell
calls it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.repos import run_rlgen


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_script_of_the_shell(shell):
    result = run_rlgen("completion", shell)
    assert result.returncode == 0, result.stderr
    assert "_RLGEN_COMPLETE" in result.stdout


def test_the_script_completes_commands_and_their_options():
    env = {**os.environ, "_RLGEN_COMPLETE": "bash_complete", "COMP_WORDS": "rlgen ru", "COMP_CWORD": "1"}
    out = subprocess.run([sys.executable, "-m", "rlgen"], env=env, capture_output=True, text=True).stdout
    assert out.split() == ["plain,run"]
    env.update(COMP_WORDS="rlgen run rm --dr", COMP_CWORD="3")
    out = subprocess.run([sys.executable, "-m", "rlgen"], env=env, capture_output=True, text=True).stdout
    assert out.split() == ["plain,--dry-run"]


def test_completion_is_listed_in_help():
    assert "completion" in run_rlgen("--help").stdout
