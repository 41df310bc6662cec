"""A second cluster of an external-secrets repository, on a control plane of its own: ``rlgen
cluster add staging --env staging`` with staging's own RRSA OIDC provider, role and KMS region,
merged and pushed, then staging bootstrapped with the README's command for it. The KMS and STS
stand-ins know only staging's provider and role, as a second ACK cluster's account does: its
secrets stage is Ready only if staging's ClusterSecretStore names its own provider, and every
later stage waits for it."""
from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest
from ruamel.yaml import YAML
from rlgen.e2e.alibaba_kms import AlibabaCloud
from support.controlplane import free_port, wait_until
from support.flux import GIT_PASSWORD, REGISTRY, SYNC_TIMEOUT, kustomizations, readme_blocks, ready
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers
from support.toolchain import module_dir, tool

pytestmark = pytest.mark.usefixtures("dump_second_on_failure")

ESO = "github.com/external-secrets/external-secrets"
ACCOUNT = "1234567890123456"
PRODUCTION = {"region": "cn-hangzhou", "role_arn": f"acs:ram::{ACCOUNT}:role/rlgen-eso",
              "oidc_provider_arn": f"acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-c0ffee"}
STAGING = {"region": "cn-beijing", "role_arn": f"acs:ram::{ACCOUNT}:role/rlgen-eso-staging",
           "oidc_provider_arn": f"acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-beef02"}
OPERATOR_NAMESPACE = "external-secrets"
NS = "rl-training"


def sets(answers: dict[str, str]) -> list[str]:
    return [a for k, v in answers.items() for a in ("--set", f"external-secrets.{k}={v}")]


@pytest.fixture(scope="module")
def staging_cloud(second_control_plane, tmp_path_factory):
    """External Secrets' CRDs and controller on the staging cluster, its ServiceAccount's RRSA
    token in a file, and the STS and KMS of staging's account: its region, role and provider."""
    cp = second_control_plane
    workdir = tmp_path_factory.mktemp("staging-cloud")
    crds = sorted((module_dir("external-secrets", ESO) / "config" / "crds" / "bases").glob("*.io_*.yaml"))
    files = [arg for crd in crds for arg in ("-f", str(crd))]
    cp.kubectl("apply", "--server-side", *files)
    cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", *files)
    cp.kubectl("create", "namespace", OPERATOR_NAMESPACE)
    cp.kubectl("create", "serviceaccount", "external-secrets", "-n", OPERATOR_NAMESPACE)
    token = workdir / "oidc-token"
    token.write_text(cp.kubectl("create", "token", "external-secrets", "-n", OPERATOR_NAMESPACE,
                                "--audience", "sts.aliyuncs.com", "--duration", "2h").stdout.strip())
    with AlibabaCloud(workdir, STAGING["region"], STAGING["role_arn"], STAGING["oidc_provider_arn"],
                      f"{OPERATOR_NAMESPACE}/external-secrets") as cloud:
        cp.spawn("external-secrets", [
            tool("external-secrets"), "--metrics-addr", f"127.0.0.1:{free_port()}",
            "--live-addr", f"127.0.0.1:{free_port()}",
        ], env={**cp.env(), **cloud.env()})
        yield cloud, token


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def staging(second_control_plane, staging_cloud, git_server, tmp_path_factory):
    cp, (cloud, token) = second_control_plane, staging_cloud
    url = git_server.create("team/rl-repo-two-clusters.git")
    repo = tmp_path_factory.mktemp("two-clusters") / "rl-repo"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}",
                 "--set", f"rlgen.upstream_mirror={git_server.base}", *storage_answers(),
                 "--plugin", "external-secrets", *sets(PRODUCTION),
                 "--set", f"external-secrets.oidc_token_file={token}"))
    git(repo, "remote", "add", "origin", url)
    git(repo, "push", "--quiet", "-u", "origin", "HEAD:main")
    # The update branch rlgen makes, reviewed and merged as a pull request would be.
    ok(run_rlgen("cluster", "add", "staging", "--env", "staging", "--no-input", *sets(STAGING), cwd=repo))
    branch = git(repo, "branch", "--show-current").strip()
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge {branch}", branch)
    git(repo, "push", "--quiet", "origin", "main")

    listed = json.loads(ok(run_rlgen("secret", "list", "-o", "json", cwd=repo)))["secrets"]
    values = {(s["namespace"], s["name"]): {k: f"{s['name']}-{k}-staging" for k in s["keys"]} for s in listed
              if (s["namespace"], s["name"]) != (NS, "hf-token")}
    for (ns, name), data in values.items():
        cloud.secrets[f"rlgen-{ns}-{name}"] = json.dumps(data)

    # The README's bootstrap for staging, as *Clusters and environments* gives it.
    (block,) = [b for b in readme_blocks((repo / "README.md").read_text(), "Clusters and environments")
                if "--path=clusters/staging " in b]
    wrapper = f'flux() {{ "{tool("flux")}" "$@" --allow-insecure-http; }}\n'
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", wrapper + block], cwd=repo, capture_output=True,
                            text=True, env={**os.environ, **cp.env(), "GIT_PASSWORD": GIT_PASSWORD})
    assert result.returncode == 0, f"staging's bootstrap fails:\n{block}\n{result.stdout}{result.stderr}"
    stages = wait_until(
        "every Flux Kustomization of staging Ready", lambda: (ks := kustomizations(cp)) and len(ks) > 4 and all(
            (r := ready(k)) and r["status"] == "True" for k in ks.values()) and ks,
        timeout=SYNC_TIMEOUT, interval=2,
        on_timeout=lambda: "\n".join(f"{n}: {ready(k)}" for n, k in kustomizations(cp).items())
        + "\n".join(cloud.calls[-20:]) + cp.logs(30))
    return {"repo": repo, "stages": stages, "values": values}


def test_staging_syncs_its_secrets_with_its_own_provider_and_every_later_stage(second_control_plane, staging,
                                                                                 staging_cloud):
    cp, (cloud, _) = second_control_plane, staging_cloud
    stages = staging["stages"]
    assert {"secrets", "sandbox-operator", "sandbox-manager", "platform", "runs"} <= set(stages)
    assert stages["flux-system"]["spec"]["path"] == "./clusters/staging"
    assert stages["platform"]["spec"]["path"] == "./overlays/staging/platform"
    store = json.loads(cp.kubectl("get", "clustersecretstore", "alibaba-kms", "-o", "json").stdout)
    alibaba = store["spec"]["provider"]["alibaba"]
    assert alibaba["regionID"] == STAGING["region"]
    assert alibaba["auth"]["rrsa"]["roleArn"] == STAGING["role_arn"]
    assert alibaba["auth"]["rrsa"]["oidcProviderArn"] == STAGING["oidc_provider_arn"]
    for (ns, name), data in staging["values"].items():
        secret = json.loads(cp.kubectl("get", "secret", name, "-n", ns, "-o", "json").stdout)
        assert {k: base64.b64decode(v).decode() for k, v in secret["data"].items()} == data, f"{ns}/{name}"
    assert any(c.startswith("sts.aliyuncs.com POST AssumeRoleWithOIDC") for c in cloud.calls)
    assert any(c.startswith(f"kms.{STAGING['region']}.aliyuncs.com GET GetSecretValue") for c in cloud.calls)
    assert not cloud.refused


def test_production_keeps_its_own_answers(staging):
    """What production's entry points sync is unchanged: the shared store names production's."""
    repo = staging["repo"]
    (store,) = [d for p in (repo / "secrets").rglob("*.yaml") for d in YAML(typ="safe").load_all(p.read_text())
                if d and d.get("kind") == "ClusterSecretStore"]
    assert store["spec"]["provider"]["alibaba"]["auth"]["rrsa"]["oidcProviderArn"] == PRODUCTION["oidc_provider_arn"]
    assert STAGING["role_arn"] not in "".join(p.read_text() for p in (repo / "clusters" / "production").rglob("*.yaml"))


def test_doctor_and_status_of_staging_read_its_cluster(second_control_plane, staging):
    cp, repo = second_control_plane, staging["repo"]
    doctor = run_rlgen("doctor", "--cluster", "staging", "--kubeconfig", str(cp.kubeconfig), "-o", "json", cwd=repo)
    rows = {r["check"]: r for r in json.loads(doctor.stdout)["rows"]}
    assert rows["ClusterSecretStore alibaba-kms"]["state"] == "ok", rows["ClusterSecretStore alibaba-kms"]
    problems = [r for r in rows.values() if r["state"] not in ("ok", "skipped")]
    assert doctor.returncode == 0 and not problems, json.dumps(problems, indent=1)
    status = run_rlgen("status", "--cluster", "staging", "--wait", "--timeout", "3m", "--interval", "2",
                       "--kubeconfig", str(cp.kubeconfig), "-o", "json", cwd=repo)
    assert status.returncode == 0, status.stdout + status.stderr
