"""docs/templates.md's example template, as printed there: rlgen new renders it into the
repository with rlgen's answers."""
from __future__ import annotations

import re

from support.repos import REGISTRY, REPO, REQUIRED, ok, run_rlgen

GUIDE = (REPO / "docs" / "templates.md").read_text()


def test_the_guides_template_renders_with_rlgens_answers(tmp_path):
    files = dict(re.findall(r"^`([^`\n]+)`:\n\n```\w*\n(.*?)```", GUIDE, re.S | re.M))
    assert set(files) == {"cookiecutter.json", "{{cookiecutter.rlgen_repository}}/CODEOWNERS",
                          "{{cookiecutter.rlgen_repository}}/.github/pull_request_template.md"}
    template = tmp_path / "rl-conventions"
    for path, text in files.items():
        (template / path).parent.mkdir(parents=True, exist_ok=True)
        (template / path).write_text(text)

    repo = tmp_path / "rl-repo"
    ok(run_rlgen("new", str(repo), *REQUIRED, "--no-input", "--template", str(template)))

    assert (repo / "CODEOWNERS").read_text() == "* @my-org/ml-platform\n"
    assert (repo / ".github/pull_request_template.md").read_text() == \
        f"Images of rl-repo go to {REGISTRY}; flux syncs them.\n"
