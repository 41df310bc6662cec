"""A plugin's migration (hook rlgen_migrate) carries the user's edits of a file it moved."""
from __future__ import annotations

import pytest
from support.plugins import PLUGIN_PACKAGES, install_example_plugin
from support.repos import REQUIRED, commit_all, git, ok, rlgen_in, run_rlgen


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    return install_example_plugin(tmp_path_factory.mktemp("example-plugin"))


def test_the_moved_page_keeps_the_users_edit(tmp_path, plugin_env):
    repo = tmp_path / "repo"
    ok(run_rlgen("new", str(repo), *REQUIRED, *PLUGIN_PACKAGES, "--plugin", "example-math", "--no-input", env=plugin_env))
    # The repository as version 0.2.0 of the plugin rendered it: the page was docs/math.md.
    git(repo, "mv", "docs/example-math.md", "docs/math.md")
    answers = repo / "rlgen.yaml"
    answers.write_text(answers.read_text().replace("example-math: 0.3.1", "example-math: 0.2.0"))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--amend", "--no-edit")
    with (repo / "docs/math.md").open("a") as page:
        page.write("\nOur team keeps its notes here.\n")
    commit_all(repo, "Team notes")

    ok(rlgen_in(repo, "update", env=plugin_env))

    assert not (repo / "docs/math.md").exists()
    page = (repo / "docs/example-math.md").read_text()
    assert page.startswith("# MATH") and "Our team keeps its notes here." in page
    assert "example-math: 0.3.1" in answers.read_text()
    assert "Migrated example-math 0.2.0 -> 0.3.1" in git(repo, "log", "-1", "--format=%B")
    assert git(repo, "status", "--porcelain") == ""
