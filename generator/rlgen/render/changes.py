"""Render only what differs between two checkouts: a root none of whose inputs (see
:mod:`rlgen.render.inputs`) changed between the two revisions renders the same in both, so it
is not built. git says which files changed; each root's inputs are worked out from the
kustomizations alone, so a root is never hashed nor read when nothing it reads changed.

``runs/`` only lists the runs, so each run is a root of its own here: a change to one run
builds that run at both revisions, not every run. When many runs changed (an edit of the
training base changes them all), one build of ``runs/`` per side is cheaper.
"""
from __future__ import annotations

from rlgen.render import inputs
from rlgen.render.cache import RenderCache
from rlgen.render.checkouts import Checkout, changed
from rlgen.render.manifests import (
    SPLIT_LIMIT,
    Unit,
    build,
    children,
    kustomizations,
    plain_documents,
    split,
    top_roots,
)

Plan = dict[str, dict[str, Unit]]  # source -> unit root -> unit


def _plan(co: Checkout) -> Plan:
    roots = kustomizations(co)
    reads = inputs.Reads(co)
    return {top: {root: Unit(co, top, root, reads) for root in children(top, roots) or [top]}
            for top in top_roots(co, roots)}


def _needed(source: str, old: dict[str, Unit], new: dict[str, Unit], differ: set[str],
            sides: tuple[Checkout, Checkout]) -> list[Unit]:
    def touched(root: str) -> bool:
        units = [u for u in (old.get(root), new.get(root)) if u is not None]
        return len(units) < 2 or any(not u.files.isdisjoint(differ) for u in units)

    roots = [r for r in sorted(set(old) | set(new)) if touched(r)]
    if len(roots) <= SPLIT_LIMIT:
        return [units[r] for units in (old, new) for r in roots if r in units]
    whole = []
    for co, units in zip(sides, (old, new)):
        if units:
            whole.append(Unit(co, source, source, next(iter(units.values())).reads))
    return whole


def render_changes(base: Checkout, head: Checkout, cache_repo=None,
                   differ: set[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """Like :func:`rlgen.render.manifests.render` for a base and a head checkout, but without
    the documents of roots that render alike in both (a comparison finds nothing there).
    ``differ``: :func:`~rlgen.render.checkouts.changed` of the two, when the caller has it."""
    differ = changed(base, head) if differ is None else differ
    if not differ:
        return {base.label: {}, head.label: {}}
    base_plan, head_plan = _plan(base), _plan(head)
    needed = [unit for source in sorted(set(base_plan) | set(head_plan))
              for unit in _needed(source, base_plan.get(source, {}), head_plan.get(source, {}), differ,
                                  (base, head))]
    for co in (base, head):
        # What the builds read, asked for with the entry points below: one read for a commit.
        co.prefetch({rel for unit in needed if unit.checkout is co for rel in unit.files})
    entry_points = {co.label: plain_documents(co) for co in (base, head)}
    out: dict[str, dict[str, list[str]]] = {base.label: {}, head.label: {}}
    for unit, text in zip(needed, build(needed, RenderCache(cache_repo))):
        out[unit.label].setdefault(unit.source, []).extend(split(text))
    for co in (base, head):
        out[co.label].update(entry_points[co.label])
    return out
