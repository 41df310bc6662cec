"""Rows the cluster commands print: one per check or run, as a table or as JSON."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from typing import Callable

import click

from rlgen.kube.client import CannotCheck
from rlgen.output import console as rich_console

OK, PROBLEM, CANNOT = "ok", "problem", "cannot check"
#: A check that did not run, by design (what it needs is not given): no problem, said why.
SKIPPED = "skipped"
#: What to do when the API server forbids a read: the reader role ships in the repository.
GRANT = "grant the read-only role in rbac/rlgen-reader.yaml (see its comment)"


@dataclass(frozen=True)
class Row:
    check: str
    state: str
    detail: str
    fix: str = ""


def guarded(check: str, body: Callable[[], list[Row]]) -> list[Row]:
    """``body()``, or one "cannot check" row when RBAC forbids a read it needs."""
    try:
        return body()
    except CannotCheck as exc:
        return [Row(check, CANNOT, exc.message, GRANT)]


def emit(rows: list, columns: tuple[str, ...], fmt: str, header: dict | None = None) -> None:
    if fmt == "json":
        click.echo(json.dumps({**(header or {}), "rows": [asdict(r) for r in rows]}, indent=2))
        return
    # Lazy: rich's table is 31 ms (median of 7), for the table output only.
    from rich.table import Table

    # A table piped to a file keeps its long fix commands on one line. Its cells are the
    # cluster's and rlgen's text, never markup: a "[...]" in a message stays in it.
    console = rich_console(markup=False) if sys.stdout.isatty() else rich_console(markup=False, width=200)
    table = Table(title=", ".join(f"{k} {v}" for k, v in (header or {}).items()) or None)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(getattr(row, c.replace(" ", "_"))) for c in columns))
    console.print(table)
