"""``rlgen validate``: render every root, check every object against its schema and the
semantic rules, print the findings grouped by file and object."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click

from rlgen.errors import ProblemsFound
from rlgen.output import output_option, resolve_output, status, to_json


def collect(repo: Path):
    """Every object the repository gives the cluster, with the root or file it comes from.

    Only the top roots are rendered (the overlays and ``runs/``, which contain ``base/`` and
    every ``runs/<run>``), so each object is checked once.
    """
    from rlgen.render import manifests
    from rlgen.tools.yamlio import read_manifests_all
    from rlgen.rules import Rendered

    sources = manifests.render({"repo": repo}, cache_repo=repo)["repo"]
    return [Rendered(source, d) for source, docs in sources.items() for d in read_manifests_all("\n---\n".join(docs))]


def in_scope(repo: Path, target: Path, objects) -> set[tuple[str, str]]:
    """(source, label) of the objects ``target`` contributes to the whole render: those of the
    roots and files below it, and those of a root above it that ``target`` renders alike
    (``runs/<run>`` inside ``runs``). Out of context a folder misses what others provide."""
    from rlgen.render.roots import render_all
    from rlgen.tools.yamlio import read_plain_all
    from rlgen.rules import Rendered

    rel = target.relative_to(repo).as_posix()
    inside = {(o.source, o.label) for o in objects if o.source == rel or o.source.startswith(rel + "/")}
    if target.is_file() or inside:
        return inside
    labels = {Rendered("", d).label for _, text in render_all(target) for d in read_plain_all(text)}
    return {(o.source, o.label) for o in objects if rel.startswith(o.source + "/") and o.label in labels}


@click.command("validate")
@click.argument("target", required=False, type=click.Path(path_type=Path, exists=True))
@click.option("--schema-location", "locations", multiple=True, metavar="TEMPLATE",
              help="kubeconform-style schema location (repeatable); default: $RLGEN_SCHEMA_DIR when set, "
                   "rlgen's own schemas, the repository's schemas/, then the remote catalogs (cached).")
@click.option("--offline", is_flag=True,
              help="Download nothing: a schema in no local folder (nor cached) is a problem.")
@output_option()
def command(target: Path | None, locations, offline: bool, output):
    """Validate every object the repository renders (from any folder of it), or with TARGET
    only the objects of that path, checked in the context of the whole render.

    Schemas are checked by kubeconform when it is on PATH, else by rlgen itself; both read
    the same locations, with the same strictness."""
    from rlgen.repo import answers
    from rlgen.repo.workspace import find_root, open_workspace
    from rlgen.repo import run_files
    from rlgen.validate.conflicts import conflict_findings

    root = find_root(target or Path.cwd())
    if conflicts := conflict_findings(root):
        # Files with markers do not load or render: report them alone.
        report(conflicts, 0, "none (not rendered)", [], resolve_output(output))
        raise ProblemsFound(f"{len(conflicts)} file(s) with merge conflict markers")
    # The kustomize builds start now and the hand-editable files are checked while they run:
    # the builds are most of the time, and a build of runs/ leaves the other cores idle.
    with ThreadPoolExecutor(max_workers=1) as background:
        rendering = background.submit(collect, root)
        from rlgen.rules import check, warnings
        from rlgen.validate.locations import default_locations
        from rlgen.validate.schema import SchemaValidator
        from rlgen.validate.schema_findings import schema_sources, start_schema_findings

        ws = open_workspace(target or Path.cwd())
        repo = ws.root
        runs = run_files.check_repository(repo, ws.spec, plain=True)
        external = answers.read(repo)["external_secrets"]
        with status(f"Rendering and validating {len(runs)} run(s) and the platform"):
            objects = rendering.result()
            scope = None if target is None or target.resolve() == repo else in_scope(repo, target.resolve(), objects)
            checked = [o for o in objects if scope is None or (o.source, o.label) in scope]
            located = [("--schema-location", loc) for loc in locations] or default_locations(repo, offline)
            cache = repo / ".rlgen-cache"
            validator = SchemaValidator([template for _, template in located], cache_dir=cache, offline=offline)
            # kubeconform checks the schemas while the rules run.
            pending = start_schema_findings(checked, validator, located, cache, offline)
            try:
                rule_findings = [f for f in check(objects, external) if scope is None or (f.source, f.obj) in scope]
                cautions = [w for w in warnings(objects) if scope is None or (w.source, w.obj) in scope]
            finally:  # its scratch folder is removed however the rules end
                engine, findings = pending()
            findings += rule_findings
            findings = _with_secret_findings(repo, objects, findings, scope)
    # On stderr: a warning is for the reader and never changes the exit code or the JSON problems.
    for w in cautions:
        click.echo(f"warning: {w.source}: {w.obj}: {w.message}", err=True)
    sources = schema_sources(checked, validator, located, repo)
    report(findings, len(checked), engine, sources, resolve_output(output), cautions)
    if findings:
        raise ProblemsFound(f"{len(findings)} problem(s) in {len({f.obj for f in findings})} object(s)")


def _with_secret_findings(repo: Path, objects, findings, scope) -> list:
    """The secrets rules (they read the repository's files too); a plaintext Secret found in a
    committed file is reported once, at that file, not again as a rendered object."""
    from rlgen.generate.secret_plan import plan
    from rlgen.rules.secrets import PLAINTEXT, secret_findings

    found = plan(repo)
    extra = secret_findings(repo, objects, found.secrets, found.encrypted)
    in_files = {f.obj for f in extra if f.message == PLAINTEXT}
    findings = [f for f in findings if not (f.message == PLAINTEXT and f.obj in in_files)]
    return findings + [f for f in extra if scope is None or f.message == PLAINTEXT or (f.source, f.obj) in scope]


def report(findings, checked: int, engine: str, sources: list[dict], fmt: str, cautions=()) -> None:
    if fmt == "json":
        click.echo(to_json({"checked": checked, "engine": engine, "schemas": sources,
                            "problems": [f.__dict__ for f in findings],
                            "warnings": [w.__dict__ for w in cautions]}))
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
