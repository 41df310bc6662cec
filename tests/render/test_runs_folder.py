"""An environment's runs folder has no kustomization file (a Flux repository): rlgen render and
diff see in it exactly what Flux applies, the objects the pinned flux CLI's ``flux build
kustomization`` renders from it (the generator kustomize-controller runs), for a few runs and for
enough to be built in parts."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from ruamel.yaml import YAML
from support.repos import commit_all, ok, rlgen_in
from support.toolchain import tool

from rlgen.render import parts

#: Labels flux build adds as kustomize-controller does when it applies (its inventory's).
FLUX_LABELS = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")


def _flux_build(repo) -> list[dict]:
    out = subprocess.run([tool("flux"), "build", "kustomization", "runs", "--path", "./overlays/production/runs",
                          "--kustomization-file", "./clusters/production/runs.yaml", "--dry-run"],
                         cwd=repo, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [d for d in YAML(typ="safe").load_all(out.stdout) if d]


def _rendered(repo) -> list[dict]:
    sources = json.loads(ok(rlgen_in(repo, "render", "-o", "json")))["sources"]
    return next(s["objects"] for s in sources if s["source"] == "overlays/production/runs")


def _normal(objects: list[dict]) -> list[dict]:
    for obj in objects:
        labels = obj["metadata"].get("labels") or {}
        for key in FLUX_LABELS:
            labels.pop(key, None)
        if not labels:
            obj["metadata"].pop("labels", None)
    return sorted(objects, key=lambda o: (o["kind"], o["metadata"]["name"]))


@pytest.mark.parametrize("count", [2, 2 * parts.PART_SIZE], ids=["few", "in-parts"])
def test_render_of_a_runs_folder_is_what_flux_builds(count, generate, tmp_path):
    repo = shutil.copytree(generate(), tmp_path / "repo", symlinks=True)
    ok(rlgen_in(repo, "run", "sweep", "lr", "--no-branch", "--max-runs", str(count), "--grid",
                "actor_rollout_ref.actor.optim.lr=" + ",".join(f"{n}e-7" for n in range(1, count + 1))))
    assert not (repo / "overlays/production/runs/kustomization.yaml").exists()
    flux = _normal(_flux_build(repo))
    assert {o["metadata"]["name"] for o in flux if o["kind"] == "RayJob"} == {
        j for j in json.loads(ok(rlgen_in(repo, "run", "list", "-o", "json"))) for j in [j["rayjob"]]}
    assert _normal(_rendered(repo)) == flux


def test_removing_a_runs_folder_is_a_removed_run_in_the_diff(generate, tmp_path):
    repo = shutil.copytree(generate(), tmp_path / "repo", symlinks=True)
    ok(rlgen_in(repo, "run", "new", "exp", "--no-branch"))
    shutil.rmtree(repo / "overlays/production/runs/exp")
    commit_all(repo, "exp no longer runs in production")
    report = json.loads(ok(rlgen_in(repo, "diff", "--base", "HEAD~1", "-o", "json")))
    assert [(r["run"], r["status"]) for r in report["runs"]] == [("exp", "removed")]
    assert _normal(_rendered(repo)) == _normal(_flux_build(repo))
