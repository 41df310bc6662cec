"""A team's cookiecutter template, small and real, as a folder or a git repository."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

PROJECT = "{{cookiecutter.rlgen_repository}}"
PRE_COMMIT = "repos:\n  - repo: local\n    hooks: []\n# line 2\n# line 3\n# line 4\n# line 5\n# line 6\n"
#: Hooks that leave a trace in the repository and refuse answers a team forbids.
PRE_GEN = """import pathlib, sys
print("pre_gen_project: checking the answers")
if "forbidden" in "{{ cookiecutter.rlgen_registry }}":
    sys.exit("{{ cookiecutter.rlgen_registry }} is not one of the team's registries")
pathlib.Path("hooks-ran.txt").write_text("pre_gen_project {{ cookiecutter.rlgen_repository }}\\n")
"""
POST_GEN = """import pathlib, sys
print("post_gen_project: done")
if "forbidden" in "{{ cookiecutter.rlgen_git_url }}":
    sys.exit("{{ cookiecutter.rlgen_git_url }} is not one of the team's remotes")
with open("hooks-ran.txt", "a") as out:
    out.write("post_gen_project\\n")
"""


def team_template(where: Path) -> Path:
    """CODEOWNERS, a pre-commit config, a pull-request template, a README that clashes with
    rlgen's own, and pre/post generation hooks, below ``where/team-template``."""
    root = where / "team-template"
    files = {
        "cookiecutter.json": json.dumps({"rlgen_repository": "repo", "rlgen_registry": "", "rlgen_git_url": "",
                                         "rlgen_plugins": {}, "owners": "@my-org/ml-platform"}, indent=2) + "\n",
        f"{PROJECT}/CODEOWNERS": "* {{ cookiecutter.owners }}\n",
        f"{PROJECT}/.pre-commit-config.yaml": PRE_COMMIT,
        f"{PROJECT}/.github/pull_request_template.md":
            "## What and why\n\nImages of {{ cookiecutter.rlgen_repository }} go to {{ cookiecutter.rlgen_registry }}; "
            "{{ cookiecutter.rlgen_plugins.sync }} syncs it.\n",
        f"{PROJECT}/README.md": "# The team's README\n",
        "hooks/pre_gen_project.py": PRE_GEN,
        "hooks/post_gen_project.py": POST_GEN,
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=team", "-c", "user.email=team@example.com", *args], cwd=repo,
                          capture_output=True, text=True, check=True).stdout


def commit(repo: Path, message: str) -> str:
    """Commit everything in ``repo`` (made a repository if it is none); the new commit."""
    if not (repo / ".git").exists():
        git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))
