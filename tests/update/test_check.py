"""rlgen update --check: a CI gate that says whether the repository is behind its answers or rlgen."""
from __future__ import annotations

import json

from rlgen import __version__
from support.repos import commit_all, git, ok, one_error_line, rlgen_in


def test_a_fresh_repository_is_up_to_date(repo):
    assert "Up to date" in ok(rlgen_in(repo, "update", "--check", "-o", "table"))
    doc = json.loads(ok(rlgen_in(repo, "update", "--check", "--output", "json")))
    assert doc["up_to_date"] is True and doc["reason"] is None
    assert doc["render"] == git(repo, "rev-parse", "HEAD").strip()


def test_a_hand_edit_of_the_answers_is_behind(repo):
    path = repo / "rlgen.yaml"
    path.write_text(path.read_text().replace("options:\n", "options:\n  flux:\n    interval: 5m\n", 1))
    commit_all(repo, "Edit the answers by hand")

    line = one_error_line(rlgen_in(repo, "update", "--check", "-o", "table"), code=1)
    assert "rlgen.yaml" in line and "rlgen update" in line
    result = rlgen_in(repo, "update", "--check", "--output", "json")
    assert result.returncode == 1 and json.loads(result.stdout)["up_to_date"] is False

    ok(rlgen_in(repo, "update"))  # renders the hand-edited answers
    assert "interval: 5m" in (repo / "clusters/production/platform.yaml").read_text()
    ok(rlgen_in(repo, "update", "--check"))


def test_a_render_of_another_rlgen_version_is_behind(repo):
    # The repository as an older rlgen would have generated it: its one commit says so.
    path = repo / "rlgen.yaml"
    path.write_text(path.read_text().replace(f"rlgen_version: {__version__}", "rlgen_version: 0.0.9"))
    git(repo, "add", "rlgen.yaml")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--amend", "--no-edit")

    line = one_error_line(rlgen_in(repo, "update", "--check", "-o", "table"), code=1)
    assert "rlgen 0.0.9 rendered it" in line and "rlgen.yaml" in line
