"""``rlgen render``: kustomize build of one root, or of every root of a repository."""
from __future__ import annotations

from pathlib import Path

import click


@click.command("render")
@click.argument("target", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.option("--out", type=click.Path(path_type=Path), help="Write one file per root here instead of stdout.")
def command(target: Path, out):
    """Render TARGET (a kustomization root, or every root of a repository) with kustomize.

    For a whole repository the sync engine's entry points (clusters/<cluster>/*.yaml, applied
    as they are) come too: with the roots, they are everything the cluster gets."""
    from rlgen.errors import RlgenError
    from rlgen.render.roots import render_all

    if out and out.exists() and not out.is_dir():
        raise RlgenError(f"--out {out}: is a file, not a folder")

    for root, text in [*render_all(target), *_entry_points(target)]:
        if out:
            dest = out / f"{'__'.join(root.parts) or 'root'}.yaml"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        else:
            click.echo(f"# Source: {root.as_posix()}\n---\n{text}", nl=False)


def _entry_points(target: Path) -> list[tuple[Path, str]]:
    """The plain manifest files of a repository (its rlgen.yaml's folder), as committed."""
    from rlgen.render.manifests import committable, plain_files

    if not (target / "rlgen.yaml").is_file():
        return []
    return [(path.relative_to(target).with_suffix(""), path.read_text())
            for path in plain_files(committable(target))]
