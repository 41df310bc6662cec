"""The generated GitHub workflows (and the project's own) pass actionlint, with shellcheck
checking their run: blocks; actions run on a runtime GitHub still has (node24)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.repos import REPO

BIN = Path(sys.executable).parent
COMBOS = [
    (),
    ("--plugin", "argo", "--plugin", "rrsa-storage", "--set", "rrsa-storage.role_name=rl-oss-reader"),
    ("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.example.com",
     "--set", "rlgen.install=rlgen @ git+https://git.example.com/rlgen.git@v0.1.0 --index-url https://pypi.example.com/simple"),
]


def actionlint(*paths: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("actionlint", path=str(BIN)) or shutil.which("actionlint")
    assert tool, "actionlint is missing: pip install -e '.[test]'"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    assert shutil.which("shellcheck", path=env["PATH"]), "shellcheck is missing: pip install -e '.[test]'"
    return subprocess.run([tool, "-no-color", *map(str, paths)], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("args", COMBOS, ids=["default", "argo+rrsa", "marketplace+git-install"])
def test_generated_workflows_pass_actionlint(generate, args):
    workflows = sorted((generate(*args) / ".github" / "workflows").glob("*.yaml"))
    assert [w.name for w in workflows] == ["cluster-status.yaml", "diff.yaml", "e2e.yaml", "images.yaml",
                                         "rlgen-update.yaml", "validate.yaml"]
    result = actionlint(*workflows)
    assert result.returncode == 0, result.stdout + result.stderr


def test_project_workflows_pass_actionlint():
    workflows = sorted((REPO / ".github" / "workflows").glob("*.yaml"))
    assert [w.name for w in workflows] == ["ci.yaml", "release.yaml"]
    result = actionlint(*workflows)
    assert result.returncode == 0, result.stdout + result.stderr


def test_release_builds_sdist_and_wheel_and_publishes_without_a_password():
    from ruamel.yaml import YAML

    release = YAML(typ="safe").load((REPO / ".github" / "workflows" / "release.yaml").read_text())
    assert release[True if True in release else "on"]["push"]["tags"] == ["v*"]
    steps = release["jobs"]["build"]["steps"]
    build = "\n".join(step.get("run", "") for step in steps)
    assert "python -m build --outdir dist ." in build and "twine check --strict dist/*" in build
    # setuptools-scm reads the version from the tag: the checkout has the tags and their history.
    assert steps[0]["uses"].startswith("actions/checkout@") and steps[0]["with"]["fetch-depth"] == 0
    publish = release["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["environment"] == "release"
    # Trusted publishing: the upload step is given no token or password.
    assert all(not ({"password", "user"} & set(step.get("with") or {})) for step in publish["steps"])
    assert "secrets." not in (REPO / ".github" / "workflows" / "release.yaml").read_text()


def test_actionlint_reports_a_node20_action_and_a_shell_defect(tmp_path):
    # What the checks above would catch: an action on the removed runtime, an unquoted variable.
    workflow = tmp_path / "old.yaml"
    workflow.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: echo $GITHUB_SHA $1\n"
    )
    result = actionlint(workflow)
    assert result.returncode == 1
    assert 'runtime "node20" is deprecated' in result.stdout
    assert "shellcheck reported issue" in result.stdout


def test_images_workflow_runs_the_script_with_pinned_actions_and_the_secrets(generate):
    import re

    from ruamel.yaml import YAML

    workflow = YAML(typ="safe").load((generate() / ".github" / "workflows" / "images.yaml").read_text())
    assert workflow[True if True in workflow else "on"]["push"]["paths"][0] == "images/**"
    steps = workflow["jobs"]["build"]["steps"]
    # Every action by its commit: a moved tag cannot change what runs with the registry's password.
    assert all(re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", step["uses"]) for step in steps if "uses" in step)
    build = next(step for step in steps if step.get("run") == "bash images/build.sh")
    assert build["env"] == {"REGISTRY_USERNAME": "${{ secrets.REGISTRY_USERNAME }}",
                            "REGISTRY_PASSWORD": "${{ secrets.REGISTRY_PASSWORD }}"}


def test_the_images_script_passes_shellcheck(generate):
    tool = shutil.which("shellcheck", path=str(BIN)) or shutil.which("shellcheck")
    assert tool, "shellcheck is missing: pip install -e '.[test]'"
    result = subprocess.run([tool, str(generate() / "images" / "build.sh")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("args", [(), ("--plugin", "argo")], ids=["flux", "argo"])
def test_e2e_workflow_runs_rlgen_e2e_on_pull_requests_with_pinned_actions_and_no_secret(generate, args):
    import re

    from ruamel.yaml import YAML

    text = (generate(*args) / ".github" / "workflows" / "e2e.yaml").read_text()
    workflow = YAML(typ="safe").load(text)
    on = workflow[True if True in workflow else "on"]
    assert "clusters/**" in on["pull_request"]["paths"] and "push" not in on
    steps = workflow["jobs"]["e2e"]["steps"]
    pinned = [s["uses"] for s in steps if "uses" in s]
    assert all(re.fullmatch(r"[\w-]+/[\w-]+(/[\w-]+)?@[0-9a-f]{40}", uses) for uses in pinned), pinned
    runs = [s.get("run", "") for s in steps]
    assert any(r.startswith('rlgen e2e --install-tools "$RUNNER_TEMP/rlgen-e2e"') for r in runs)
    assert any(r.startswith("rlgen e2e . --cluster production") for r in runs)
    # Placeholders only: the job is given no secret, whatever the pull request changes.
    assert "secrets." not in text
    if args:
        # Argo CD's release needs Go 1.27 and a Redis server, which the runner gets from its packages
        # unless it has one.
        assert workflow["env"]["GOTOOLCHAIN"] == "go1.27.3"
        assert any(r.startswith("command -v redis-server ||") and "apt-get install -y -qq redis-server" in r
                   for r in runs), runs


@pytest.mark.parametrize("args", COMBOS, ids=["default", "argo+rrsa", "marketplace+git-install"])
def test_every_action_is_pinned_by_commit_with_its_tag_beside_it(generate, args):
    import re

    # One commit per action everywhere, its release named in the comment: a moved tag changes
    # nothing that runs, and a reader sees which release it is.
    seen: dict[str, set[str]] = {}
    for workflow in (generate(*args) / ".github" / "workflows").glob("*.yaml"):
        for line in workflow.read_text().splitlines():
            if "uses:" not in line:
                continue
            found = re.search(r"uses: (actions/[\w-]+)(/[\w-]+)?@([0-9a-f]{40})  # (v\d+\.\d+\.\d+)$", line)
            assert found, f"{workflow.name}: {line.strip()}"
            seen.setdefault(found[1], set()).add((found[3], found[4]))
    assert all(len(pins) == 1 for pins in seen.values()), seen
