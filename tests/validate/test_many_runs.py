"""A repository of many runs, whose runs/ is rendered in parts: validate checks every object of
every part and names a problem's run file, as it does with one build of runs/."""
from __future__ import annotations

import json
import shutil

from rlgen.render import parts
from rlgen.repo.workspace import open_workspace
from rlgen.run import naming
from rlgen.run.folder import run_kustomization
from support.repos import build, link, run_rlgen

RUNS = 2 * parts.PART_SIZE + 10


def _many_runs(generate, tmp_path):
    """The default repository with RUNS runs: copies of its first, each named as `rlgen run`
    names it."""
    repo = shutil.copytree(generate(), tmp_path / "repo", symlinks=True, ignore=shutil.ignore_patterns(".rlgen-cache"))
    first = next(p for p in sorted((repo / "runs").iterdir()) if p.is_dir())
    names = [first.name] + [f"run-{i:03d}" for i in range(1, RUNS)]
    spec = open_workspace(repo).spec
    for i, name in enumerate(names[1:], 1):
        (repo / "runs" / name).mkdir()
        config = (first / "run.yaml").read_text().replace(first.name, name)
        (repo / "runs" / name / "run.yaml").write_text(config + f"actor_rollout_ref:\n  actor:\n    optim:\n      lr: {i}.0e-7\n")
        (repo / "runs" / name / "kustomization.yaml").write_text(
            run_kustomization(spec, name, naming.inputs_name(repo, spec, name), naming.INPUTS))
    for name in names[1:]:
        (repo / link(name)).parent.mkdir()
        (repo / link(name)).write_text((repo / link(first.name)).read_text().replace(first.name, name))
    return repo


def _validate(repo):
    result = run_rlgen("validate", str(repo), "--output", "json", "--offline")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_every_object_of_every_part_is_checked(generate, tmp_path):
    repo = _many_runs(generate, tmp_path)
    # As Flux builds the runs folder: each run's folder in it.
    in_runs = len(build(repo / "overlays/production/runs"))

    code, report = _validate(repo)

    assert (code, report["problems"]) == (0, [])
    assert report["checked"] == _checked_outside_runs(generate, tmp_path) + in_runs


def _checked_outside_runs(generate, tmp_path) -> int:
    """What validate checks of the default repository outside runs/."""
    repo = shutil.copytree(generate(), tmp_path / "one", symlinks=True, ignore=shutil.ignore_patterns(".rlgen-cache"))
    code, report = _validate(repo)
    assert code == 0
    return report["checked"] - len(build(repo / "overlays/production/runs"))


def test_a_problem_in_the_last_part_names_its_run(generate, tmp_path):
    repo = _many_runs(generate, tmp_path)
    last = f"run-{RUNS - 1:03d}"
    kustomization = repo / "runs" / last / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + (
        "patches:\n  - target:\n      kind: RayJob\n"
        "    patch: '[{\"op\": \"add\", \"path\": \"/spec/bogusField\", \"value\": 1}]'\n"))

    code, report = _validate(repo)

    assert code == 1
    assert any(p["source"] == f"runs/{last}/run.yaml" and "bogusField" in p["message"] for p in report["problems"]), \
        report["problems"]
