"""rlgen diff names each change the API server would refuse on an object that keeps its name,
with the field and the fix; rlgen's own volumes never need one (they are renamed)."""
from __future__ import annotations

import json

from rlgen.immutable_fields import refused
from support.repos import BUCKET, commit_all, git, ok, rlgen_in

from rlgen.tools import yamlio


def _fields(old: dict, new: dict) -> list[str]:
    return [r.rule.field for r in refused(old, new)]


def _job(**spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "n"}, "spec": spec}


def test_the_table_names_the_immutable_fields_and_passes_the_others():
    template = {"spec": {"containers": [{"name": "c", "image": "a"}]}}
    moved = {"spec": {"containers": [{"name": "c", "image": "b"}]}}
    assert _fields(_job(template=template), _job(template=moved)) == ["spec.template"]
    assert _fields(_job(template=template, parallelism=1), _job(template=template, parallelism=2)) == []
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "None"}}
    other = {**svc, "spec": {"clusterIP": "10.0.0.5"}}
    assert _fields(svc, other) == ["spec.clusterIP (unless to or from type ExternalName)"]
    assert _fields(svc, {**svc, "spec": {"type": "ExternalName", "externalName": "a.example.com"}}) == []
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
           "spec": {"serviceName": "a", "replicas": 1}}
    assert _fields(sts, {**sts, "spec": {"serviceName": "b", "replicas": 1}}) == ["spec.serviceName"]
    assert _fields(sts, {**sts, "spec": {"serviceName": "a", "replicas": 3}}) == []
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "n"},
           "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}}
    bigger = {**pvc, "spec": {**pvc["spec"], "resources": {"requests": {"storage": "2Gi"}}}}
    assert _fields(pvc, bigger) == []
    assert _fields(pvc, {**pvc, "spec": {**pvc["spec"], "accessModes": ["ReadWriteOnce"]}}) == [
        "spec (all but resources.requests)"]


def _edit_volume(repo, old: str, new: str) -> None:
    path = repo / "components/ak-storage/platform/volume-rl-datasets.yaml"
    path.write_text(path.read_text().replace(old, new))
    commit_all(repo, "Edit the datasets volume by hand")


def test_a_hand_edited_bucket_under_the_same_name_is_named_with_its_fix(repo):
    git(repo, "checkout", "-q", "-b", "edit")
    _edit_volume(repo, f"bucket: {BUCKET}", "bucket: mlteam-rl-data")

    data = json.loads(ok(rlgen_in(repo, "diff", "--base", "main", "-o", "json")))
    found = data["immutable"]
    assert [(f["kind"], f["field"]) for f in found] == [
        ("PersistentVolume", "spec.persistentvolumesource (csi, nfs, hostPath, ...)")]
    assert found[0]["name"].startswith("rl-datasets-")
    assert "ValidatePersistentVolumeUpdate" in found[0]["source"]
    assert "rlgen update renames them" in found[0]["fix"]
    text = ok(rlgen_in(repo, "diff", "--base", "main", "-o", "table"))
    assert "The API server refuses these changes" in text and f"! PersistentVolume {found[0]['name']}" in text
    markdown = ok(rlgen_in(repo, "diff", "--base", "main", "-o", "markdown"))
    # The generated diff workflow fails on this marker once the comment is posted.
    assert "<!-- rlgen-immutable -->" in markdown and "The API server refuses" in markdown
    workflow = (repo / ".github/workflows/diff.yaml").read_text()
    assert 'grep -qF "<!-- rlgen-immutable -->"' in workflow


def test_a_bigger_claim_is_no_refusal(repo):
    git(repo, "checkout", "-q", "-b", "edit")
    path = repo / "components/ak-storage/platform/volume-rl-datasets.yaml"
    docs = path.read_text().split("---\n")
    docs[1] = docs[1].replace("storage: 20Gi", "storage: 40Gi")
    path.write_text("---\n".join(docs))
    commit_all(repo, "A bigger claim")

    data = json.loads(ok(rlgen_in(repo, "diff", "--base", "main", "-o", "json")))
    assert data["summary"]["changed"] == 1 and data["immutable"] == []
    assert "<!-- rlgen-immutable -->" not in ok(rlgen_in(repo, "diff", "--base", "main", "-o", "markdown"))


def test_an_update_to_another_bucket_renames_the_volumes_instead(repo):
    before = {p.name: p.read_text() for p in repo.glob("components/ak-storage/platform/volume-*.yaml")}
    out = json.loads(ok(rlgen_in(repo, "update", "--set", "ak-storage.bucket=mlteam-rl-data", "-o", "json")))
    assert out["restarts"] == ("Restart from step 0: baseline (new RayJobs, so new checkpoint folders, on a new "
                               "checkpoints volume (the old one and its data are kept)).")

    data = json.loads(ok(rlgen_in(repo, "diff", "--base", "main", "-o", "json")))
    assert data["immutable"] == []
    kinds = {(o["status"], o["kind"]) for o in data["objects"] if o["kind"].startswith("PersistentVolume")}
    # The old volumes leave the repository but not the cluster (prune disabled): kept, not removed.
    assert kinds == {("added", "PersistentVolume"), ("kept", "PersistentVolume"),
                     ("added", "PersistentVolumeClaim"), ("kept", "PersistentVolumeClaim")}
    # Every run gets a new RayJob on a new volume: the diff says, in one line, that it starts over.
    assert data["restarts"] == "Restart from step 0: baseline (new RayJob, new volumes)"
    text = ok(rlgen_in(repo, "diff", "--base", "main", "-o", "table"))
    assert "  Restart from step 0: baseline (new RayJob, new volumes)" in text.splitlines()
    kept = [line for line in text.splitlines() if line.startswith("  = ")]
    assert len(kept) == 6 and all("kept: prune disabled" in line for line in kept)
    assert "**Restart from step 0: baseline (new RayJob, new volumes)**" in ok(
        rlgen_in(repo, "diff", "--base", "main", "-o", "markdown"))
    after = {p.name: p.read_text() for p in repo.glob("components/ak-storage/platform/volume-*.yaml")}
    assert set(after) == set(before)
    rayjob = yamlio.dump(yamlio.read_plain((repo / "base/training/rayjob.yaml").read_text()))
    for name, text in after.items():
        claim = yamlio.read_plain_all(text)[1]["metadata"]["name"]
        assert claim not in before[name] and f"claimName: {claim}" in rayjob
