"""``rlgen run sweep`` and ``rlgen run rm --sweep``: one run per point of a grid (:mod:`rlgen.runs.grid`),
all made on one branch in one commit, each through the path ``rlgen run new`` takes
(:func:`rlgen.runs.edits.create_run`); and all of a sweep's runs removed in one commit.

A sweep's runs carry the label ``rlgen.io/sweep: <sweep>`` in their kustomizations (so on their
RayJobs too): ``rlgen run list`` groups by it, and every later command keeps it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlgen.errors import RlgenError
from rlgen.repo.workspace import Workspace
from rlgen.run import config, files, folder
from rlgen.run.folder import SWEEP_LABEL
from rlgen.runs import edits, grid
from rlgen.tools.git_change import GitChange


@dataclass(frozen=True, kw_only=True)
class SweepRequest(edits.RunRequest):
    """``rlgen run sweep``: the sweep's name, its grid (``KEY=V1,V2``, unparsed) and its bound."""

    grids: tuple[str, ...]
    #: Refuse a grid of more runs (``--max-runs``).
    max_runs: int


def new(request: SweepRequest) -> None:
    name, source, no_branch = request.name, request.source, request.no_branch
    axes, common, points, names = _plan(name, request.grids, request.sets, request.max_runs)
    ws, runs = edits.open_runs(committing=True)
    branch = f"run/sweep-{name}"
    start = edits.claim_branch(ws, branch, no_branch, request.from_head, "pick another sweep name or pass --no-branch")
    paths = [files.folder_of(ws.root, run) for run in names] + [files.index_path(ws.root, request.env)]
    with GitChange(ws.root, paths, request.dry_run) as change:
        ws, runs = edits.enter_branch(change, ws, runs, None if no_branch else branch, start)
        _require_new_sweep(ws, runs, name)
        made = [_make(ws, run, i, len(points), request, common, point)
                for i, (run, point) in enumerate(zip(names, points), 1)]
        folder.write_index(ws.root, [*files.read_index(ws.root, env=request.env), *names], request.env)
        change.commit(_message(request, axes, common, names, points, made))
    found = [{"run": run, "rayjob": one.rayjob, "point": point, "keys": one.values}
             for run, point, one in zip(names, points, made)]
    text = (f"Created sweep '{name}' {edits.where(no_branch, branch, start)}: {len(names)} runs.\n"
            + _table([(r["run"], r["rayjob"], grid.point_text(r["point"])) for r in found]))
    edits.report(request.output, change, text.rstrip("\n"), sweep=name, grid=axes, runs=found, source=source,
                 start=None if no_branch else start or "HEAD")


def _plan(name: str, grids: tuple[str, ...], sets: tuple[str, ...], max_runs: int) -> tuple:
    """The grid, the keys of every run, the points and the runs' names: all refused before the
    repository is opened."""
    axes = grid.parse(grids)
    common = edits.parse_assignments(sets)
    if both := [key for key in axes if key in common]:
        raise RlgenError(f"{both[0]} is given by both --grid and --set: keep one")
    points = grid.points(axes)
    grid.check_count(len(points), max_runs)
    return axes, common, points, grid.run_names(name, len(points))


def rm(name: str, *, no_branch: bool = False, from_head: bool = False, dry_run: bool = False,
       output: str | None = None) -> None:
    ws, runs = edits.open_runs(committing=True)
    members(ws, runs, name)
    branch = f"run/rm-sweep-{name}"
    start = edits.claim_branch(ws, branch, no_branch, from_head, "delete it or pass --no-branch")
    # The whole runs/ folder: which runs are the sweep's is known only on the new branch.
    with GitChange(ws.root, [ws.root / "runs", files.index_path(ws.root)], dry_run) as change:
        ws, runs = edits.enter_branch(change, ws, runs, None if no_branch else branch, start)
        pruned = edits.remove_runs(ws, runs, members(ws, runs, name, start))
        change.commit(f"Sweep {name}: remove its {len(pruned)} runs\n\nThe sync engine prunes their RayJobs:\n"
                      + _table([(run, rayjob or "(not named)", "") for run, rayjob in pruned.items()]))
    found = [{"run": run, "rayjob": rayjob} for run, rayjob in pruned.items()]
    text = (f"Removed sweep '{name}' {edits.where(no_branch, branch, start)}: {len(found)} runs, their RayJobs "
            "pruned once this commit syncs.\n" + _table([(r["run"], r["rayjob"] or "(not named)", "") for r in found]))
    edits.report(output, change, text.rstrip("\n"), sweep=name, runs=found,
                 start=None if no_branch else start or "HEAD")


def members(ws: Workspace, runs: dict, name: str, start: str | None = None) -> list[str]:
    """The runs of sweep ``name``, by name; refused when it has none (on the new branch's ``start``)."""
    sweeps = {run: folder.sweep_of(ws.root, run) for run in runs}
    found = sorted(run for run, sweep in sweeps.items() if sweep == name)
    if not found:
        known = ", ".join(sorted({s for s in sweeps.values() if s})) or "none"
        there = f" on {start}, where the new branch starts (sweeps there: {known}): not merged yet? " \
                "pass --from-head to remove it on top of this branch" if start else f" (sweeps: {known})"
        raise RlgenError(f"no sweep '{name}'{there}")
    return found


def _require_new_sweep(ws: Workspace, runs: dict, name: str) -> None:
    taken = [run for run in runs if folder.sweep_of(ws.root, run) == name]
    if taken:
        raise RlgenError(f"sweep '{name}' already exists (runs: {', '.join(sorted(taken))}): pick another "
                         f"name, or remove it with rlgen run rm --sweep {name}")


def _make(ws: Workspace, run: str, i: int, count: int, request: SweepRequest,
          common: dict[str, Any], point: dict[str, Any]) -> edits.NewRun:
    lines = "".join(f"\n  {key}={config.show(value)}" for key, value in point.items())
    note = f"Run {i} of {count} of sweep '{request.name}' (rlgen run sweep), its point of the grid:{lines}"
    return edits.create_run(ws, run, request.source, {**common, **point}, {SWEEP_LABEL: request.name}, note,
                            resume_from=request.resume_from)


def _message(request: SweepRequest, axes: dict, common: dict, names: list[str],
             points: list[dict], made: list[edits.NewRun]) -> str:
    name, source = request.name, request.source
    origin = f", each from {source}" if source else ""
    lines = [f"Sweep {name}: {len(names)} runs over {', '.join(axes)}{origin}", "",
             f"One run per point of the grid, the last key varying fastest (label {SWEEP_LABEL}={name}):"]
    lines += [f"  {key}: {', '.join(config.show(v) for v in values)}" for key, values in axes.items()]
    if common:
        lines += ["Keys of every run:", *(f"  {key}={config.show(v)}" for key, v in common.items())]
    if request.resume_from:
        lines += [f"Checkpoints: each continues from the newest checkpoint of run {request.resume_from}'s RayJob "
                  "(--resume-from)."]
    lines += ["", "Runs (run, RayJob, point):"]
    return "\n".join(lines) + "\n" + _table([(run, one.rayjob, grid.point_text(point))
                                            for run, point, one in zip(names, points, made)])


def _table(rows: list[tuple[str, str, str]]) -> str:
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(2)]
    return "".join(f"  {a:<{widths[0]}}  {b:<{widths[1]}}  {c}".rstrip() + "\n" for a, b, c in rows)

