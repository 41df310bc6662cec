"""The repository of a team on ACK's managed add-ons, on a cluster of its own: the sandbox from
ACK's marketplace add-ons (``marketplace-sandbox``, ALB in front) and OSS volumes authenticated by
RRSA (``rrsa-storage``). Its objects share names with the default repository's (the Flux stages,
``rl-training``, the volumes), so it cannot sync beside it on the shared API server.

What ACK installs is put there first, as the README asks: the ALB Ingress controller's AlbConfig
``alb`` and the ack-sandbox-manager add-on's Ingress, the add-ons' CRDs. No ACK controller runs:
no ALB listener is created and no RRSA webhook injects credentials (README, "What is verified
where"); what is checked is what the API server and Flux's controllers do with the repository.
"""
from __future__ import annotations

import json
import subprocess

import pytest
from support.ack import ACK_ALBCONFIG, ACK_INGRESS, DOMAIN, PIPELINE_ROLE, ROLE, SANDBOX_NAMESPACE, install_ack_addons
from support.flux import NAMESPACE, REGISTRY, kustomizations, ready
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers

pytestmark = pytest.mark.usefixtures("dump_second_on_failure")

@pytest.fixture(scope="module")
def ack_synced(second_control_plane, git_server, sync_repository, tmp_path_factory):
    cp = second_control_plane
    url = git_server.create("team/rl-ack.git")
    repo = tmp_path_factory.mktemp("ack") / "rl-ack"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}",
                 "--plugin", "marketplace-sandbox", "--set", f"marketplace-sandbox.domain={DOMAIN}",
                 "--plugin", "rrsa-storage", *storage_answers("rrsa-storage"),
                 "--set", f"rrsa-storage.role_name={ROLE}",
                 "--set", f"rrsa-storage.pipeline_role_name={PIPELINE_ROLE}"))
    # A clone that follows the remote branch, as a user's does: the README's `git pull` after
    # bootstrap needs it.
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", url], check=True)
    subprocess.run(["git", "-C", str(repo), "push", "--quiet", "-u", "origin", "HEAD:main"], check=True,
                   capture_output=True)
    install_ack_addons(cp)
    return {"repo": repo, "kustomizations": sync_repository(cp, repo, url, "clusters/production")}


def test_every_stage_of_the_addon_repository_becomes_ready(second_control_plane, ack_synced):
    ks = ack_synced["kustomizations"]
    assert set(ks) == {"flux-system", "infrastructure", "platform", "runs"}
    assert all(ready(k)["status"] == "True" for k in kustomizations(second_control_plane).values())


def managed_by_flux(obj: dict) -> dict:
    return next(m["fieldsV1"] for m in obj["metadata"]["managedFields"] if m["manager"] == "kustomize-controller")


def test_the_albconfig_and_ingress_get_the_https_listener_and_keep_what_ack_set(second_control_plane, ack_synced):
    cp = second_control_plane
    albconfig = json.loads(cp.kubectl("get", "albconfig", "alb", "-o", "json", "--show-managed-fields").stdout)
    assert albconfig["spec"]["listeners"] == [{"port": 80, "protocol": "HTTP"}, {"port": 443, "protocol": "HTTPS"}]
    assert albconfig["spec"]["config"] == ACK_ALBCONFIG["spec"]["config"]
    # Flux owns the listeners and its annotations, nothing of the instance settings.
    owned = managed_by_flux(albconfig)
    assert set(owned["f:spec"]) - {"."} == {"f:listeners"}, owned

    ingress = json.loads(cp.kubectl("get", "ingress", "sandbox-manager", "-n", SANDBOX_NAMESPACE, "-o", "json",
                                    "--show-managed-fields").stdout)
    assert json.loads(ingress["metadata"]["annotations"]["alb.ingress.kubernetes.io/listen-ports"]) == [
        {"HTTP": 80}, {"HTTPS": 443}]
    assert ingress["spec"] == ACK_INGRESS["spec"]
    # No field of the add-on's rules (an empty spec is all the partial object sends).
    assert managed_by_flux(ingress).get("f:spec", {}) == {}


def test_the_addon_values_are_a_reviewed_record_no_engine_applies(second_control_plane, ack_synced):
    """``infrastructure/ack-sandbox-manager-values.yaml`` is entered in ACK's add-on form: the
    infrastructure stage applies the AlbConfig and Ingress only, and the IngressClass it names is
    the one the add-on's Ingress uses."""
    from ruamel.yaml import YAML

    repo = ack_synced["repo"]
    values = YAML(typ="safe").load((repo / "infrastructure" / "ack-sandbox-manager-values.yaml").read_text())
    assert values["e2b"]["domain"] == DOMAIN and "adminApiKey" not in json.dumps(values)
    ingress = json.loads(second_control_plane.kubectl("get", "ingress", "sandbox-manager", "-n", SANDBOX_NAMESPACE,
                                                       "-o", "json").stdout)
    assert values["ingress"]["className"] == ingress["spec"]["ingressClassName"]
    inventory = kustomizations(second_control_plane)["infrastructure"]["status"]["inventory"]["entries"]
    assert sorted(e["id"] for e in inventory) == ["_alb_alibabacloud.com_AlbConfig",
                                                  "sandbox-system_sandbox-manager_networking.k8s.io_Ingress"]


def test_rrsa_volumes_bind_and_the_pipeline_identity_is_annotated(second_control_plane, ack_synced):
    cp = second_control_plane
    namespace = json.loads(cp.kubectl("get", "namespace", NAMESPACE, "-o", "json").stdout)
    assert namespace["metadata"]["labels"]["pod-identity.alibabacloud.com/injection"] == "on"
    account = json.loads(cp.kubectl("get", "serviceaccount", "dataset-pipeline", "-n", NAMESPACE, "-o", "json").stdout)
    assert account["metadata"]["annotations"]["pod-identity.alibabacloud.com/role-name"] == PIPELINE_ROLE

    claims = {c["metadata"]["name"]: c for c in cp.objects("pvc", "-n", NAMESPACE)}
    # Named from their immutable fields: the base name and a hash.
    assert {name.rsplit("-", 1)[0] for name in claims} == {"rl-datasets", "rl-models", "rl-checkpoints"}
    for name, claim in claims.items():
        assert claim["status"]["phase"] == "Bound" and claim["spec"]["volumeName"] == name, claim["status"]
        volume = json.loads(cp.kubectl("get", "pv", name, "-o", "json").stdout)
        attributes = volume["spec"]["csi"]["volumeAttributes"]
        assert attributes["authType"] == "rrsa" and attributes["roleName"] == ROLE, attributes
        assert "nodePublishSecretRef" not in volume["spec"]["csi"]
    # No AccessKey anywhere: no Secret of OSS credentials, and the Jobs that upload run as the
    # annotated ServiceAccount without one.
    assert not [s for s in cp.objects("secrets", "-n", NAMESPACE) if "oss" in s["metadata"]["name"]]
    jobs = [j for j in cp.objects("jobs", "-n", NAMESPACE)
            if j["metadata"].get("labels", {}).get("rlgen.io/bucket-writer") == "true"]
    assert jobs and all(j["status"].get("succeeded", 0) >= 1 for j in jobs)
    for job in jobs:
        spec = job["spec"]["template"]["spec"]
        assert spec["serviceAccountName"] == "dataset-pipeline"
        secrets = {e["valueFrom"]["secretKeyRef"]["name"] for c in spec["containers"] for e in c.get("env", [])
                   if "secretKeyRef" in e.get("valueFrom", {})}
        assert not {s for s in secrets if "oss" in s}, secrets


def test_doctor_on_the_addon_cluster(second_control_plane, ack_synced):
    """doctor with nothing of ACK's webhook installed: the claims Bound, no AccessKey Secret asked
    for, and the RRSA webhook named as what is missing."""
    result = run_rlgen("doctor", "--kubeconfig", str(second_control_plane.kubeconfig), "-o", "json",
                       cwd=ack_synced["repo"])
    rows = {r["check"]: r for r in json.loads(result.stdout)["rows"]}
    problems = {c: r for c, r in rows.items() if r["state"] not in ("ok", "skipped")}
    assert result.returncode == 1 and set(problems) == {"RRSA webhook"}, problems
    assert problems["RRSA webhook"]["fix"] == "install the ack-pod-identity-webhook add-on"
    claims = [c for c in rows if c.startswith("PersistentVolumeClaim ")]
    assert len(claims) == 3, rows
    assert f"Secret {NAMESPACE}/oss-credentials" not in rows
