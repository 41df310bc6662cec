"""Which variants change which generated workflow: a variant whose file is byte-identical to
the default's needs no run of its own (the default's run covers it); the others are run."""
from __future__ import annotations

import pytest

WORKFLOWS = ("cluster-status.yaml", "diff.yaml", "e2e.yaml", "images.yaml", "rlgen-update.yaml", "validate.yaml")
ESO = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
       "--set", "external-secrets.role_arn=acs:ram::1234:role/eso",
       "--set", "external-secrets.oidc_provider_arn=acs:ram::1234:oidc-provider/ack-rrsa-c0ffee")
VARIANTS = {
    "argo": ("--plugin", "argo"),
    "kueue": ("--plugin", "kueue", "--set", "kueue.gpu_quota=16"),
    "external-secrets": ESO,
    "marketplace+rrsa": ("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.rl-team.net",
                         "--plugin", "rrsa-storage", "--set", "rrsa-storage.bucket=rl-tests-data",
                         "--set", "rrsa-storage.region=cn-hangzhou", "--set", "rrsa-storage.role_name=rl-oss-reader"),
    "sops": ("--plugin", "sops", "--set", "sops.age_recipients=age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"),
    "gitlab": ("--set", "rlgen.git_url=https://gitlab.com/acme/rl-repo.git"),
    "github-enterprise": ("--set", "rlgen.git_url=https://github.acme-corp.net/ml/rl-repo.git",
                          "--set", "rlgen.git_host=github"),
}
#: The workflows each variant changes, and how (everything else is the default's, byte for byte).
CHANGED = {
    "argo": {"e2e.yaml"},        # Argo CD's build (GOTOOLCHAIN) and Redis
    "kueue": {"e2e.yaml"},       # not checked here: rlgen e2e serves no Kueue
    "external-secrets": {"e2e.yaml"},  # not checked here: rlgen e2e serves no External Secrets
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_variant_changes_only_the_workflows_it_must(generate, variant):
    default = generate() / ".github" / "workflows"
    workflows = generate(*VARIANTS[variant]) / ".github" / "workflows"
    changed = {name for name in WORKFLOWS if (workflows / name).read_bytes() != (default / name).read_bytes()}
    assert changed == CHANGED.get(variant, set()), changed


def test_the_kueue_pool_is_the_quota_in_nodes(generate):
    text = (generate(*VARIANTS["kueue"]) / ".github" / "workflows" / "e2e.yaml").read_text()
    # 16 GPUs of quota in nodes of 8 GPUs: a run the quota admits fits the throwaway pool.
    assert 'GPU_NODES: "2"' in text and "kueue.gpu_quota (16 GPUs)" in text


@pytest.mark.parametrize("variant, says", [("kueue", "Kueue's queues"),
                                           ("external-secrets", "External Secrets' SecretStore and ExternalSecrets")])
def test_an_e2e_rlgen_e2e_cannot_sync_says_not_checked_here_and_passes(generate, runner, variant, says):
    repo = generate(*VARIANTS[variant])
    full = runner.publish(repo, f"rl-{variant}")
    event = runner.pull_request(repo, full, "main", "main")
    job = runner.run(repo / ".github" / "workflows" / "e2e.yaml", "pull_request", full, event)
    assert job.passed, job.log[-3000:]
    assert f"Not checked here: rlgen e2e 0.1.0 does not sync {says}" in job.summary, job.summary
