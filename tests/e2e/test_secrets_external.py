"""The external-secrets variant synced by Flux on a control plane of its own, with the real
External Secrets controller (built from its module, run as a process) reading Alibaba Cloud KMS
Secrets Manager through RRSA: the STS and KMS stand-ins of ``rlgen.e2e.alibaba_kms``, reached
through a proxy and CA the test sets up, as the controller's SDKs would reach the cloud.

First a required Secret is missing from KMS: the secrets stage does not become Ready, and
``rlgen doctor`` and ``rlgen status`` name it. Once it is stored, every stage is Ready with the
values stored, while the optional Hugging Face token stays absent from KMS and MLflow's Secret
holds only the key its server needs."""
from __future__ import annotations

import base64
import json
import subprocess
import time

import pytest
from rlgen.e2e.alibaba_kms import AlibabaCloud
from support.controlplane import free_port, wait_until
from support.flux import REGISTRY, SYNC_TIMEOUT, bootstrap, fetch, kustomizations, ready
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers
from support.toolchain import module_dir, tool

pytestmark = pytest.mark.usefixtures("dump_second_on_failure")

ESO = "github.com/external-secrets/external-secrets"
REGION = "cn-hangzhou"
ROLE = "acs:ram::1234567890123456:role/rlgen-external-secrets"
OIDC_PROVIDER = "acs:ram::1234567890123456:oidc-provider/ack-rrsa-c0ffee"
OPERATOR_NAMESPACE = "external-secrets"
NS = "rl-training"


@pytest.fixture(scope="module")
def alibaba(second_control_plane, tmp_path_factory):
    """External Secrets' CRDs installed and its controller running as a process with RRSA: the
    ServiceAccount token a projected volume would hold (audience sts.aliyuncs.com) in a file."""
    cp = second_control_plane
    workdir = tmp_path_factory.mktemp("alibaba")
    crds = sorted((module_dir("external-secrets", ESO) / "config" / "crds" / "bases").glob("*.io_*.yaml"))
    files = [arg for crd in crds for arg in ("-f", str(crd))]
    cp.kubectl("apply", "--server-side", *files)
    cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", *files)
    cp.kubectl("create", "namespace", OPERATOR_NAMESPACE)
    cp.kubectl("create", "serviceaccount", "external-secrets", "-n", OPERATOR_NAMESPACE)
    token = workdir / "oidc-token"
    token.write_text(cp.kubectl("create", "token", "external-secrets", "-n", OPERATOR_NAMESPACE,
                                "--audience", "sts.aliyuncs.com", "--duration", "2h").stdout.strip())
    with AlibabaCloud(workdir, REGION, ROLE, OIDC_PROVIDER, f"{OPERATOR_NAMESPACE}/external-secrets") as cloud:
        cp.spawn("external-secrets", [
            tool("external-secrets"), "--metrics-addr", f"127.0.0.1:{free_port()}",
            "--live-addr", f"127.0.0.1:{free_port()}", "--loglevel", "debug",
        ], env={**cp.env(), **cloud.env()})
        yield cloud, token


def rlgen(cp, repo, *args: str):
    result = run_rlgen(*args, "--kubeconfig", str(cp.kubeconfig), "-o", "json", cwd=repo)
    assert result.returncode != 70, result.stderr
    return result


def doctor_rows(cp, repo) -> dict[str, dict]:
    return {r["check"]: r for r in json.loads(rlgen(cp, repo, "doctor").stdout)["rows"]}


def secret_data(cp, namespace: str, name: str) -> dict[str, str] | None:
    found = cp.kubectl("get", "secret", name, "-n", namespace, "-o", "json", check=False)
    if found.returncode:
        return None
    return {k: base64.b64decode(v).decode() for k, v in (json.loads(found.stdout).get("data") or {}).items()}


def external_secret_ready(cp, namespace: str, name: str) -> dict | None:
    found = cp.kubectl("get", "externalsecret", name, "-n", namespace, "-o", "json", check=False)
    return ready(json.loads(found.stdout)) if found.returncode == 0 else None


def test_external_secrets_sync_from_kms_and_an_optional_secret_blocks_nothing(
        second_control_plane, alibaba, git_server, tmp_path):
    cp, (cloud, token) = second_control_plane, alibaba
    url = git_server.create("team/rl-repo-external-secrets.git")
    repo = tmp_path / "rl-repo"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}",
                 "--set", f"rlgen.upstream_mirror={git_server.base}", *storage_answers(),
                 "--plugin", "mlflow", "--set", "mlflow.tracking_uri=http://mlflow.mlops.svc.cluster.local:5000",
                 "--plugin", "external-secrets", "--set", f"external-secrets.region={REGION}",
                 "--set", f"external-secrets.role_arn={ROLE}",
                 "--set", f"external-secrets.oidc_provider_arn={OIDC_PROVIDER}",
                 "--set", f"external-secrets.oidc_token_file={token}",
                 # A required Secret missing fails the secrets stage after this long, not 60 minutes.
                 "--set", "flux.platform_timeout=90s"))
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "remote", "add", "origin", url], check=True)
    subprocess.run([*git, "push", "--quiet", "-u", "origin", "HEAD:main"], check=True, capture_output=True)

    listed = json.loads(ok(run_rlgen("secret", "list", "-o", "json", cwd=repo)))["secrets"]
    values = {(s["namespace"], s["name"]): {k: f"{s['name']}-{k}-e2e" for k in s["keys"]} for s in listed}
    kms = {(ns, name): f"rlgen-{ns}-{name}" for ns, name in values}
    # The optional token is not stored at all; MLflow's server takes a token, not a password.
    del values[(NS, "hf-token")]
    values[(NS, "mlflow-credentials")] = {"token": "mlflow-token-e2e"}
    missing = (NS, "sandbox-api-key")
    for key, data in values.items():
        if key != missing:
            cloud.secrets[kms[key]] = json.dumps(data)

    bootstrap(cp, repo, url, "main", "clusters/production")
    wait_until("the secrets stage to fail on the missing Secret", lambda: (
        (r := ready(kustomizations(cp).get("secrets") or {})) and r["status"] == "False" and r),
        timeout=SYNC_TIMEOUT, interval=2, on_timeout=lambda: "\n".join(cloud.calls[-20:]) + cp.logs(30))
    assert "ExternalSecret/rl-training/sandbox-api-key" in ready(kustomizations(cp)["secrets"])["message"]
    assert secret_data(cp, NS, "oss-credentials") == values[(NS, "oss-credentials")]

    row = doctor_rows(cp, repo)[f"Secret {NS}/sandbox-api-key"]
    assert row["state"] == "problem", row
    assert row["detail"].startswith(f"missing: ExternalSecret {NS}/sandbox-api-key not synced: "), row
    assert kms[missing] in row["detail"] and "rlgen secret set sandbox-api-key" in row["fix"], row
    status = rlgen(cp, repo, "status", "--wait", "--timeout", "60s", "--interval", "2")
    assert status.returncode == 1, status.stdout + status.stderr
    assert "Kustomization secrets failed" in status.stderr and \
        "ExternalSecret/rl-training/sandbox-api-key" in status.stderr, status.stderr

    cloud.secrets[kms[missing]] = json.dumps(values[missing])
    # What a user who will not wait for the refresh interval does.
    cp.kubectl("annotate", "--overwrite", "externalsecret", "sandbox-api-key", "-n", NS,
               f"force-sync={time.time_ns()}")
    # `flux reconcile`: a failed stage is retried only after its interval otherwise.
    fetch(cp)
    stages = wait_until(
        "every Flux Kustomization Ready", lambda: (ks := kustomizations(cp)) and len(ks) > 4 and all(
            (r := ready(k)) and r["status"] == "True" for k in ks.values()) and ks,
        timeout=SYNC_TIMEOUT, interval=2,
        on_timeout=lambda: "\n".join(f"{n}: {ready(k)}" for n, k in kustomizations(cp).items()) + cp.logs(30))
    assert {"secrets", "optional-secrets", "sandbox-operator", "sandbox-manager", "platform", "runs"} <= set(stages)

    for (ns, name), data in values.items():
        assert secret_data(cp, ns, name) == data, f"{ns}/{name}"
    # Nothing waits for the optional token: its ExternalSecret fails, and only it.
    assert secret_data(cp, NS, "hf-token") is None
    assert external_secret_ready(cp, NS, "hf-token")["status"] == "False"
    assert stages["optional-secrets"]["spec"]["wait"] is False
    rows = doctor_rows(cp, repo)
    assert rows[f"Secret {NS}/hf-token"]["state"] == "ok" and rows[f"Secret {NS}/hf-token"]["detail"] == \
        "absent (optional)"
    assert rows[f"Secret {NS}/sandbox-api-key"]["state"] == "ok"
    assert rows["ClusterSecretStore alibaba-kms"]["state"] == "ok", rows["ClusterSecretStore alibaba-kms"]
    # The controller reached the cloud only through STS and KMS, signed and with RRSA credentials.
    assert any(c.startswith("sts.aliyuncs.com POST AssumeRoleWithOIDC") for c in cloud.calls)
    assert f"kms.{REGION}.aliyuncs.com GET GetSecretValue {kms[missing]}" in cloud.calls
    assert not cloud.refused
