"""What ``rlgen render`` gives: every root's render and, for a whole repository, the sync
engine's entry points, each written to a file of its own when asked, and the objects as rows."""
from __future__ import annotations

from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.render.manifests import committable, plain_files
from rlgen.render.roots import render_all
from rlgen.tools import yamlio


def rendered(target: Path) -> list[tuple[Path, str]]:
    """``[(source, YAML)]``: the roots of ``target``, then its entry points (applied as they are)."""
    return [*render_all(target), *_entry_points(target)]


def out_file(out: Path, source: Path) -> Path:
    """Where ``--out`` keeps a source's render: one flat file per source."""
    return out / f"{'__'.join(source.parts) or 'root'}.yaml"


def objects(source: Path, text: str) -> list:
    try:
        return yamlio.read_manifests_all(text)
    except ValueError as exc:
        raise RlgenError(f"{source.as_posix()}: not YAML ({exc})") from None


def table_lines(sources: list[dict]) -> list[str]:
    """One line per object, columns aligned but the last (a file path, as long as it is)."""
    header = ("SOURCE", "KIND", "NAMESPACE", "NAME", "FILE")
    rows = [(s["source"], str(o.get("kind", "")), str((o.get("metadata") or {}).get("namespace", "-")),
             str((o.get("metadata") or {}).get("name", "")), s["file"] or "-")
            for s in sources for o in s["objects"] if isinstance(o, dict)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    return ["  ".join(f"{cell:<{widths[i]}}" for i, cell in enumerate(row[:4])) + f"  {row[4]}"
            for row in [header, *rows]]


def _entry_points(target: Path) -> list[tuple[Path, str]]:
    """The plain manifest files of a repository (its rlgen.yaml's folder), as committed."""
    if not (target / "rlgen.yaml").is_file():
        return []
    return [(path.relative_to(target).with_suffix(""), path.read_text())
            for path in plain_files(committable(target))]
