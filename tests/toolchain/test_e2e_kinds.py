"""What ``rlgen e2e`` starts for a repository's kinds, read from its rendered objects (no control
plane here; tests/e2e/test_e2e_command_kinds.py runs them): the KMS values External Secrets
reads, the RRSA webhook's patch, the CRDs of kinds nothing serves, the groups a repository names."""
from __future__ import annotations

import json
import subprocess

from rlgen.e2e import crds, external_secrets, pod_identity
from rlgen.e2e.ack_addons import shared
from rlgen.e2e.kinds import groups
from rlgen.e2e.programs import groups_named
from rlgen.kube import needs as needs_mod
from support.repos import ok, run_rlgen

EXTERNAL_SECRETS = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
                    "--set", "external-secrets.role_arn=acs:ram::1234567890123456:role/eso",
                    "--set", "external-secrets.oidc_provider_arn=acs:ram::1234567890123456:oidc-provider/ack-rrsa-c1")
MARKETPLACE = ("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.rl-team.cn")


def test_every_key_an_external_secret_reads_has_a_placeholder_in_kms(generate):
    repo = generate(*EXTERNAL_SECRETS)
    needs = needs_mod.read(repo)
    values = {name: json.loads(v) for name, v in external_secrets.kms_values(needs, "p").items()}
    listed = json.loads(ok(run_rlgen("secret", "list", "-o", "json", cwd=repo)))["secrets"]
    for secret in listed:
        name = f"rlgen-{secret['namespace']}-{secret['name']}"
        assert values[name] == {key: "p" for key in secret["keys"]}, (name, values)
    # No placeholder Secret is made for them: External Secrets creates and owns each.
    assert {(s["namespace"], s["name"]) for s in listed} <= set(needs.external_secrets)


def test_the_rrsa_store_reads_the_runs_token_file_in_a_commit_on_top(generate, tmp_path):
    repo = generate(*EXTERNAL_SECRETS)
    head = _git(repo, "rev-parse", "HEAD")
    token = tmp_path / "token"
    commit, env = external_secrets.stand_in(repo, head, tmp_path / "on-top", token)
    assert commit != head and _git(repo, "rev-parse", "HEAD") == head
    shown = subprocess.run(["git", "-C", str(repo), "show", "--stat", "--format=%s", commit], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert "the RRSA stores read the operator's token" in shown and "1 file changed" in shown, shown
    diff = subprocess.run(["git", "-C", str(repo), "diff", head, commit], env=env, capture_output=True, text=True,
                          check=True).stdout
    assert f"+          oidcTokenFilePath: {token}" in diff, diff
    assert "-          oidcTokenFilePath: /var/run/secrets/tokens/oidc-token" in diff, diff


def _git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_pod_identity_patch_gives_every_container_the_roles_variables_and_token():
    pod = {"spec": {"containers": [{"name": "a"}, {"name": "b", "env": [{"name": "X", "value": "1"}]}],
                    "volumes": [{"name": "data", "emptyDir": {}}]}}
    ops = pod_identity.patch(pod, "rl-oss-pipeline")
    env = [o for o in ops if "/env" in o["path"]]
    assert env[0] == {"op": "add", "path": "/spec/containers/0/env", "value": [
        {"name": "ALIBABA_CLOUD_ROLE_ARN", "value": f"acs:ram::{pod_identity.ACCOUNT}:role/rl-oss-pipeline"},
        {"name": "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "value": pod_identity.OIDC_PROVIDER_ARN},
        {"name": "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "value": "/var/run/secrets/ack.alibabacloud.com/rrsa-tokens/token"}]}
    # A container with variables of its own keeps them: the three are appended.
    assert [o["path"] for o in env[1:]] == ["/spec/containers/1/env/-"] * 3
    volume = ops[-1]
    assert volume["path"] == "/spec/volumes/-"
    assert volume["value"]["projected"]["sources"] == [
        {"serviceAccountToken": {"audience": "sts.aliyuncs.com", "expirationSeconds": 3600, "path": "token"}}]
    # A pod that has them already is left as it is.
    assert pod_identity.patch({"spec": {"containers": [{"name": "a", "env": env[0]["value"]}]}}, "r") == []


def test_a_kind_nothing_serves_gets_a_crd_that_keeps_every_field():
    crd = crds.stand_in_crd("monitoring.coreos.com", "ServiceMonitor", ["v1"], namespaced=True)
    assert crd["metadata"]["name"] == "servicemonitors.monitoring.coreos.com"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-preserve-unknown-fields"] is True
    assert [crds._plural(k) for k in ("Policy", "Gateway", "Ingress", "Box")] == ["policies", "gateways",
                                                                                  "ingresses", "boxes"]
    # The pinned upstream CRDs ship in the package.
    assert crds.shipped_crd("agents.kruise.io", "SandboxSet").name == "agents.kruise.io_sandboxsets.yaml"
    assert crds.shipped_crd("agents.kruise.io", "Nothing") is None


def test_the_addon_objects_and_groups_of_a_marketplace_repository(generate):
    repo = generate(*MARKETPLACE)
    needs = needs_mod.read(repo)
    assert {"alibabacloud.com", "agents.kruise.io"} <= groups(needs)
    assert {"alibabacloud.com", "agents.kruise.io"} <= groups_named(repo)
    ingresses = needs.custom[("networking.k8s.io/v1", "Ingress")]
    assert [i["metadata"]["name"] for i in ingresses if shared(i)] == ["sandbox-manager"]
