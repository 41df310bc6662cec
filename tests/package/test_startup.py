"""``rlgen --help`` starts fast: the first run renders it through click and keeps the text in
the user's cache (``$XDG_CACHE_HOME/rlgen/help``); the next ones write that text without
importing click (whose own imports took twice a bare interpreter's start) while rlgen's
version, its command modules, click and the terminal's width are unchanged."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "generator" / "rlgen"


def _help(cache: Path, *flag: str, columns: str = "80", **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "rlgen", *(flag or ("--help",))], capture_output=True, text=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache), "COLUMNS": columns, **env})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done


def _click_writes(columns: str = "80") -> str:
    """What click itself writes for ``rlgen --help`` on a terminal of that width, in a process of its own."""
    done = subprocess.run([sys.executable, "-c", "from rlgen.cli import group\n"
                           "group().main(['--help'], prog_name='rlgen')"],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": columns})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def test_help_is_what_click_writes_cold_and_warm_and_warm_imports_no_click(tmp_path):
    cold = _help(tmp_path).stdout
    assert cold == _click_writes()
    assert (tmp_path / "rlgen" / "help").read_text().endswith(cold)
    for flag in ("--help", "-h"):
        assert _help(tmp_path, flag).stdout == cold
    probe = subprocess.run([sys.executable, "-c", "import sys, runpy; sys.argv = ['rlgen', '--help']\n"
                            "try:\n  runpy.run_module('rlgen', run_name='__main__')\n"
                            "except SystemExit as e:\n  assert e.code == 0\n"
                            "print(any(m == 'click' or m.startswith('click.') for m in sys.modules), file=sys.stderr)"],
                           capture_output=True, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path),
                                                                "COLUMNS": "80"})
    assert probe.stderr.strip() == "False", probe.stderr
    assert probe.stdout == cold


def test_an_edited_command_docstring_shows_on_the_next_help(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "rlgen", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    before = _help(cache, PYTHONPATH=str(copy)).stdout
    assert "Render kustomization roots with kustomize." in before
    module = copy / "rlgen" / "commands" / "render.py"
    module.write_text(module.read_text().replace("Render kustomization roots with kustomize.",
                                                 "Render the kustomization roots, edited."))
    after = _help(cache, PYTHONPATH=str(copy)).stdout
    assert "render      Render the kustomization roots, edited." in after
    assert "with kustomize." not in after


def test_each_terminal_width_gets_clicks_own_wrapping(tmp_path):
    wide = _help(tmp_path).stdout
    narrow = _help(tmp_path, columns="60").stdout
    assert narrow == _click_writes("60") != wide
    assert max(len(line) for line in narrow.splitlines()) <= 58
    assert _help(tmp_path).stdout == wide


def test_a_cache_that_cannot_be_written_or_read_still_prints_the_help(tmp_path):
    expected = _click_writes()
    # A file where the cache folder goes: nothing can be written there, even as root (whom chmod does not stop).
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    assert _help(blocked).stdout == expected
    assert blocked.read_text() == ""
    corrupt = tmp_path / "corrupt"
    (corrupt / "rlgen").mkdir(parents=True)
    (corrupt / "rlgen" / "help").write_bytes(b"\xff\xfe not a key\n\x00garbage")
    assert _help(corrupt).stdout == expected
    # Rewritten whole, read back the next time.
    assert (corrupt / "rlgen" / "help").read_text().endswith(expected)
    assert _help(corrupt).stdout == expected
    assert [p.name for p in (corrupt / "rlgen").iterdir()] == ["help"]
