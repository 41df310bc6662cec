"""One output convention for every command that prints data or changes a repository:
``-o/--output`` with ``table`` (the default on a terminal) or ``json`` (the default otherwise,
so scripts and CI get data), and for ``diff`` also ``markdown``, for ``render`` also ``yaml``
(its default: the manifests). JSON is printed alone on stdout, one object or list, and keeps
non-ASCII text as it is; messages go to stderr."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

FORMATS = ("table", "json")


def output_option(*extra: str, default: str | None = None):
    """``-o/--output``; ``default`` replaces the terminal rule for a command whose own output is
    a format of its own (``render``: yaml)."""
    help_ = f"Output format (default: {default})." if default else \
        "Output format (default: table on a terminal, json otherwise)."
    return click.option("-o", "--output", type=click.Choice([*FORMATS, *extra]), default=default, help=help_)


def resolve_output(output: str | None) -> str:
    return output or ("table" if sys.stdout.isatty() else "json")


def to_json(data: Any) -> str:
    """JSON text of ``data``, with any URL user info, secret query parameter or token masked."""
    # Here, not at the top: every command module imports this one for -o, and json is 1.6 ms of
    # rlgen --help's 45 ms (python -X importtime), which prints no JSON.
    import json

    # Lazy too: rlgen.redaction is 4.6 ms of rlgen --help.
    from rlgen.redaction import redact

    return redact(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def console(**options):
    """A rich console that prints text as it is given: rich would otherwise turn a word between
    colons into an emoji (``acs:ram::`` of a RAM policy into a ram) in every string it renders,
    a table's cells included. ``options`` go to ``rich.console.Console``."""
    # Lazy: rich's console is 55 ms (median of 7); JSON output needs none.
    from rich.console import Console

    return Console(emoji=False, **options)


class status:
    """A spinner on stderr while a long step runs silently, on a terminal only (a log gets
    nothing): ``with status("Rendering"):``."""

    def __init__(self, text: str):
        self._status = None
        if sys.stderr.isatty():
            self._status = console(stderr=True).status(text)

    def __enter__(self):
        if self._status:
            self._status.start()
        return self

    def __exit__(self, *exc_info):
        if self._status:
            self._status.stop()


def ask_option(plugin: str, option) -> str:
    """A plugin option asked on the terminal (``rlgen new``, a plugin swap of ``rlgen update``),
    its default offered."""
    default = None if option.default is None else str(option.default)
    return click.prompt(f"{plugin}.{option.name} ({option.help})", default=default, type=str, err=True,
                        show_default=bool(default))


def out_folder_error(out: Path) -> str | None:
    """Why files cannot be written in the folder ``out`` (an --out) or in the folders it would be
    made in, said before anything is read or downloaded: a folder is made and removed in the
    nearest one that exists. Asking os.access is not enough: to root it says yes to /proc, /sys
    and a read-only mount, where the first write fails."""
    existing = next((p for p in [out, *out.absolute().parents] if os.path.lexists(p)), None)
    if existing is None or not existing.is_dir():
        return f"{existing or out} is not a folder"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".rlgen-probe-", dir=existing))
    except OSError as exc:
        return f"{existing} is not a folder rlgen can write in ({exc.strerror})"
    return None
