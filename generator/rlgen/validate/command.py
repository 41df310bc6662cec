"""``rlgen validate``: render every root, check every object against its schema and the
semantic rules, print the findings grouped by file and object."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from rlgen.errors import ProblemsFound

def collect(repo: Path, target: Path):
    """Every object ``target`` gives the cluster, with the root or file it comes from.

    For the whole repository only the top roots are rendered (the overlays and ``runs/``,
    which contain ``base/`` and every ``runs/<run>``), so each object is checked once.
    """
    from rlgen.render import manifests
    from rlgen.render.roots import render_all
    from rlgen.tools.yamlio import read_plain_all
    from rlgen.validate.rules import Rendered

    if target == repo:
        sources = manifests.render({"repo": repo}, cache_repo=repo)["repo"]
        return [Rendered(source, d) for source, docs in sources.items() for d in read_plain_all("\n---\n".join(docs))]
    return [Rendered((target.parent / root).relative_to(repo).as_posix(), d)
            for root, text in render_all(target) for d in read_plain_all(text)]


@click.command("validate")
@click.argument("target", required=False, type=click.Path(path_type=Path, exists=True), default=Path("."))
@click.option("--schema-location", "locations", multiple=True, metavar="TEMPLATE",
              help="kubeconform-style schema location (repeatable); default: $RLGEN_SCHEMA_DIR when set, "
                   "rlgen's own schemas, the repository's schemas/, then the remote catalogs (cached).")
@click.option("--offline", is_flag=True,
              help="Download nothing: a schema in no local folder (nor cached) is a problem.")
@click.option("--output", type=click.Choice(["table", "json"]), default=None,
              help="Output format (default: a table on a terminal, json otherwise).")
def command(target: Path, locations, offline: bool, output):
    """Render TARGET (default: the whole repository) and validate every object.

    Schemas are checked by kubeconform when it is on PATH, else by rlgen itself; both read
    the same locations, with the same strictness."""
    from rlgen.repo import answers
    from rlgen.repo.workspace import find_root
    from rlgen.validate.checking import schema_findings, schema_sources
    from rlgen.validate.locations import default_locations
    from rlgen.validate.rules import check, warnings
    from rlgen.validate.schema import SchemaValidator

    target = target.resolve()
    repo = find_root(target)
    external = answers.read(repo)["external_secrets"]
    objects = collect(repo, target)
    located = [("--schema-location", loc) for loc in locations] or default_locations(repo, offline)
    cache = repo / ".rlgen-cache"
    validator = SchemaValidator([template for _, template in located], cache_dir=cache, offline=offline)
    engine, findings = schema_findings(objects, validator, located, cache, offline)
    findings += check(objects, external)
    cautions = warnings(objects)
    # On stderr: a warning is for the reader and never changes the exit code or the JSON problems.
    for w in cautions:
        click.echo(f"warning: {w.source}: {w.obj}: {w.message}", err=True)
    sources = schema_sources(objects, validator, located, repo)
    report(findings, len(objects), engine, sources, output or ("table" if sys.stdout.isatty() else "json"), cautions)
    if findings:
        raise ProblemsFound(f"{len(findings)} problem(s) in {len({f.obj for f in findings})} object(s)")


def report(findings, checked: int, engine: str, sources: list[dict], fmt: str, cautions=()) -> None:
    if fmt == "json":
        click.echo(json.dumps({"checked": checked, "engine": engine, "schemas": sources,
                               "problems": [f.__dict__ for f in findings],
                               "warnings": [w.__dict__ for w in cautions]}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    kinds = Table(title=f"schemas ({engine})")
    for column in ("kind", "apiVersion", "from", "location"):
        kinds.add_column(column, overflow="fold")
    for source in sources:
        kinds.add_row(source["kind"], source["apiVersion"], source["source"], source["location"])
    console.print(kinds)
    if not findings:
        console.print(f"{checked} objects valid.")
        return
    table = Table(title=f"{len(findings)} problem(s) in {checked} objects")
    for column in ("file", "object", "problem"):
        table.add_column(column)
    last = (None, None)
    for f in sorted(findings, key=lambda f: (f.source, f.obj)):
        key = (f.source, f.obj)
        table.add_row(*(("", "") if key == last else key), f.message)
        last = key
    console.print(table)
