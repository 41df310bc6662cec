"""The generated repository ships the read-only role of doctor/status, outside every sync stage."""
from __future__ import annotations

from ruamel.yaml import YAML
from support.repos import plain_manifests


def test_the_reader_role_is_read_only_names_its_secrets_and_is_not_synced(generate):
    repo = generate()
    role = YAML(typ="safe").load((repo / "rbac" / "rlgen-reader.yaml").read_text())
    assert role["kind"] == "ClusterRole"
    assert {v for rule in role["rules"] for v in rule["verbs"]} <= {"get", "list"}
    secrets = next(r for r in role["rules"] if r["resources"] == ["secrets"])
    assert secrets["verbs"] == ["get"] and secrets["resourceNames"] == [
        "git-webhook-token", "hf-token", "oss-credentials", "sandbox-admin-api-key", "sandbox-api-key"]
    paths = {d["spec"].get("path", "").strip("./") for d in plain_manifests(repo) if d["kind"] == "Kustomization"}
    assert not any(p == "rbac" or p.startswith("rbac/") for p in paths)


def test_the_readme_starts_the_first_sync_with_doctor_and_runs_with_status(generate):
    readme = (generate() / "README.md").read_text()
    first_sync = readme.split("## Before the first sync\n", 1)[1].lstrip()
    runs = readme.split("## Training runs\n", 1)[1].lstrip()
    assert first_sync.startswith("```sh\nrlgen doctor")
    assert runs.startswith("```sh\nrlgen status")
