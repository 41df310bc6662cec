"""rlgen cluster add/rm: another cluster's sync entry points through the update path."""
from __future__ import annotations

import json
import shutil

import pytest
from ruamel.yaml import YAML
from support.repos import build, link, ok, one_error_line, pinned, rlgen_in
from support.updates import copy_of, status, validate


def _docs(path):
    return [d for d in YAML(typ="safe").load_all(path.read_text()) if d]


def _paths(folder):
    """Repository folders the cluster's sync objects apply."""
    found = set()
    for path in folder.glob("*.yaml"):
        for doc in _docs(path):
            spec = doc.get("spec") or {}
            found.add((spec.get("path") or (spec.get("source") or {}).get("path") or "").removeprefix("./"))
    return found - {""}


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_cluster_add_gives_a_second_entry_point_that_validates(generate, tmp_path, sync):
    repo = copy_of(generate, tmp_path, "--plugin", sync)
    production = {p: (repo / "clusters/production" / p).read_bytes() for p in ("platform.yaml", "runs.yaml")}

    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging"))

    assert status(repo) == ""
    assert {"overlays/staging/platform", "overlays/staging/runs"} <= _paths(repo / "clusters/staging")
    assert not {p for p in _paths(repo / "clusters/staging") if p.startswith("overlays/production")}
    assert {p: (repo / "clusters/production" / p).read_bytes() for p in production} == production
    assert "| `staging` | `clusters/staging/` | `overlays/staging/platform`" in (repo / "README.md").read_text()
    assert "clusters:\n  staging: staging" in (repo / "rlgen.yaml").read_text()
    ok(validate(repo))
    assert ok(rlgen_in(repo, "cluster", "list", "-o", "table")).splitlines() == [
        "CLUSTER     ENVIRONMENT  FOLDER", "production  production   clusters/production/",
        "staging     staging      clusters/staging/"]
    listed = json.loads(ok(rlgen_in(repo, "cluster", "list")))  # not a terminal: JSON, as every command
    assert {"cluster": "staging", "environment": "staging", "folder": "clusters/staging/"} in listed

    ok(rlgen_in(repo, "cluster", "rm", "staging", "--no-branch"))
    # Its last cluster gone, the environment's overlays go too.
    assert not (repo / "clusters/staging").exists() and not (repo / "overlays/staging").exists()


def test_a_staging_run_syncs_only_to_the_staging_cluster(repo):
    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch"))
    ok(rlgen_in(repo, "run", "new", "try-it", "--no-branch"))
    # The run's folder moved from production's runs to staging's.
    (repo / "overlays/staging/runs/try-it").mkdir()
    (repo / "overlays/production/runs/try-it/kustomization.yaml").rename(repo / link("try-it", "staging"))
    (repo / "overlays/production/runs/try-it").rmdir()

    def rayjobs(root):
        return {o["metadata"]["name"] for o in build(repo / root) if o["kind"] == "RayJob"}
    assert rayjobs("overlays/staging/runs") == {pinned(repo, "try-it")}
    assert pinned(repo, "try-it") not in rayjobs("overlays/production/runs")


def test_cluster_refusals(repo):
    assert "main cluster" in one_error_line(rlgen_in(repo, "cluster", "add", "production", "--env", "staging"))
    assert "main cluster" in one_error_line(rlgen_in(repo, "cluster", "rm", "production"))
    assert "no cluster 'nope'" in one_error_line(rlgen_in(repo, "cluster", "rm", "nope"))
    assert "DNS-1123" in one_error_line(rlgen_in(repo, "cluster", "add", "Bad_Name", "--env", "staging"))


ESO = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
       "--set", "external-secrets.role_arn=acs:ram::1234567890123456:role/eso",
       "--set", "external-secrets.oidc_provider_arn=acs:ram::1234567890123456:oidc-provider/ack-rrsa-c0ffee01")
STAGING = ("--set", "external-secrets.region=cn-beijing",
           "--set", "external-secrets.role_arn=acs:ram::1234567890123456:role/eso-staging",
           "--set", "external-secrets.oidc_provider_arn=acs:ram::1234567890123456:oidc-provider/ack-rrsa-beef0002")


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_a_second_cluster_has_its_own_external_secrets_answers(generate, tmp_path, sync):
    """A second ACK cluster has its own RRSA OIDC provider: cluster add asks for it (and the
    role and KMS region), never copies production's, and only the new cluster's entry point
    patches the shared ClusterSecretStore with them."""
    repo = copy_of(generate, tmp_path, "--plugin", sync, *ESO)
    production = (repo / "clusters/production/secrets.yaml").read_bytes()
    line = one_error_line(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-input"))
    assert "cluster staging needs its own answers of external-secrets.region" in line
    assert "--set external-secrets.oidc_provider_arn=VALUE" in line and status(repo) == ""
    line = one_error_line(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", *STAGING,
                                   "--set", "external-secrets.store=other"))
    assert "--set external-secrets.store: no answer a cluster has its own of" in line

    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch", *STAGING))
    assert (repo / "clusters/production/secrets.yaml").read_bytes() == production
    recorded = YAML(typ="safe").load((repo / "rlgen.yaml").read_text())
    assert recorded["cluster_options"] == {"staging": {"external-secrets": {
        "region": "cn-beijing", "role_arn": "acs:ram::1234567890123456:role/eso-staging",
        "oidc_provider_arn": "acs:ram::1234567890123456:oidc-provider/ack-rrsa-beef0002"}}}
    assert recorded["options"]["external-secrets"]["oidc_provider_arn"].endswith("ack-rrsa-c0ffee01")
    (entry,) = _docs(repo / "clusters/staging/secrets.yaml")
    patches = entry["spec"]["patches"] if sync == "flux" else entry["spec"]["source"]["kustomize"]["patches"]
    # The patch as the engine applies it, on the shared secrets/ built by kustomize.
    overlay = tmp_path / "overlay"
    shutil.copytree(repo / "secrets", overlay / "secrets")
    (overlay / "kustomization.yaml").write_text(json.dumps({"resources": ["secrets"], "patches": patches}))
    store = next(o for o in build(overlay) if o["kind"] == "ClusterSecretStore")["spec"]["provider"]["alibaba"]
    assert store["regionID"] == "cn-beijing"
    assert store["auth"]["rrsa"]["oidcProviderArn"].endswith("ack-rrsa-beef0002")
    assert store["auth"]["rrsa"]["roleArn"].endswith("role/eso-staging")
    readme = (repo / "README.md").read_text()
    assert "| `staging` | `clusters/staging/` | `overlays/staging/platform` | `overlays/staging/runs/` | " \
           "`external-secrets.region=cn-beijing`" in readme
    ok(validate(repo))
    # Removing the cluster takes its answers with it.
    ok(rlgen_in(repo, "cluster", "rm", "staging", "--no-branch"))
    assert "cluster_options" not in (repo / "rlgen.yaml").read_text()


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_a_second_cluster_has_its_own_kueue_quota(generate, tmp_path, sync):
    """Each cluster has its own GPU pool: cluster add asks the new one's Kueue quota, never copies
    production's, and only the new cluster's platform stage patches the shared ClusterQueue."""
    repo = copy_of(generate, tmp_path, "--plugin", sync, "--plugin", "kueue", "--set", "kueue.gpu_quota=16",
                   "--set", "kueue.teams=rl-team")
    production = (repo / "clusters/production/platform.yaml").read_bytes()
    line = one_error_line(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-input"))
    assert "cluster staging needs its own answer of kueue.gpu_quota" in line and status(repo) == ""
    refused = one_error_line(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging",
                                      "--set", "kueue.gpu_quota=0"))
    assert "kueue.gpu_quota: 0 is not between 1" in refused

    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch", "--set", "kueue.gpu_quota=4"))
    assert (repo / "clusters/production/platform.yaml").read_bytes() == production
    assert YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["cluster_options"] == {
        "staging": {"kueue": {"gpu_quota": 4}}}
    (entry,) = _docs(repo / "clusters/staging/platform.yaml")
    patches = entry["spec"]["patches"] if sync == "flux" else entry["spec"]["source"]["kustomize"]["patches"]
    # The patch as the engine applies it, on the staging overlay built by kustomize.
    overlay = repo / "overlays/staging/patched"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(json.dumps({"resources": ["../platform"], "patches": patches}))

    def quota(root):
        queue = next(o for o in build(root) if o["kind"] == "ClusterQueue")
        return queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    assert (quota(overlay), quota(repo / "overlays/staging/platform")) == (4, 16)
    shutil.rmtree(overlay)
    assert "`kueue.gpu_quota=4`" in (repo / "README.md").read_text()
    ok(validate(repo))
