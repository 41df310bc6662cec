"""The generated README's First sync as a runbook: its steps in order, the versions rlgen's tests
run, the bootstrap's credentials, and no placeholder for a value rlgen was given."""
from __future__ import annotations

import json
import re

import pytest
from rlgen.tools.toolchain_pins import tested_version as pinned_release
from ruamel.yaml import YAML
from support.repos import rlgen_in, ok
from support.runbook import placeholders, shown
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


#: The words of a placeholder that stand for an answer (or a fact read from one), and whether a
#: repository's rlgen.yaml holds it; the more specific first ("cluster id" before "cluster").
FACTS = (
    (("account",), lambda a: ARN.search(str(a))),
    (("cluster", "id"), lambda a: "oidc-provider/ack-rrsa-" in str(a)),
    (("oidc",), lambda a: "oidc-provider/" in str(a)),
    (("cluster",), lambda a: True),
    (("namespace",), lambda a: True),
    (("branch",), lambda a: True),
    (("bucket",), lambda a: "'bucket'" in str(a)),
    (("region",), lambda a: "'region'" in str(a)),
    (("registry",), lambda a: True),
    (("role",), lambda a: "'role_" in str(a)),
    (("git",), lambda a: True),
    (("repository",), lambda a: True),
    (("remote",), lambda a: True),
    (("mirror",), lambda a: a["rlgen"].get("upstream_mirror")),
    (("domain",), lambda a: "'domain'" in str(a)),
    (("quota",), lambda a: "'gpu_quota'" in str(a)),
    (("pool",), lambda a: True),
)
ARN = re.compile(r"acs:ram::\d+:")
#: A placeholder with one of these words asks for a credential, which rlgen never holds.
CREDENTIAL = {"password", "token", "key", "secret", "akid", "aksecret", "username"}


def known_fact(placeholder: str, answers: dict) -> str | None:
    """The answer ``placeholder`` stands for when rlgen has it, else None."""
    words = set(re.split(r"[^a-z0-9]+", placeholder.lower()))
    if words & CREDENTIAL:
        return None
    # The most specific fact named decides: "<cluster-id>" is never the cluster's name.
    fact, held = next(((f, h) for f, h in FACTS if set(f) <= words), ((), None))
    return " ".join(fact) if held and held(answers) else None


def named_placeholders(repo) -> list[tuple[str, str, str]]:
    """(placeholder, the answer rlgen holds for it, the block's first line) of every First sync
    block, the sections its steps link to included."""
    answers = YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["options"]
    return [(p, fact, f"{b.section}: {b.first_line}") for b in shown((repo / "README.md").read_text())
            for p in placeholders(b.text) if (fact := known_fact(p, answers))]


CN = ("--set", "rlgen.region=cn-shanghai", "--set", "rlgen.upstream_mirror=https://git.rl-team.cn/mirrors")
FLUX_CN = (*CN, "--set", "flux.image_registry=registry.cn-shanghai.aliyuncs.com/rl-mirrors/fluxcd")


@pytest.mark.parametrize("args", [
    (), ("--set", "rlgen.git_url=ssh://git@github.com/my-org/rl-repo.git"), (*ESO, *RRSA),
    (*ESO, "--plugin", "kueue", "--set", "kueue.gpu_quota=16", "--set", "kueue.teams=research"), (*RRSA, "--plugin", "argo", *CN), FLUX_CN,
], ids=["default", "ssh", "external-secrets-rrsa", "kueue", "argo-china", "china"])
def test_no_first_sync_block_shows_a_placeholder_for_a_value_rlgen_knows(generate, args):
    """Every block a First sync reader runs or copies (its steps', and the sections they link to:
    installs, trust policies, Secrets, bootstrap) names the account, cluster id, bucket, region,
    registry, role and URL rlgen was given, never a <placeholder> or $VARIABLE for them."""
    assert named_placeholders(generate(*args)) == []


def test_a_second_clusters_blocks_name_its_own_answers(generate, tmp_path):
    repo = copy_of(generate, tmp_path, *ESO)
    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch", "--no-input",
                "--set", "external-secrets.region=cn-beijing",
                "--set", f"external-secrets.role_arn=acs:ram::{ACCOUNT}:role/eso-staging",
                "--set", f"external-secrets.oidc_provider_arn=acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-beef02"))
    assert named_placeholders(repo) == []


def test_a_value_rlgen_does_not_know_stays_a_placeholder_it_names(generate):
    """rrsa-storage alone has a role name, not the cluster's OIDC provider: its trust policy keeps
    the account and cluster id to fill in (the placeholders the check above would refuse once
    rlgen knows them), and given the provider's ARN (external-secrets asks it) they are filled."""
    alone = [(b.section, p) for b in shown((generate(*RRSA) / "README.md").read_text()) for p in placeholders(b.text)]
    assert ("Storage: OSS with RRSA", "<account-id>") in alone and ("Storage: OSS with RRSA", "<cluster-id>") in alone
    answers = {"rlgen": {}, "rrsa-storage": {"role_name": "rl-oss"}}
    assert known_fact("<cluster-id>", answers) is None and known_fact("<account-id>", answers) is None
    given = {**answers, "external-secrets": {"oidc_provider_arn": f"acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-x"}}
    assert known_fact("<cluster-id>", given) == "cluster id" and known_fact("<account-id>", given) == "account"


def test_trust_policies_name_the_provider_rlgen_was_given(generate):
    """The account and the cluster id are in the OIDC provider's ARN rlgen was given: every role's
    trust policy names them."""
    readme = (generate(*ESO, *RRSA) / "README.md").read_text()
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


def test_a_second_cluster_creates_its_own_role_and_adds_its_provider_to_a_shared_one(generate, tmp_path):
    """Staging's own external-secrets role trusts staging's OIDC provider; the OSS role both
    clusters use keeps production's provider and gains staging's (UpdateRole: it exists)."""
    repo = copy_of(generate, tmp_path, *ESO, *RRSA)
    staging = f"acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-beef02"
    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch", "--no-input",
                "--set", "external-secrets.region=cn-beijing", "--set", f"external-secrets.role_arn=acs:ram::{ACCOUNT}:role/eso-st",
                "--set", f"external-secrets.oidc_provider_arn={staging}"))
    clusters = section((repo / "README.md").read_text(), "Clusters and environments")
    production, roles, update, bootstrap = blocks(clusters)
    assert "aliyun" not in production and "--path=clusters/staging " in bootstrap
    created = json.loads(re.search(r"CreateRole --RoleName eso-st --AssumeRolePolicyDocument '([^']*)'", roles)[1])
    assert created["Statement"][0]["Principal"]["Federated"] == [staging]
    assert "acs:kms:cn-beijing:" in roles
    shared = json.loads(re.search(r"UpdateRole --RoleName rl-oss --NewAssumeRolePolicyDocument '([^']*)'", update)[1])
    assert shared["Statement"][0]["Principal"]["Federated"] == [
        f"acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-{CLUSTER_ID}", staging]
