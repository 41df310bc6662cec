"""rlgen doctor against a recorded-object API server, through the real kubernetes client."""
from __future__ import annotations

import base64

import pytest
from support import cluster_objects as co
from support.cluster import against, closed_port, rows
from support.fake_apiserver import FakeAPIServer
from support.repos import BUCKET, one_error_line, rlgen_in

NS = "rl-training"


def states(result) -> dict[str, str]:
    return {check: row["state"] for check, row in rows(result).items()}


def without(objects, kind, name=None):
    return [o for o in objects if not (o["kind"] == kind and (name is None or o["metadata"]["name"] == name))]


def test_a_healthy_cluster_passes_every_check(generate):
    result, server = against(generate(), co.healthy({"namespace": NS}), "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    found = rows(result)
    # The bucket is asked only with OSS credentials in the environment (tests/doctor/test_doctor_bucket.py).
    assert found[f"bucket {BUCKET}"]["state"] == "skipped"
    assert {state for check, state in states(result).items() if not check.startswith("bucket ")} == {"ok"}
    assert "supports submitterConfig" in found["KubeRay operator"]["detail"]
    assert found["Secret rl-training/oss-credentials"]["detail"] == "keys present: akId, akSecret"
    assert found["Secret rl-training/hf-token"]["detail"] == "absent (optional)"
    assert "node-role.alibabacloud.com/lingjun" in next(r["detail"] for c, r in found.items() if c.startswith("GPU"))
    # The sandbox CRDs come with the first sync (upstream source pinned in infrastructure).
    assert "first sync installs SandboxSet" in found["API agents.kruise.io/v1alpha1"]["detail"]
    assert {"Flux source-controller", "Flux kustomize-controller", "CSI driver ossplugin.csi.alibabacloud.com"} <= set(found)
    # Read-only: every request the client sent was a GET (the server answers nothing else).
    assert all(not p.startswith("/apis/rbac") for p in server.requests)


def test_kubernetes_is_missing_kuberay(generate):
    objects = [o for o in co.healthy({"namespace": NS})
               if not (o["kind"] == "CustomResourceDefinition" and o["spec"]["group"] == "ray.io")]
    result, _ = against(generate(), without(objects, "Deployment", "kuberay-operator"), "doctor")
    assert one_error_line(result, 1).startswith("rlgen: error: 2 problem(s)")
    found = rows(result)
    assert found["API ray.io/v1"]["state"] == "problem"
    assert "install KubeRay >= v1.5.0" in found["API ray.io/v1"]["fix"]
    assert found["KubeRay operator"]["state"] == "problem"
    assert found["KubeRay operator"]["detail"] == "no kuberay-operator Deployment in any namespace"


def test_kuberay_too_old_for_the_submitter_retries(generate):
    """The RayJob's submitter Job retries a dropped log stream (submitterConfig.backoffLimit),
    which a KubeRay before v1.2.0 does not know."""
    objects = without(co.healthy({"namespace": NS}), "Deployment", "kuberay-operator")
    objects.append(co.deployment("kuberay-operator", "kuberay-system", "quay.io/kuberay/operator:v1.1.1"))
    result, _ = against(generate(), objects, "doctor")
    assert one_error_line(result, 1).startswith("rlgen: error: 1 problem(s)")
    row = rows(result)["KubeRay operator"]
    assert row["state"] == "problem" and "v1.1.1 predates submitterConfig (v1.2.0)" in row["detail"]
    assert row["fix"] == "upgrade KubeRay to v1.2.0 or later"


def test_a_missing_secret_key_is_named_and_no_value_is_printed(generate):
    objects = without(co.healthy({"namespace": NS}), "Secret")
    objects.append(co.secret("oss-credentials", NS, {"akId": "recorded-id-value"}))
    result, _ = against(generate(), objects, "doctor")
    one_error_line(result, 1)
    row = rows(result)["Secret rl-training/oss-credentials"]
    assert row["state"] == "problem" and row["detail"] == "missing key(s): akSecret"
    assert "kubectl create secret generic oss-credentials -n rl-training" in row["fix"]
    for text in ("recorded-id-value", base64.b64encode(b"recorded-id-value").decode()):
        assert text not in result.stdout + result.stderr


def test_a_missing_required_secret_says_how_to_create_it(generate):
    result, _ = against(generate(), without(co.healthy({"namespace": NS}), "Secret"), "doctor")
    row = rows(result)["Secret rl-training/oss-credentials"]
    assert row["state"] == "problem" and row["detail"] == "missing"
    assert row["fix"].endswith("--from-literal=akId=... --from-literal=akSecret=...")


def test_a_required_secret_external_secrets_cannot_sync_is_named_with_the_provider_error(generate):
    """External Secrets v1.3.2 (and v0.20.4) sets only "could not get secret data from provider"
    on the ExternalSecret and records the provider's error as a Warning event."""
    import yaml

    from support.repos import REPO

    repo = generate("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
                    "--set", "external-secrets.auth=accesskey")
    crds = [yaml.safe_load((REPO / "upstream" / "crds" / f"external-secrets.io_{plural}.yaml").read_text())
            for plural in ("externalsecrets", "clustersecretstores")]
    error = "key akSecret does not exist in secret rlgen-rl-training-oss-credentials"
    failed = {"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": co.meta("oss-credentials", NS),
              "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "SecretSyncedError",
                                         "message": "could not get secret data from provider"}]}}
    event = {"apiVersion": "v1", "kind": "Event", "metadata": co.meta("oss-credentials.1", NS), "type": "Warning",
             "reason": "UpdateFailed", "message": f"error processing spec.data[1] (key: rlgen-rl-training-oss-credentials), "
                                                  f"err: {error}",
             "involvedObject": {"kind": "ExternalSecret", "name": "oss-credentials", "namespace": NS}}
    store = {"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore", "metadata": co.meta("alibaba-kms"),
             "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    objects = without(co.healthy({"namespace": NS}), "Secret", "oss-credentials") + crds + [failed, event, store]
    result, _ = against(repo, objects, "doctor")
    one_error_line(result, 1)
    found = rows(result)
    row = found["Secret rl-training/oss-credentials"]
    assert row["state"] == "problem"
    assert row["detail"].startswith("missing: ExternalSecret rl-training/oss-credentials not synced: could not get "
                                    "secret data from provider: ") and row["detail"].endswith(error)
    assert row["fix"] == "store akId, akSecret in the secret store (rlgen secret set oss-credentials <key> says where)"
    # The optional token, whose ExternalSecret has nothing to sync, is no problem.
    assert found["Secret rl-training/hf-token"] == {**found["Secret rl-training/hf-token"], "state": "ok",
                                                    "detail": "absent (optional)"}


def test_rbac_forbidden_reads_become_cannot_check_rows(generate):
    result, _ = against(generate(), co.healthy({"namespace": NS}), "doctor", forbidden={"secrets", "nodes"})
    assert "3 check(s) the cluster's RBAC forbids" in one_error_line(result, 1)
    found = rows(result)
    forbidden = {c: r for c, r in found.items() if r["state"] == "cannot check"}
    # The nodes are read twice: for the runs' room, and against the pool answers.
    assert set(forbidden) == {"GPU nodes", "node pool", "Secrets"}
    assert 'nodes is forbidden: User "rlgen-test" cannot list resource "nodes"' in forbidden["GPU nodes"]["detail"]
    assert "rbac/rlgen-reader.yaml" in forbidden["Secrets"]["fix"]
    assert found["KubeRay operator"]["state"] == "ok"


def test_gpu_nodes_with_a_taint_the_run_does_not_tolerate(generate):
    other = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    objects = without(co.healthy({"namespace": NS}), "Node") + [co.gpu_node("gpu-1", taint=other)]
    result, _ = against(generate(), objects, "doctor")
    row = next(r for c, r in rows(result).items() if c.startswith("GPU"))
    assert row["state"] == "problem"
    assert "room for 0 of 1 pod(s) of 8 nvidia.com/gpu" in row["detail"] and "nvidia.com/gpu" in row["detail"]
    assert "taints the RayJob does not tolerate: nvidia.com/gpu" in row["detail"]


def test_rrsa_storage_needs_the_pod_identity_webhook(generate):
    repo = generate("--plugin", "rrsa-storage", "--set", "rrsa-storage.role_name=rl-oss")
    result, _ = against(repo, co.healthy({"namespace": NS}), "doctor")
    assert rows(result)["RRSA webhook"]["state"] == "problem"
    webhook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
               "metadata": co.meta("ack-pod-identity-webhook"),
               "webhooks": [{"name": "pod-identity.alibabacloud.com", "namespaceSelector": {
                   "matchLabels": {"pod-identity.alibabacloud.com/injection": "on"}}}]}
    result, _ = against(repo, co.healthy({"namespace": NS}) + [webhook], "doctor")
    assert rows(result)["RRSA webhook"] == {"check": "RRSA webhook", "state": "ok",
                                            "detail": "MutatingWebhookConfiguration ack-pod-identity-webhook", "fix": ""}


def test_argo_cd_controllers_are_checked_for_an_argo_repository(generate):
    result, _ = against(generate("--plugin", "argo"), co.healthy({"namespace": NS}), "doctor")
    found = rows(result)
    assert found["Argo CD argocd-application-controller"]["detail"] == \
        "no StatefulSet argocd/argocd-application-controller"
    assert found["API argoproj.io/v1alpha1"]["state"] == "problem"
    result, _ = against(generate("--plugin", "argo"), co.healthy({"namespace": NS}) + co.argo(), "doctor")
    assert result.returncode == 0, result.stdout
    assert rows(result)["Argo CD argocd-application-controller"]["state"] == "ok"


def test_an_unreachable_server_is_one_line(generate, tmp_path):
    config = FakeAPIServer().kubeconfig(tmp_path / "config", server=f"http://127.0.0.1:{closed_port()}")
    line = one_error_line(rlgen_in(generate(), "doctor", "--kubeconfig", str(config)))
    assert line.startswith("rlgen: error: cannot reach the cluster at http://127.0.0.1:")
    assert "(context test)" in line and "refused" in line.lower()


def test_a_server_answering_garbage_is_one_line(generate):
    result, _ = against(generate(), [], "doctor", garbage=True)
    line = one_error_line(result)
    assert "did not answer like a Kubernetes API server" in line and "nginx" in line


@pytest.mark.parametrize("content, expected", [
    (None, "no such file"), ("clusters: [", "not a kubeconfig (yaml error at line 1)"),
    ('{"apiVersion": "v1", "kind": "Config"}', "invalid kube-config file")])
def test_a_bad_kubeconfig_is_one_line(generate, tmp_path, content, expected):
    path = tmp_path / "config"
    if content is not None:
        path.write_text(content)
    line = one_error_line(rlgen_in(generate(), "doctor", "--kubeconfig", str(path)))
    assert expected in line.lower(), line


def test_help_says_what_is_read_of_secrets(generate):
    out = rlgen_in(generate(), "doctor", "--help").stdout
    assert "keeps only the key names" in out and "never prints" in out


def test_a_taint_the_run_does_not_tolerate_says_which_nodes_and_both_fixes(generate):
    maintenance = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}
    nodes = [co.gpu_node(f"gpu-{i}") for i in (1, 2)]
    for node in nodes:
        node["spec"]["taints"].append(maintenance)
    result, _ = against(generate(), without(co.healthy({"namespace": NS}), "Node") + nodes, "doctor")
    row = next(r for c, r in rows(result).items() if c.startswith("GPU"))
    assert row["detail"].endswith("taints the RayJob does not tolerate: maintenance (on gpu-1, gpu-2)")
    assert row["fix"] == ("remove the taint if it is not meant to keep runs off (kubectl taint nodes gpu-1 "
                          "maintenance-), or add a toleration of maintenance=true:NoSchedule to the run's pods")


def _claim_names(repo) -> dict[str, str]:
    """Base name -> the name the repository gives the claim (a hash of its immutable fields)."""
    import re

    text = (repo / "base/training/rayjob.yaml").read_text()
    return {m[1]: m[0] for m in re.findall(r"claimName: ((rl-[a-z]+)-[0-9a-f]{7})", text)}


def test_a_claim_that_is_not_bound_names_its_missing_volume(generate):
    names = _claim_names(generate())
    models, datasets = names["rl-models"], names["rl-datasets"]
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": co.meta(models, NS),
             "spec": {"volumeName": models, "accessModes": ["ReadWriteMany"]}, "status": {"phase": "Pending"}}
    result, _ = against(generate(), [*co.healthy({"namespace": NS}), claim], "doctor")
    assert result.returncode == 1
    found = rows(result)
    row = found[f"PersistentVolumeClaim {NS}/{models}"]
    assert row["state"] == "problem"
    assert row["detail"] == f"Pending: pods that mount it stay Pending; its PersistentVolume {models} does not exist"
    assert row["fix"].startswith(f"create the PersistentVolume {models}")
    assert found[f"PersistentVolumeClaim {NS}/{datasets}"]["detail"] == "not created yet: the sync creates it"


def test_a_claim_created_again_names_the_volume_still_reserved_for_the_deleted_one(generate):
    """A claim deleted and created again: its Retain volume is Released, reserved for the old uid."""
    checkpoints = _claim_names(generate())["rl-checkpoints"]
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": co.meta(checkpoints, NS),
             "spec": {"accessModes": ["ReadWriteMany"], "selector": {"matchLabels": {"alicloud-pvname": checkpoints}}},
             "status": {"phase": "Pending"}}
    volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": co.meta(checkpoints),
              "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "namespace": NS, "name": checkpoints,
                                    "uid": "uid-deleted"}, "persistentVolumeReclaimPolicy": "Retain"},
              "status": {"phase": "Released"}}
    result, _ = against(generate(), [*co.healthy({"namespace": NS}), claim, volume], "doctor")
    row = rows(result)[f"PersistentVolumeClaim {NS}/{checkpoints}"]
    assert result.returncode == 1 and row["state"] == "problem"
    assert row["detail"] == (f"Pending: pods that mount it stay Pending; its PersistentVolume {checkpoints} is "
                             f"Released, still reserved for a claim {NS}/{checkpoints} (uid uid-deleted), which no "
                             "longer exists")
    assert row["fix"] == (f"once the data on {checkpoints} may serve this claim, release it: kubectl patch pv "
                          f"{checkpoints} --type=json -p " + "'[{\"op\": \"remove\", \"path\": \"/spec/claimRef\"}]'")


def test_a_sops_repository_needs_the_age_key_secret_of_flux(generate):
    recipient = "age1vngvum279s0kwxpjqddg0rnkt3ckfuuxpp2rf3hddfh9kuq70q7sqyxhuw"
    repo = generate("--plugin", "sops", "--set", f"sops.age_recipients={recipient}")
    result, _ = against(repo, co.healthy({"namespace": NS}), "doctor")
    row = rows(result)["Secret flux-system/sops-age"]
    assert result.returncode == 1 and row["state"] == "problem" and row["detail"] == "missing"
    assert row["fix"] == "kubectl create secret generic sops-age -n flux-system --from-literal=age.agekey=..."
    objects = co.healthy({"namespace": NS}) + [co.secret("sops-age", "flux-system", {"age.agekey": "AGE-SECRET-KEY-1X"})]
    result, _ = against(repo, objects, "doctor")
    assert rows(result)["Secret flux-system/sops-age"]["detail"] == "keys present: age.agekey"
    assert "AGE-SECRET-KEY-1X" not in result.stdout + result.stderr


@pytest.mark.parametrize("args, state", [((), "problem"), (("--batch-scheduler=yunikorn",), "problem"),
                                         (("--batch-scheduler", "volcano"), "ok")])
def test_a_volcano_repository_needs_kuberay_started_with_its_batch_scheduler(generate, args, state):
    operator = co.deployment("kuberay-operator", "kuberay-system", "quay.io/kuberay/operator:v1.7.0", args=args)
    objects = without(co.healthy({"namespace": NS}), "Deployment", "kuberay-operator") + [operator]
    result, _ = against(generate("--set", "rlgen.gang_scheduling=volcano"), objects, "doctor")
    row = rows(result)["gang scheduling"]
    assert row["state"] == state, row
    if state == "problem":
        assert row["fix"] == "start the KubeRay operator with --batch-scheduler=volcano (Helm value batchScheduler.name)"


@pytest.mark.parametrize("command", ["doctor", "status"])
def test_no_kubeconfig_names_the_file_tried_and_the_option(generate, tmp_path, command):
    import os

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    line = one_error_line(rlgen_in(generate(), command, env={**env, "HOME": str(home)}))
    assert str(home / ".kube" / "config") in line and "--kubeconfig" in line, line

    missing = tmp_path / "nowhere" / "config"
    line = one_error_line(rlgen_in(generate(), command, env={**env, "HOME": str(home), "KUBECONFIG": str(missing)}))
    assert str(missing) in line and "KUBECONFIG" in line and "--kubeconfig" in line, line

    broken = home / ".kube" / "config"
    broken.parent.mkdir()
    broken.write_text('{"apiVersion": "v1", "kind": "Config"}')
    line = one_error_line(rlgen_in(generate(), command, env={**env, "HOME": str(home)}))
    assert str(broken) in line and "--kubeconfig" in line, line
