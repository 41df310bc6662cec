"""What ``rlgen render`` gives: a root's render, every root's below a folder, or for a whole
repository what its cluster gets; each written to a file of its own when asked, and the
objects as rows."""
from __future__ import annotations

from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.render.manifests import render
from rlgen.render.roots import render_all
from rlgen.run.files import read_index
from rlgen.tools import yamlio


def rendered(target: Path) -> list[tuple[Path, str]]:
    """``[(source, YAML)]``: the root ``target``, or every root below a folder; for a repository
    (the folder of its rlgen.yaml) what the cluster gets, each object once: its top roots (the
    overlays, whose runs indexes hold every run, and ``base/``) and then the sync engine's entry
    points, applied as they are."""
    if not (target / "rlgen.yaml").is_file():
        return render_all(target)
    # The hand-editable index first, by the loader every command shares: one line for a defect.
    read_index(target)
    found = render({"repo": target.resolve()})["repo"]
    roots = sorted(s for s in found if not s.endswith(_ENTRY_POINT_SUFFIXES))
    files = sorted(s for s in found if s.endswith(_ENTRY_POINT_SUFFIXES))
    return [(Path(s), _joined(found[s])) for s in roots] + \
        [(Path(s).with_suffix(""), _joined(found[s])) for s in files]


_ENTRY_POINT_SUFFIXES = (".yaml", ".yml")


def _joined(documents: list[str]) -> str:
    return "---\n".join(d if d.endswith("\n") else d + "\n" for d in documents)


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
