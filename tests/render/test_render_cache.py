"""Renders cached in .rlgen-cache/ by the content of what a root reads."""
from __future__ import annotations

import json
import os
import shutil

from support.counting import builds, counting_kustomize
from support.repos import git, rlgen_in, schema_dir


def validate(repo, env):
    result = rlgen_in(repo, "validate", "--output", "json", env=env)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def _root(build: str) -> str:
    """The root a build is of: the runs folder, which has no kustomization file, is built from a
    held folder listing its runs, as Flux builds it."""
    return "overlays/production/runs" if "/rlgen-parts-" in build else build.rpartition("/repo/")[2]


def test_validate_renders_again_only_what_an_edit_reaches(repo, tmp_path):
    env, log = counting_kustomize(tmp_path)
    env = {**os.environ, **env, "RLGEN_SCHEMA_DIR": str(schema_dir())}
    first = validate(repo, env)
    assert first[0] == 0
    assert sorted(_root(b) for b in builds(log)) == \
        ["clusters/production/flux-system", "clusters/production/upstream", "overlays/production/platform",
         "overlays/production/runs"]

    assert validate(repo, env) == first
    assert builds(log) == []
    # Git never sees the cache.
    assert git(repo, "status", "--porcelain") == ""

    rayjob = repo / "base" / "training" / "rayjob.yaml"
    rayjob.write_text(rayjob.read_text().replace("spec:\n", "spec:\n  bogusField: 1\n", 1))
    code, report = validate(repo, env)
    assert [_root(b) for b in builds(log)] == ["overlays/production/runs"]
    assert code == 1 and any("bogusField" in p["message"] for p in report["problems"]), report

    rayjob.write_text(rayjob.read_text().replace("  bogusField: 1\n", ""))
    assert validate(repo, env) == first
    assert builds(log) == []  # the first render of runs/ is still in the cache

    shutil.rmtree(repo / ".rlgen-cache")
    assert validate(repo, env) == first
    assert len(builds(log)) == 4  # the flux-system folder, the upstream roots, the overlay and runs/
