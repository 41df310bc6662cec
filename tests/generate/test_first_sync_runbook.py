"""The generated README's First sync as a runbook: its steps in order, the versions rlgen's tests
run, the bootstrap's credentials, and no placeholder for a value rlgen was given."""
from __future__ import annotations

import json
import re

import pytest
from rlgen.tools.toolchain_pins import tested_version as pinned_release
from support.repos import rlgen_in, ok
from support.updates import copy_of

ACCOUNT, CLUSTER_ID = "1234567890123456", "c0ffee01"
ESO = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
       "--set", f"external-secrets.role_arn=acs:ram::{ACCOUNT}:role/eso",
       "--set", f"external-secrets.oidc_provider_arn=acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-{CLUSTER_ID}")
RRSA = ("--plugin", "rrsa-storage", "--set", "rrsa-storage.bucket=my-team-rl-data",
        "--set", "rrsa-storage.region=cn-hangzhou", "--set", "rrsa-storage.role_name=rl-oss")


def blocks(text: str) -> list[str]:
    return re.findall(r"```(?:sh|json)\n(.*?)```", text, re.S)


def section(readme: str, heading: str) -> str:
    return readme.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]


def test_first_sync_pushes_installs_at_tested_versions_and_ends_on_status(generate):
    readme = (generate() / "README.md").read_text()
    steps = re.findall(r"^### \d+\. (.+)$", section(readme, "First sync"), re.M)
    assert steps == ["Create the remote and push", "Install what the cluster needs", "Build and push the images",
                     "Give the Secrets their values", "Bootstrap the sync engine", "Watch it come up"]
    first = section(readme, "First sync")
    assert "git push -u origin HEAD:main" in first
    assert f"--version {pinned_release('kuberay').removeprefix('v')} --namespace kuberay-system" in first
    assert blocks(first)[-1] == "rlgen status --wait --timeout 15m\n"


def test_flux_bootstrap_has_credentials_by_the_url_scheme(generate):
    https = section((generate("--set", "rlgen.git_url=https://github.com/my-org/rl-repo.git") / "README.md")
                    .read_text(), "Sync: Flux")
    assert "--path=clusters/production --token-auth" in blocks(https)[0] and "GIT_PASSWORD" in blocks(https)[0]
    ssh = section((generate("--set", "rlgen.git_url=ssh://git@github.com/my-org/rl-repo.git") / "README.md")
                  .read_text(), "Sync: Flux")
    assert "--private-key-file=flux-production-deploy-key --silent" in blocks(ssh)[0]
    assert "ssh-keygen" in blocks(ssh)[0] and "write access" in ssh
    # The receiver's exposure admits what Flux's allow-webhooks drops: the webhook port from outside.
    exposed = next(b for b in blocks(https) if "kind: NetworkPolicy" in b)
    assert "cidr: 0.0.0.0/0" in exposed and "port: 9292" in exposed and "type: LoadBalancer" in exposed


def test_no_block_names_a_value_rlgen_knows_as_a_placeholder(generate):
    """The account and the cluster id are in the OIDC provider's ARN rlgen was given: every role's
    trust policy names them, and no command block keeps a <placeholder> for them."""
    readme = (generate(*ESO, *RRSA) / "README.md").read_text()
    for block in blocks(readme):
        assert not re.search(r"<(account|account-id|cluster-id|role|region|bucket)>", block), block
    policies = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", readme, re.S)]
    providers = {p for doc in policies for s in doc["Statement"] for p in s.get("Principal", {}).get("Federated", [])}
    assert providers == {f"acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-{CLUSTER_ID}"}
    subjects = {s["Condition"]["StringEquals"]["oidc:sub"] if isinstance(s["Condition"]["StringEquals"]["oidc:sub"],
                                                                          str) else "list"
                for doc in policies for s in doc["Statement"]}
    assert "system:serviceaccount:external-secrets:external-secrets" in subjects
    # Every role is created with its trust policy; the operator installed at the tested release.
    assert "aliyun ram CreateRole --RoleName eso " in readme and "aliyun ram CreateRole --RoleName rl-oss " in readme
    assert f"--version {pinned_release('external-secrets').removeprefix('v')} --namespace external-secrets" in readme
    first = section(readme, "First sync")
    assert "### 3. Create the RAM roles" in first and "pod-identity-webhook" in first


def test_without_the_provider_the_placeholder_says_where_to_find_it(generate):
    readme = (generate(*RRSA) / "README.md").read_text()
    assert "ack-rrsa-<cluster-id>" in readme and "RRSA OIDC" in readme


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_each_cluster_has_its_exact_bootstrap(generate, tmp_path, sync):
    repo = copy_of(generate, tmp_path, "--plugin", sync)
    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch"))
    clusters = section((repo / "README.md").read_text(), "Clusters and environments")
    production, staging = blocks(clusters)
    assert "clusters/production" in production and "clusters/staging" not in production
    assert staging == production.replace("clusters/production", "clusters/staging").replace(
        "flux-production-deploy-key", "flux-staging-deploy-key")
