"""``rlgen e2e`` on repositories whose plugins render kinds beyond KubeRay's and the sync engine's,
each on a fresh control plane of its own, as a team's CI runs it: Kueue queues a run the quota
has no room for (suspended) and admits the other, External Secrets fills every Secret from the
KMS stand-in, the RRSA webhook gives the dataset Jobs' pods their role, and ACK's add-on objects
complete the partial ones the repository applies. The four plugins alone with Flux, and all of
them together with Argo CD."""
from __future__ import annotations

import subprocess

import pytest
from support.argocd import redis_server
from support.e2e_command import e2e, installed_programs, leftovers
from support.flux import REGISTRY
from support.repos import INSTALL, POOL, ok, run_rlgen, storage_answers

KUEUE = ("--plugin", "kueue", "--set", "kueue.gpu_quota=8")
ACCOUNT = "acs:ram::1234567890123456"
EXTERNAL_SECRETS = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
                    "--set", f"external-secrets.role_arn={ACCOUNT}:role/rlgen-external-secrets",
                    "--set", f"external-secrets.oidc_provider_arn={ACCOUNT}:oidc-provider/ack-rrsa-c0ffee")
MARKETPLACE = ("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.rl-team.cn")
RRSA = ("--plugin", "rrsa-storage", *storage_answers("rrsa-storage"), "--set", "rrsa-storage.role_name=rl-oss-volumes")

#: What each plugin's repository shows in the job summary: a line of what served it, a doctor row.
SERVED = {
    "kueue": ["- serving: Kueue v", "| Kueue RayJob webhook | ok |", "admitted by ClusterQueue"],
    "external-secrets": ["- serving: External Secrets v", "| ClusterSecretStore alibaba-kms | ok |"],
    "marketplace-sandbox": ["- serving: ALB Ingress controller's AlbConfig alb as ACK's console creates it",
                            "- serving: the add-on's Ingress sandbox-system/sandbox-manager, its ALB address",
                            "- not checked here: SandboxSet (agents.kruise.io/v1alpha1): its pinned CRD installed"],
    "rrsa-storage": ["- serving: ack-pod-identity-webhook stand-in",
                     "| RRSA webhook | ok | MutatingWebhookConfiguration ack-pod-identity-webhook |",
                     "- RRSA credentials given to "],
}
FLUX = ("source-controller", "kustomize-controller", "notification-controller", "flux")
#: Each case: its plugins, and the programs its e2e workflow installs besides the control plane's.
CASES = {
    "kueue": (KUEUE, (*FLUX, "kueue")),
    "external-secrets": (EXTERNAL_SECRETS, (*FLUX, "external-secrets")),
    "marketplace-sandbox": (MARKETPLACE, FLUX),
    "rrsa-storage": (RRSA, FLUX),
}


def repository(git_server, path, plugins) -> None:
    answers = () if "rrsa-storage" in plugins else storage_answers()
    ok(run_rlgen("new", str(path), "--no-input", "--set", f"rlgen.registry={REGISTRY}",
                 "--set", "rlgen.git_url=https://git.rl.test/team/rl-kinds.git", "--set", "rlgen.git_host=github",
                 "--set", f"rlgen.install={INSTALL}",
                 "--set", f"rlgen.upstream_mirror={git_server.base}", *POOL, *answers, *plugins))


@pytest.mark.parametrize("case", list(CASES))
def test_the_plugins_kinds_are_served_and_the_repository_passes(case, git_server, tmp_path):
    plugins, programs_needed = CASES[case]
    repo = tmp_path / "repo"
    repository(git_server, repo, plugins)
    if "kueue" in plugins:
        # A second run of one whole node: the quota (one node's GPUs) admits one, the other waits.
        ok(run_rlgen("run", "new", "second", "--no-branch", cwd=repo))
    if "argocd" in programs_needed:
        redis_server()  # the runner's own, as the workflow installs it
    env = installed_programs(repo, tmp_path / "tools", programs_needed)
    (tmp_path / "run").mkdir()
    result, summary, seconds = e2e(repo, env, tmp_path / "run")
    assert result.returncode == 0, result.stdout + result.stderr
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=7", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert summary.startswith(f"## rlgen e2e passed: clusters/production/ at {head}"), summary
    for plugin, lines in SERVED.items():
        if f"--plugin {plugin}" in " ".join(plugins):
            for line in lines:
                assert line in summary, (line, summary)
    # Only the kinds named are not checked: every other stage and kind is served.
    unchecked = [line for line in summary.splitlines() if line.startswith("- not checked here: ")]
    assert unchecked == ([SERVED["marketplace-sandbox"][2] + " (agents.kruise.io_sandboxsets.yaml), no controller "
                          "of it runs"] if "marketplace-sandbox" in " ".join(plugins) else []), unchecked
    assert "| False |" not in summary and "| problem |" not in summary, summary
    if "kueue" in plugins:
        assert "queued: 1 of 1 in LocalQueue " in summary, summary
    assert leftovers(tmp_path / "run") == []
    print(f"rlgen e2e, {case}: {seconds:.0f} s")
