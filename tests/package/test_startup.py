"""``rlgen --help`` starts fast: it writes :data:`rlgen.cli.HELP` without importing click (whose
own imports took twice a bare interpreter's start), and that text is what click writes."""
from __future__ import annotations

import os
import subprocess
import sys

from click.testing import CliRunner


def test_help_text_is_what_click_writes():
    from rlgen.cli import HELP, cli

    rendered = CliRunner().invoke(cli, ["--help"], prog_name="rlgen", env={"COLUMNS": "80"}).output
    # A command's docstring changed: put its new first sentence in rlgen.cli.HELP.
    assert HELP == rendered, f"rlgen.cli.HELP is out of date; click writes:\n{rendered}"


def test_rlgen_help_imports_no_click_and_writes_the_same_bytes():
    for flag in ("--help", "-h"):
        fast = subprocess.run([sys.executable, "-m", "rlgen", flag], capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": ""})
        assert fast.returncode == 0 and fast.stderr == "", fast.stderr
        from rlgen.cli import HELP

        assert fast.stdout == HELP
    probe = subprocess.run([sys.executable, "-c", "import sys, runpy; sys.argv = ['rlgen', '--help']\n"
                            "try:\n  runpy.run_module('rlgen', run_name='__main__')\n"
                            "except SystemExit as e:\n  assert e.code == 0\n"
                            "print(any(m == 'click' or m.startswith('click.') for m in sys.modules), file=sys.stderr)"],
                           capture_output=True, text=True)
    assert probe.stderr.strip() == "False", probe.stderr


def test_a_narrow_terminal_gets_clicks_own_wrapping():
    narrow = subprocess.run([sys.executable, "-m", "rlgen", "--help"], capture_output=True, text=True,
                            env={**os.environ, "COLUMNS": "60"})
    from rlgen.cli import HELP

    assert narrow.returncode == 0 and narrow.stdout != HELP
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 58
