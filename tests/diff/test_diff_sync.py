"""rlgen diff shows what a sync entry point applies, and prints JSON for scripts."""
from __future__ import annotations

import json

from support.repos import ok, rlgen_in


def test_removing_the_last_run_shows_no_training_base_objects(repo):
    ok(rlgen_in(repo, "run", "rm", "baseline", "--no-branch"))
    out = ok(rlgen_in(repo, "diff", "--base", "HEAD~1", "-o", "table"))
    # base/training is listed by no root once runs/ is empty, but no entry point applies it.
    assert "base/training" not in out and "RayJob trainer" not in out
    assert "- overlays/production/runs: RayJob rl-training/baseline-" in out


def test_json_is_the_default_off_a_terminal_and_keeps_non_ascii(repo):
    ok(rlgen_in(repo, "run", "new", "exp", "--set", "trainer.project_name=项目"))
    data = json.loads(ok(rlgen_in(repo, "diff")))
    assert data["summary"] == {"added": 2, "removed": 0, "changed": 0}
    assert [r["run"] for r in data["runs"]] == ["exp"]
    assert {"key": "trainer.project_name", "old": None, "new": "项目", "old_set": False, "new_set": True} \
        in data["runs"][0]["config"]
    assert "项目" in ok(rlgen_in(repo, "diff", "-o", "json"))
