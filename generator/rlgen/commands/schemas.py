"""``rlgen schemas``: convert CRDs into the JSON schemas ``rlgen validate`` and kubeconform read."""
from __future__ import annotations

from pathlib import Path

import click


@click.group("schemas")
def command() -> None:
    """Convert CRDs into JSON schemas for validation."""


@command.command("import")
@click.argument("crds", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder receiving <group>/<kind>_<version>.json (e.g. a repository's schemas/).",
)
@click.option("--compact", is_flag=True, help="Write no indentation (the schemas rlgen ships are compact).")
def import_command(crds: tuple[Path, ...], out: Path, compact: bool) -> None:
    """Convert the CustomResourceDefinitions in CRDS (YAML files) into kubeconform JSON schemas."""
    from rlgen.schemas.convert import import_crds

    for path in import_crds(list(crds), out, compact=compact):
        click.echo(path)
