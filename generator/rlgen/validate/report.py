"""How ``rlgen validate`` shows its findings: JSON with every field, or a table with the
verdict first; warnings one line each."""
from __future__ import annotations

import click

from rlgen.output import console, to_json


def show(result, fmt: str, verbose: bool = False) -> None:
    """``result`` (a :class:`rlgen.validate.repository.Validation`). JSON: every field. Table:
    the verdict first, then one line per problem (file, object, message, fix), the schema each
    kind was checked against only with ``verbose``."""
    findings, checked, engine, sources = result.findings, result.checked, result.engine, result.sources
    if fmt == "json":
        click.echo(to_json({"checked": checked, "engine": engine, "schemas": sources,
                            "problems": [f.__dict__ for f in findings],
                            "warnings": [w.__dict__ for w in result.cautions]}))
        return
    objects = len({(f.source, f.obj) for f in findings})
    if findings:
        click.echo(f"FAILED: {len(findings)} problem(s) in {objects} of {checked} objects (schemas: {engine})")
    else:
        click.echo(f"OK: {checked} objects valid (schemas: {engine})")
    for f in sorted(findings, key=lambda f: (f.source, f.obj, f.message)):
        fix = f" -> fix: {f.fix}" if f.fix else ""
        click.echo(f"{f.source}: {f.obj}: {f.message}{fix}")
    if verbose:
        # Lazy: rich's table is 61 ms (median of 7), for --verbose only.
        from rich.table import Table

        kinds = Table(title=f"schemas ({engine})")
        for column in ("kind", "apiVersion", "from", "location"):
            kinds.add_column(column, overflow="fold")
        for source in sources:
            kinds.add_row(source["kind"], source["apiVersion"], source["source"], source["location"])
        console(markup=False).print(kinds)


def warning_lines(cautions) -> list[str]:
    """One line per distinct warning, naming its first object and how many others share it."""
    by_message: dict[str, list] = {}
    for w in cautions:
        by_message.setdefault(w.message, []).append(w)
    lines = []
    for message, same in by_message.items():
        more = f" (and {len(same) - 1} more object(s))" if len(same) > 1 else ""
        lines.append(f"warning: {same[0].source}: {same[0].obj}{more}: {message}")
    return lines
