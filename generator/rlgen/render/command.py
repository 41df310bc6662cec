"""``rlgen render``: kustomize build of one root, or of every root of a repository."""
from __future__ import annotations

from pathlib import Path

import click

from rlgen.output import output_option


@click.command("render")
@click.argument("target", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.option("--out", type=click.Path(path_type=Path), help="Write one file per root here instead of stdout.")
@output_option("yaml", default="yaml")
def command(target: Path, out, output: str):
    """Render TARGET (a kustomization root, or every root of a repository) with kustomize.

    For a whole repository the sync engine's entry points (clusters/<cluster>/*.yaml, applied
    as they are) come too: with the roots, they are everything the cluster gets.
    -o yaml: the manifests, each source under a "# Source:" line; -o table: one row per
    object; -o json: {"sources": [{"source", "file", "objects"}]}."""
    from rlgen.errors import RlgenError
    from rlgen.render.roots import render_all

    if out and out.exists() and not out.is_dir():
        raise RlgenError(f"--out {out}: is a file, not a folder")

    sources = []
    for root, text in [*render_all(target), *_entry_points(target)]:
        dest = None
        if out:
            dest = out / f"{'__'.join(root.parts) or 'root'}.yaml"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        if output == "yaml":
            if not out:
                click.echo(f"# Source: {root.as_posix()}\n---\n{text}", nl=False)
            continue
        sources.append({"source": root.as_posix(), "file": str(dest) if dest else None, "objects": _objects(root, text)})
    if output == "json":
        from rlgen.output import to_json

        click.echo(to_json({"sources": sources}))
    elif output == "table":
        _table(sources)


def _objects(root: Path, text: str) -> list:
    from rlgen.errors import RlgenError
    from rlgen.tools import yamlio

    try:
        return yamlio.read_manifests_all(text)
    except ValueError as exc:
        raise RlgenError(f"{root.as_posix()}: not YAML ({exc})") from None


def _table(sources: list[dict]) -> None:
    header = ("SOURCE", "KIND", "NAMESPACE", "NAME", "FILE")
    rows = [(s["source"], str(o.get("kind", "")), str((o.get("metadata") or {}).get("namespace", "-")),
             str((o.get("metadata") or {}).get("name", "")), s["file"] or "-")
            for s in sources for o in s["objects"] if isinstance(o, dict)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        click.echo("  ".join(f"{cell:<{widths[i]}}" for i, cell in enumerate(row[:4])) + f"  {row[4]}")


def _entry_points(target: Path) -> list[tuple[Path, str]]:
    """The plain manifest files of a repository (its rlgen.yaml's folder), as committed."""
    from rlgen.render.manifests import committable, plain_files

    if not (target / "rlgen.yaml").is_file():
        return []
    return [(path.relative_to(target).with_suffix(""), path.read_text())
            for path in plain_files(committable(target))]
