"""A finding on an object of ``runs/`` names the run.yaml a user edits: the run whose name
prefixes the object's, the longest such name when one run's name begins another's."""
from __future__ import annotations

from rlgen.rules import Finding, findings_by_run_file, run_file

RUNS = ["lr", "lr-3e-6", "baseline"]


def test_the_longest_run_name_that_prefixes_the_object_wins():
    assert run_file("overlays/production/runs", "RayJob/rl-training/lr-3e-6-c3f3a52", RUNS, "run.yaml") == "runs/lr-3e-6/run.yaml"
    assert run_file("overlays/production/runs", "RayJob/rl-training/lr-7f3a779", RUNS, "run.yaml") == "runs/lr/run.yaml"
    assert run_file("overlays/production/runs", "ConfigMap/baseline-trainer-config-8gd8t9t68b", RUNS, "run.yaml") == \
        "runs/baseline/run.yaml"


def test_an_object_of_no_run_or_of_another_root_keeps_its_source():
    assert run_file("overlays/production/runs", "RayJob/rl-training/other-c3f3a52", RUNS, "run.yaml") == "overlays/production/runs"
    assert run_file("overlays/production/runs", "RayJob/rl-training/lr", RUNS, "run.yaml") == "overlays/production/runs"  # no "-" after the name
    assert run_file("overlays/staging/platform", "Namespace/lr-x", RUNS, "run.yaml") == "overlays/staging/platform"


def test_findings_are_named_by_their_run_file():
    found = findings_by_run_file([Finding("overlays/production/runs", "RayJob/ns/lr-3e-6-abc", "m"), Finding("base", "X/y", "m")],
                                 RUNS, "run.yaml")
    assert [f.source for f in found] == ["runs/lr-3e-6/run.yaml", "base"]
