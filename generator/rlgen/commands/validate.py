"""``rlgen validate``: render every object, check each against its schema and the rules."""
from __future__ import annotations

from pathlib import Path

import click

from rlgen.errors import ProblemsFound
from rlgen.output import output_option, resolve_output


@click.command("validate")
@click.argument("target", required=False, type=click.Path(path_type=Path, exists=True))
@click.option("--schema-location", "locations", multiple=True, metavar="TEMPLATE",
              help="kubeconform-style schema location (repeatable); default: $RLGEN_SCHEMA_DIR when set, "
                   "rlgen's own schemas, the repository's schemas/, then the remote catalogs (cached).")
@click.option("--offline", is_flag=True,
              help="Download nothing: a schema in no local folder (nor cached) is a problem.")
@click.option("-v", "--verbose", is_flag=True, help="Also list the schema each kind was checked against (table output).")
@output_option()
def command(target: Path | None, locations, offline: bool, verbose: bool, output):
    """Render and validate every object.

    Every object the repository renders (from any folder of it), or with TARGET only the
    objects of that path, checked in the context of the whole render.

    Schemas are checked by kubeconform when it is on PATH, else by rlgen itself; both read
    the same locations, with the same strictness."""
    from rlgen.collector import paused

    with paused():
        from rlgen.validate import report
        from rlgen.validate.repository import validate

        result = validate(target, locations, offline)
        # On stderr: a warning is for the reader and never changes the exit code or the JSON problems.
        for line in report.warning_lines(result.cautions):
            click.echo(line, err=True)
        report.show(result, resolve_output(output), verbose)
    if result.findings:
        raise ProblemsFound(result.summary)
