"""rlgen new --template: a team's cookiecutter template (a folder, a git repository) joins the
generated repository, its hooks run with rlgen's answers, rlgen's own files win a clash, and
rlgen.yaml pins what was rendered."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ruamel.yaml import YAML
from support.repos import REGISTRY, REQUIRED, git, one_error_line, repo_files, run_rlgen
from support.templates import PROJECT, commit, edit, team_template
from support.updates import validate

TEAM_FILES = ("CODEOWNERS", ".pre-commit-config.yaml", ".github/pull_request_template.md", "hooks-ran.txt")


@pytest.fixture
def tmpdir_env(tmp_path):
    """The environment of an rlgen whose temporary files go to a folder the test can look into."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder, {**os.environ, "TMPDIR": str(folder)}


def new(target, template, *args, env=None):
    return run_rlgen("new", str(target), *REQUIRED, "--no-input", "--template", str(template), *args, env=env)


def recorded(repo) -> dict:
    return YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["template"]


def test_a_folder_template_joins_the_repository_with_its_hooks_run(tmp_path, tmpdir_env):
    template = team_template(tmp_path)
    scratch, env = tmpdir_env
    target = tmp_path / "repo"

    result = new(target, template, "-o", "json", env=env)

    assert result.returncode == 0, result.stderr
    # The hooks printed to their own output: rlgen's stdout is still its JSON alone.
    assert json.loads(result.stdout)["directory"] == str(target)
    assert (target / "CODEOWNERS").read_text() == "* @my-org/ml-platform\n"
    assert (target / ".github/pull_request_template.md").read_text().endswith(
        f"Images of rl-repo go to {REGISTRY}; flux syncs it.\n")
    assert (target / "hooks-ran.txt").read_text() == "pre_gen_project rl-repo\npost_gen_project\n"
    # A clash: rlgen's README is kept, and said so on stderr, one line.
    assert "The team's README" not in (target / "README.md").read_text()
    assert result.stderr.splitlines() == ["rlgen: template file README.md clashes with rlgen's own: rlgen's is kept"]
    assert set(TEAM_FILES) <= set(git(target, "ls-files").split()) and git(target, "status", "--porcelain") == ""
    pin = recorded(target)
    # A local folder is recorded relative to the repository: found again wherever both are checked out.
    assert pin["source"] == os.path.relpath(template, target) and pin["digest"].startswith("sha256:")
    assert set(pin) == {"source", "digest"}
    assert list(scratch.iterdir()) == []
    assert validate(target).returncode == 0

    edit(template / PROJECT / "CODEOWNERS", "* ", "/runs/ @my-org/ml-research\n* ")
    again = tmp_path / "again"
    assert new(again, template, env=env).returncode == 0
    assert recorded(again)["digest"] != pin["digest"]


def test_a_git_template_pins_its_commit_and_renders_byte_identical_trees(tmp_path):
    template = team_template(tmp_path)
    first = commit(template, "Team conventions")
    git(template, "tag", "v1")
    edit(template / PROJECT / "CODEOWNERS", "* ", "/runs/ @my-org/ml-research\n* ")
    newest = commit(template, "New owners")
    url = template.as_uri()

    one, two = tmp_path / "one", tmp_path / "two"
    for target in (one, two):
        assert new(target, url).returncode == 0
    assert repo_files(one) == repo_files(two)
    assert recorded(one) == {"source": url, "commit": newest}
    assert (one / "CODEOWNERS").read_text() == "/runs/ @my-org/ml-research\n* @my-org/ml-platform\n"

    pinned = tmp_path / "pinned"
    assert new(pinned, url, "--template-ref", "v1").returncode == 0
    assert recorded(pinned) == {"source": url, "commit": first}
    assert (pinned / "CODEOWNERS").read_text() == "* @my-org/ml-platform\n"

    # A local folder that git tracks is pinned to its commit too, recorded by its path.
    local = tmp_path / "local"
    assert new(local, template).returncode == 0
    assert recorded(local) == {"source": os.path.relpath(template, local), "commit": newest}


@pytest.mark.parametrize("hook, answer", [
    ("pre_gen_project", ("--set", "rlgen.registry=registry.rl.test/forbidden")),
    ("post_gen_project", ("--set", "rlgen.git_url=ssh://git@git.rl.test/forbidden/rl-repo.git")),
])
def test_a_failing_hook_stops_with_one_line_and_leaves_nothing(tmp_path, tmpdir_env, hook, answer):
    template = team_template(tmp_path)
    scratch, env = tmpdir_env
    parent = tmp_path / "out"
    parent.mkdir()

    line = one_error_line(new(parent / "repo", template, *answer, env=env))

    assert line.startswith(f"rlgen: error: template {template}: its {hook} hook failed (")
    assert line.endswith("is not one of the team's registries" if hook == "pre_gen_project"
                         else "is not one of the team's remotes")
    assert list(parent.iterdir()) == [] and list(scratch.iterdir()) == []


def test_the_template_source_is_checked_at_the_door(tmp_path):
    token = "ghp_" + "a" * 36
    line = one_error_line(new(tmp_path / "a", f"https://x-access-token:{token}@github.com/my-org/team-template.git"))
    assert "carries credentials" in line and token not in line
    assert "no such folder" in one_error_line(new(tmp_path / "b", tmp_path / "missing"))
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "is not a cookiecutter template" in one_error_line(new(tmp_path / "c", plain))
    ref_alone = run_rlgen("new", str(tmp_path / "d"), *REQUIRED, "--no-input", "--template-ref", "v1")
    assert "--template-ref needs --template" in one_error_line(ref_alone)
    template = team_template(tmp_path)
    commit(template, "Team conventions")
    assert "has no --template-ref v9" in one_error_line(new(tmp_path / "e", template.as_uri(), "--template-ref", "v9"))
    (template / "cookiecutter.json").write_text("{}\n")
    assert "uncommitted changes" in one_error_line(new(tmp_path / "f", template))
    gone = (tmp_path / "gone").as_uri()
    assert f"cannot fetch {gone}" in one_error_line(new(tmp_path / "g", gone))
    assert not any((tmp_path / name).exists() for name in "abcdefg")


def test_a_template_cannot_write_into_git_s_own_folder(tmp_path):
    template = team_template(tmp_path)
    hook = template / PROJECT / ".git" / "hooks" / "post-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\ntouch ran\n")

    line = one_error_line(new(tmp_path / "repo", template))

    assert ".git/hooks/post-commit is inside a .git folder" in line
    assert not (tmp_path / "repo").exists()


def test_new_without_a_template_never_imports_cookiecutter(tmp_path):
    code = ("import sys\nfrom rlgen.cli import main\n"
            f"try:\n    main(['new', {str(tmp_path / 'repo')!r}, *{list(REQUIRED)!r}, '--no-input'])\n"
            "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "print('cookiecutter' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
