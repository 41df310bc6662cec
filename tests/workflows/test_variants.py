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
    "argo": {"e2e.yaml"},   # Argo CD's build (GOTOOLCHAIN) and Redis (tests/workflows/test_e2e_job.py)
    "kueue": {"e2e.yaml"},  # GPU_NODES: the queue's quota in nodes (tests/workflows/test_e2e_job.py)
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


def test_the_pool_nodes_answered_are_the_e2e_pool(generate):
    # The node pool's own size, when the team says it, whatever the queue's quota.
    text = (generate(*VARIANTS["kueue"], "--set", "rlgen.pool_nodes=3") / ".github" / "workflows" / "e2e.yaml").read_text()
    assert 'GPU_NODES: "3"' in text and "rlgen.pool_nodes, the node pool's" in text
