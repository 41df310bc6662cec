"""Another bucket for the synced repository, through rlgen update: the volumes and claims, named
from their immutable fields, arrive as new objects the API server creates, so the platform and
the runs become Ready at the new revision instead of the platform failing on an immutable
PersistentVolume source; the old volumes and claims stay (Retain, never pruned)."""
from __future__ import annotations

import json

import pytest
from support.controlplane import wait_until
from support.flux import NAMESPACE, reconcile
from support.repos import commit_all, git, ok, run_rlgen

pytestmark = pytest.mark.usefixtures("dump_on_failure")
BUCKET = "mlteam-rl-data"


def _claims(cp) -> dict[str, dict]:
    return {c["metadata"]["name"]: c for c in cp.objects("pvc", "-n", NAMESPACE)}


def test_a_new_bucket_syncs_as_new_volumes_beside_the_old_ones(control_plane, synced):
    cp, repo = control_plane, synced["repo"]
    git(repo, "checkout", "--quiet", "main")
    start = git(repo, "rev-parse", "HEAD").strip()
    before = set(_claims(cp))
    ok(run_rlgen("update", "--no-branch", "--set", f"ak-storage.bucket={BUCKET}", cwd=repo))
    assert json.loads(ok(run_rlgen("diff", "--base", start, "--head", "HEAD", "-o", "json", cwd=repo)))[
        "immutable"] == []
    git(repo, "push", "--quiet", "origin", "main")
    try:
        reconcile(cp)
        new = set(_claims(cp)) - before
        assert {name.rsplit("-", 1)[0] for name in new} == {"rl-datasets", "rl-models", "rl-checkpoints"}
        wait_until("the new claims Bound", lambda: all(
            _claims(cp)[n]["status"].get("phase") == "Bound" for n in new), timeout=60)
        for name in new:
            volume = json.loads(cp.kubectl("get", "pv", name, "-o", "json").stdout)
            assert volume["spec"]["csi"]["volumeAttributes"]["bucket"] == BUCKET
            assert _claims(cp)[name]["spec"]["volumeName"] == name
        # The old ones keep their data and their binding: nothing deletes them.
        assert before <= set(_claims(cp))
    finally:
        git(repo, "checkout", start, "--", ".")
        commit_all(repo, "Back to the first bucket")
        git(repo, "push", "--quiet", "origin", "main")
        reconcile(cp)
