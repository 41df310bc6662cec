"""Repositories rendered before every environment had a runs index of its own kept the main
environment's in ``runs/kustomization.yaml``. ``rlgen update`` moves it to
``overlays/<env>/runs/kustomization.yaml`` on every side of its merge (the previous render and
the user's branch), its runs written as that index's entries and the rest of it (comments, any
field a user added) kept, so the merge carries the team's runs over and the render brings none."""
from __future__ import annotations

from rlgen.repo.layout import OLD_RUNS_INDEX as OLD_INDEX, runs_index as index_path
from rlgen.run.folder import index_text
from rlgen.tools import yamlio


def needed(files: dict[str, bytes]) -> bool:
    return OLD_INDEX in files


def apply(files: dict[str, bytes], env: str) -> dict[str, bytes | None]:
    """The changes that move the old index of ``files`` into ``env``'s (none when there is none)."""
    if OLD_INDEX not in files:
        return {}
    text = files[OLD_INDEX].decode()
    doc = yamlio.load(text)
    runs = [str(r) for r in (doc.get("resources") or [])] if isinstance(doc, dict) else []
    return {OLD_INDEX: None, index_path(env): index_text(runs, text).encode()}
