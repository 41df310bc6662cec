"""rlgen update with a team's cookiecutter template: the template's newest commit is merged like
rlgen's own files, the team's edits of template-made files stay, a conflict is left as any
update conflict, rlgen cluster keeps the commit rlgen.yaml records, and --check counts a newer
template commit as behind."""
from __future__ import annotations

import pytest
from ruamel.yaml import YAML
from support.repos import REQUIRED, commit_all, git, ok, one_error_line, repo_files, rlgen_in, run_rlgen
from support.templates import PROJECT, commit, edit, team_template
from support.updates import head, status


@pytest.fixture
def team(tmp_path):
    """(the template's git repository, a repository generated from it by its file:// URL)."""
    template = team_template(tmp_path)
    commit(template, "Team conventions")
    repo = tmp_path / "repo"
    ok(run_rlgen("new", str(repo), *REQUIRED, "--no-input", "--template", template.as_uri()))
    return template, repo


def pinned(repo) -> str:
    return YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["template"]["commit"]


def test_update_merges_the_templates_change_and_keeps_the_teams_edits(team):
    template, repo = team
    edit(repo / "CODEOWNERS", "* ", "/runs/ @my-org/ml-research\n* ")
    edit(repo / ".pre-commit-config.yaml", "# line 2\n", "# line 2: ours\n")
    commit_all(repo, "Our owners and hooks")
    edit(template / PROJECT / ".pre-commit-config.yaml", "# line 6\n", "# line 6: the template's\n")
    edit(template / PROJECT / ".github/pull_request_template.md", "## What and why", "## What, why, how tested")
    newest = commit(template, "Ask how it was tested")

    result = rlgen_in(repo, "update", "-o", "table")

    out = ok(result)
    assert f"-> {newest[:12]}" in out and "Updated on branch rlgen/update-" in out
    assert result.stderr.splitlines() == ["rlgen: template file README.md clashes with rlgen's own: rlgen's is kept"]
    assert (repo / ".github/pull_request_template.md").read_text().startswith("## What, why, how tested\n")
    assert (repo / "CODEOWNERS").read_text() == "/runs/ @my-org/ml-research\n* @my-org/ml-platform\n"
    hooks = (repo / ".pre-commit-config.yaml").read_text()
    assert "# line 2: ours\n" in hooks and "# line 6: the template's\n" in hooks
    assert pinned(repo) == newest and status(repo) == ""
    assert "Up to date" in ok(rlgen_in(repo, "update", "--check", "-o", "table"))


def test_a_conflicting_template_change_is_left_as_update_conflicts_are(team):
    template, repo = team
    edit(repo / ".pre-commit-config.yaml", "# line 4\n", "# line 4: ours\n")
    commit_all(repo, "Our hooks")
    edit(template / PROJECT / ".pre-commit-config.yaml", "# line 4\n", "# line 4: the template's\n")
    commit(template, "Other hooks")
    files, before = repo_files(repo), head(repo)

    result = rlgen_in(repo, "update", "-o", "table")

    assert result.returncode == 1
    assert result.stdout.splitlines() == ["CONFLICT .pre-commit-config.yaml"]
    assert "<<<<<<< rlgen/your-branch\n# line 4: ours\n=======\n# line 4: the template's\n>>>>>>> rlgen/new-render" \
        in (repo / ".pre-commit-config.yaml").read_text()
    ok(rlgen_in(repo, "update", "--abort"))
    assert repo_files(repo) == files and head(repo) == before


def test_cluster_add_and_check_keep_the_recorded_commit_and_template_ref_picks_one(team):
    template, repo = team
    first = pinned(repo)
    edit(template / PROJECT / "CODEOWNERS", "* ", "/runs/ @my-org/ml-research\n* ")
    newest = commit(template, "New owners")

    # A newer template commit is behind: the weekly workflow runs rlgen update only then.
    line = one_error_line(rlgen_in(repo, "update", "--check", "-o", "table"), code=1)
    assert line == (f"rlgen: error: behind: the team's template has a newer commit ({first[:12]} rendered, "
                    f"{newest[:12]} newest): run rlgen update")
    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch"))
    assert pinned(repo) == first and (repo / "CODEOWNERS").read_text() == "* @my-org/ml-platform\n"

    assert "Up to date" in ok(rlgen_in(repo, "update", "--template-ref", first, "-o", "table"))
    ok(rlgen_in(repo, "update", "--template-ref", "main", "--no-branch"))
    assert pinned(repo) == newest and (repo / "CODEOWNERS").read_text().startswith("/runs/ @my-org/ml-research\n")


def test_a_failing_hook_stops_the_update_and_changes_nothing(team):
    template, repo = team
    (template / "hooks/pre_gen_project.py").write_text("import sys\nsys.exit('the team froze this repository')\n")
    commit(template, "Freeze")
    files, before = repo_files(repo), head(repo)

    line = one_error_line(rlgen_in(repo, "update"))

    assert line == (f"rlgen: error: template {template.as_uri()}: its pre_gen_project hook failed "
                    "(Hook script failed (exit status: 1)): the team froze this repository")
    assert repo_files(repo) == files and head(repo) == before and status(repo) == ""
    assert git(repo, "branch", "--list", "rlgen/*") == ""


def test_template_ref_needs_a_recorded_template(repo):
    assert "records no template" in one_error_line(rlgen_in(repo, "update", "--template-ref", "main"))


def test_a_plain_folder_template_is_rendered_as_it_is_now(tmp_path):
    template = team_template(tmp_path)
    repo = tmp_path / "repo"
    ok(run_rlgen("new", str(repo), *REQUIRED, "--no-input", "--template", str(template)))
    before = YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["template"]["digest"]
    edit(template / PROJECT / "CODEOWNERS", "* ", "/runs/ @my-org/ml-research\n* ")

    out = ok(rlgen_in(repo, "update", "--no-branch", "-o", "table"))

    after = YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["template"]["digest"]
    assert after != before and f"../{template.name}: {before[7:19]} -> {after[7:19]}" in out
    assert (repo / "CODEOWNERS").read_text().startswith("/runs/ @my-org/ml-research\n")


def test_a_local_template_moved_with_its_repository_is_still_found(tmp_path):
    # Recorded relative to the repository: both moved side by side (another clone, another
    # machine), rlgen update finds it, run from any folder of the repository.
    template = team_template(tmp_path / "before")
    commit(template, "Team conventions")
    repo = tmp_path / "before" / "repo"
    ok(run_rlgen("new", str(repo), *REQUIRED, "--no-input", "--template", str(template)))
    assert YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["template"]["source"] == f"../{template.name}"
    (tmp_path / "before").rename(tmp_path / "after")
    moved = tmp_path / "after" / "repo"
    edit(tmp_path / "after" / template.name / PROJECT / "CODEOWNERS", "* ", "/runs/ @my-org/ml-research\n* ")
    commit(tmp_path / "after" / template.name, "New owners")

    ok(run_rlgen("update", "--no-branch", cwd=moved / "runs"))

    assert (moved / "CODEOWNERS").read_text().startswith("/runs/ @my-org/ml-research\n")
    assert YAML(typ="safe").load((moved / "rlgen.yaml").read_text())["template"]["source"] == f"../{template.name}"

