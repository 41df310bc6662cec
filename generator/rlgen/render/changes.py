"""Render only what differs between two checkouts: a root whose inputs (see
:mod:`rlgen.render.inputs`) two revisions share renders the same in both, so it is not built.

``runs/`` only lists the runs, so each run is a root of its own here: a change to one run
builds that run at both revisions, not every run. When many runs changed (an edit of the
training base changes them all), one build of ``runs/`` per side is cheaper.
"""
from __future__ import annotations

from pathlib import Path

from rlgen.render.cache import RenderCache
from rlgen.render.manifests import (
    SPLIT_LIMIT,
    Unit,
    plain_documents,
    build,
    children,
    committable,
    kustomizations,
    split,
    top_roots,
)

Plan = dict[str, dict[str, Unit]]  # source -> unit path -> unit


def _plan(label: str, tree: Path) -> tuple[Plan, set[Path]]:
    files = committable(tree)
    roots = kustomizations(files)
    plan: Plan = {}
    for top in top_roots(tree, files):
        source = top.relative_to(tree).as_posix() or "."
        parts = children(top, roots) or [top]
        plan[source] = {u.path: u for u in (Unit(label, tree, source, root) for root in parts)}
    return plan, files


def _key(unit: Unit | None) -> str | None:
    return unit.key if unit else None


def _needed(source: str, old: dict[str, Unit], new: dict[str, Unit], sides: list[tuple[str, Path]]) -> list[Unit]:
    changed = [p for p in sorted(set(old) | set(new)) if _key(old.get(p)) != _key(new.get(p))]
    if len(changed) <= SPLIT_LIMIT:
        return [units[p] for units in (old, new) for p in changed if p in units]
    whole = []
    for (label, tree), units in zip(sides, (old, new)):
        if units:
            whole.append(Unit(label, tree, source, tree / source))
    return whole


def render_changes(sides: list[tuple[str, Path]], cache_repo: Path | None = None) -> dict[str, dict[str, list[str]]]:
    """Like :func:`rlgen.render.manifests.render` for a base and a head checkout, but without
    the documents of roots that render alike in both (a comparison finds nothing there)."""
    (base_plan, base_files), (head_plan, head_files) = (_plan(label, tree) for label, tree in sides)
    needed = [unit for source in sorted(set(base_plan) | set(head_plan))
              for unit in _needed(source, base_plan.get(source, {}), head_plan.get(source, {}), sides)]
    out: dict[str, dict[str, list[str]]] = {label: {} for label, _ in sides}
    for unit, text in zip(needed, build(needed, RenderCache(cache_repo))):
        out[unit.label].setdefault(unit.source, []).extend(split(text))
    for (label, tree), files in zip(sides, (base_files, head_files)):
        out[label].update(plain_documents(tree, files))
    return out
