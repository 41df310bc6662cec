"""A repository rendered when the Ray head's NetworkPolicy shut the KubeRay operator out gets the
operator's rule, and the namespace it admits recorded, from rlgen update."""
from __future__ import annotations

from rlgen.tools import yamlio
from rlgen_plugins._sandbox_common import SANDBOX_IMAGE
from support.repos import git, ok, rlgen_in
from support.updates import status

POLICY = "components/opensource-sandbox/platform/ray-dashboard-network-policy.yaml"
#: The head's ingress as rlgen rendered it before: the dashboard from the run's namespace only,
#: every other port to anyone through endPort ranges.
OLD_INGRESS = [
    {"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 8265}]},
    {"ports": [{"protocol": "TCP", "port": 1, "endPort": 8264}, {"protocol": "TCP", "port": 8266, "endPort": 65535},
               {"protocol": "UDP", "port": 1, "endPort": 65535}]},
]


def _as_rendered_before(repo):
    """Rewrite the repository's one commit (rlgen new's render) as that older rlgen made it."""
    policy = yamlio.load((repo / POLICY).read_text())
    policy["spec"]["ingress"] = OLD_INGRESS
    (repo / POLICY).write_text(yamlio.dump(policy))
    answers = (repo / "rlgen.yaml").read_text()
    recorded = (f"  opensource-sandbox:\n    sandbox_image: {SANDBOX_IMAGE}\n"
                "    kuberay_namespace: kuberay-system\n")
    assert recorded in answers
    (repo / "rlgen.yaml").write_text(answers.replace(recorded, ""))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "--amend", "--no-edit")
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


def test_update_adds_the_operators_rule_and_records_its_namespace(repo):
    _as_rendered_before(repo)

    ok(rlgen_in(repo, "update"))

    ingress = yamlio.load((repo / POLICY).read_text())["spec"]["ingress"]
    assert {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kuberay-system"}}}],
            "ports": [{"protocol": "TCP", "port": 8265}]} in ingress
    assert not any("endPort" in p for rule in ingress for p in rule.get("ports", []))
    assert yamlio.load((repo / "rlgen.yaml").read_text())["options"]["opensource-sandbox"] == {
        "kuberay_namespace": "kuberay-system", "sandbox_image": SANDBOX_IMAGE}
    assert status(repo) == ""


def test_update_moves_the_rule_to_the_namespace_the_operator_runs_in(repo):
    ok(rlgen_in(repo, "update", "--set", "opensource-sandbox.kuberay_namespace=ray-system"))

    text = (repo / POLICY).read_text()
    assert "kubernetes.io/metadata.name: ray-system" in text and "kuberay-system" not in text
    assert "`ray-system`" in (repo / "README.md").read_text()
