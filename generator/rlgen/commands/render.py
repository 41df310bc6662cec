"""``rlgen render``: kustomize build of one root, or of every root of a repository."""
from __future__ import annotations

from pathlib import Path

import click

from rlgen.errors import RlgenError
from rlgen.output import out_folder_error, output_option, to_json


@click.command("render")
@click.argument("target", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.option("--out", type=click.Path(path_type=Path), help="Write one file per root here instead of stdout.")
@output_option("yaml", default="yaml")
def command(target: Path, out, output: str):
    """Render kustomization roots with kustomize.

    TARGET is one root, or a repository, whose every root is rendered. For a whole repository the sync engine's entry points (clusters/<cluster>/*.yaml, applied
    as they are) come too: with the roots, they are everything the cluster gets.
    -o yaml: the manifests, each source under a "# Source:" line; -o table: one row per
    object; -o json: {"sources": [{"source", "file", "objects"}]}."""
    if out and out.exists() and not out.is_dir():
        raise RlgenError(f"--out {out}: is a file, not a folder")
    if out and (problem := out_folder_error(out)):
        raise RlgenError(f"--out {out}: {problem}")
    from rlgen.render import sources as render

    found = []
    for source, text in render.rendered(target):
        dest = None
        if out:
            dest = render.out_file(out, source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        if output == "yaml":
            if not out:
                click.echo(f"# Source: {source.as_posix()}\n---\n{text}", nl=False)
            continue
        found.append({"source": source.as_posix(), "file": str(dest) if dest else None,
                      "objects": render.objects(source, text)})
    if output == "json":
        click.echo(to_json({"sources": found}))
    elif output == "table":
        for line in render.table_lines(found):
            click.echo(line)
