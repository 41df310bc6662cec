"""The project's own kustomize sources and workflows are valid, checked the way a generated
repository checks itself."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rlgen.validate.schema import SchemaValidator, schema_dir_locations
from support.repos import REPO, build, schema_dir

ROOTS = ["base/platform", "base/training", "overlays/production/platform", "overlays/staging/platform"]


@pytest.mark.parametrize("root", ROOTS)
def test_project_sources_build_and_validate(root):
    validator = SchemaValidator(schema_dir_locations(schema_dir()))
    objects = build(REPO / root)
    assert objects
    assert [p for o in objects for p in validator.validate(o)] == []


def check_workflow(path: Path):
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(path)], capture_output=True, text=True)


def test_project_workflow_matches_the_github_schema():
    result = check_workflow(REPO / ".github" / "workflows" / "ci.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_workflows_match_the_github_schema(generate):
    workflows = sorted((generate() / ".github" / "workflows").glob("*.yaml"))
    assert workflows
    for path in workflows:
        result = check_workflow(path)
        assert result.returncode == 0, result.stdout + result.stderr


def test_generated_workflow_pins_and_verifies_its_tools(generate):
    text = (generate() / ".github" / "workflows" / "validate.yaml").read_text()
    assert "sha256sum -c" in text and "kubeconform.tgz" in text and "rlgen validate ." in text
    # rlgen validate runs the kubeconform it installs, against rlgen's schemas and schemas/.
    assert "--schema-location" not in text and "-skip" not in text
