"""rlgen validate from inside the repository checks the whole of it; given a path, only that
path's objects, but rendered in the context of the whole repository."""
from __future__ import annotations

import json
import os

from support.repos import run_rlgen, schema_dir


def validate(cwd, *args):
    env = {**os.environ, "RLGEN_SCHEMA_DIR": str(schema_dir())}
    return run_rlgen("validate", "-o", "json", *args, cwd=cwd, env=env)


def test_validate_from_any_folder_checks_the_whole_repository(generate):
    repo = generate()
    whole = validate(repo)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    for folder in ("runs", "base", "base/training", "runs/baseline"):
        result = validate(repo / folder)
        assert result.returncode == 0, folder + result.stdout + result.stderr
        assert json.loads(result.stdout) == json.loads(whole.stdout)


def test_a_path_checks_only_its_objects_in_context(generate):
    repo = generate()
    result = validate(repo / "base", "../runs/baseline")
    assert result.returncode == 0, result.stdout + result.stderr
    total = json.loads(validate(repo).stdout)["checked"]
    # The run's RayJob and ConfigMap, and none of the false "not rendered" references a run
    # folder gives out of context (its PVCs come from the platform overlay).
    report = json.loads(result.stdout)
    assert (report["checked"], report["problems"]) == (2, []) and total > 2
