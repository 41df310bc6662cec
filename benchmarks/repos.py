"""Repositories for the benchmarks: ``rlgen new``, then many runs, committed."""
from __future__ import annotations

from pathlib import Path

import timing


def make_repo(work: Path, runs: int) -> Path:
    """A generated repository with ``runs`` runs on main: the first one ``rlgen new`` made,
    the others copies of it (the same files ``rlgen run new`` writes, with its own name and a
    learning rate of its own), so that making 200 runs takes seconds."""
    repo = work / f"repo-{runs}"
    timing.run(timing.rlgen("new", str(repo), "--no-input"))
    first = next(p for p in (repo / "runs").iterdir() if p.is_dir())
    names = [first.name]
    for i in range(1, runs):
        name = f"run-{i:03d}"
        folder = repo / "runs" / name
        folder.mkdir()
        for file in ("run.yaml", "kustomization.yaml"):
            text = (first / file).read_text().replace(first.name, name)
            if file == "run.yaml":
                text += f"actor_rollout_ref:\n  actor:\n    optim:\n      lr: {i}.0e-7\n"
            (folder / file).write_text(text)
        names.append(name)
    index = repo / "runs" / "kustomization.yaml"
    head, _, _ = index.read_text().partition("resources:")
    index.write_text(head + "resources:\n" + "".join(f"  - {n}\n" for n in sorted(names)))
    # Each copy named as rlgen run names it (a hash of its files): validate finds no stale name.
    from rlgen.repo.workspace import open_workspace
    from rlgen.run import naming
    from rlgen.run.folder import run_kustomization

    spec = open_workspace(repo).spec
    for name in names[1:]:
        (repo / "runs" / name / "kustomization.yaml").write_text(
            run_kustomization(spec, name, naming.inputs_name(repo, spec, name), naming.INPUTS))
    timing.run(["git", "add", "-A"], cwd=repo)
    timing.run(["git", "commit", "-q", "-m", f"{runs} runs"], cwd=repo)
    return repo


def top_roots(repo: Path) -> list[Path]:
    """The roots no other root lists: what a render of the whole repository builds."""
    from rlgen.render import manifests
    from rlgen.render.checkouts import WorkingTree

    return [repo / root for root in manifests.top_roots(WorkingTree("", repo))]
