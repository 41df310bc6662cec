"""``rlgen render``: kustomize build of one root, or of every root of a repository."""
from __future__ import annotations

from pathlib import Path

import click


@click.command("render")
@click.argument("target", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.option("--out", type=click.Path(path_type=Path), help="Write one file per root here instead of stdout.")
def command(target: Path, out):
    """Render TARGET (a kustomization root, or every root of a repository) with kustomize."""
    from rlgen.errors import RlgenError
    from rlgen.render.roots import render_all

    if out and out.exists() and not out.is_dir():
        raise RlgenError(f"--out {out}: is a file, not a folder")
    for root, text in render_all(target):
        if out:
            dest = out / f"{'__'.join(root.parts) or 'root'}.yaml"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        else:
            click.echo(f"# Source: {root.as_posix()}\n---\n{text}", nl=False)
