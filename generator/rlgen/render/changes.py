"""Render only what differs between two checkouts: a root none of whose inputs (see
:mod:`rlgen.render.inputs`) changed between the two revisions renders the same in both, so it
is not built. git says which files changed; each root's inputs are worked out from the
kustomizations alone, so a root is never hashed nor read when nothing it reads changed.

``runs/`` only lists the runs, so each run is a root of its own here: a change to one run
builds that run at both revisions, not every run. When many runs changed (an edit of the
training base changes them all), one build of ``runs/`` per side is cheaper.

The builds are most of what ``rlgen diff`` waits for, so :class:`ChangesRendering` starts them
in the background, before the checks that may refuse the change.
"""
from __future__ import annotations

import sys

from rlgen.render import inputs
from rlgen.render.background import Background
from rlgen.render.checkouts import Checkout
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
Rendered = dict[str, dict[str, list[str]]]  # label -> source -> documents


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
            whole.append(Unit(co, source, source, next(iter(units.values())).reads,
                              tuple(r for r in units if r != source)))
    return whole


class ChangesRendering(Background):
    """Like :func:`rlgen.render.manifests.render` for a base and a head checkout, but without
    the documents of roots that render alike in both (a comparison finds nothing there), and
    in the background: ``with ChangesRendering(base, head, differ) as rendering:`` returns once
    the first build runs; :meth:`result` waits for them. Leaving the block early
    (an exception) stops the builds still running, so no build outlives the command.

    ``differ``: :func:`~rlgen.render.checkouts.changed` of the two. A defect planning meets (a
    kustomization that is not YAML) is raised by :meth:`result`, so the caller's own checks of
    the same files, made meanwhile, speak first."""

    def __init__(self, base: Checkout, head: Checkout, differ: set[str], cache_repo=None) -> None:
        super().__init__(cache_repo, self._render, (base, head, differ), "render-changes")
        self._result: Rendered = {}
        self._error: BaseException | None = None
        self._thread.start()
        try:
            # Planning is Python work, as are the caller's checks: done first, alone, it starts
            # the builds soonest, and the caller's checks then run while kustomize does.
            self.wait_started()
        except BaseException:  # interrupted before the caller holds the block that would stop them
            self.__exit__(*sys.exc_info())
            raise

    def _render(self, base: Checkout, head: Checkout, differ: set[str]) -> None:
        try:
            self._result = self._rendered(base, head, differ)
        except BaseException as exc:  # handed to the caller's thread by result()
            self._error = exc

    def _rendered(self, base: Checkout, head: Checkout, differ: set[str]) -> Rendered:
        out: Rendered = {base.label: {}, head.label: {}}
        if not differ:
            return out
        base_plan, head_plan = _plan(base), _plan(head)
        needed = [unit for source in sorted(set(base_plan) | set(head_plan))
                  for unit in _needed(source, base_plan.get(source, {}), head_plan.get(source, {}), differ,
                                      (base, head))]
        for co in (base, head):
            # What the builds read, asked for with the entry points below: one read for a commit.
            co.prefetch({rel for unit in needed if unit.checkout is co for rel in unit.files})
        entry_points = {co.label: plain_documents(co) for co in (base, head)}
        for unit, text in zip(needed, build(needed, self._cache, self._builds)):
            out[unit.label].setdefault(unit.source, []).extend(split(text))
        for co in (base, head):
            out[co.label].update(entry_points[co.label])
        return out

    def result(self) -> Rendered:
        """``{label: {source: [document]}}``: the documents of each root built, and of every
        entry point (plain file) of each side."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        self._cache.write()
        return self._result
