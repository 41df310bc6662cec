"""rlgen doctor says when the repository's NetworkPolicies shut the KubeRay operator, where it
runs, out of the Ray head's dashboard; its verdict is the one cyclonus gives the same policies."""
from __future__ import annotations

import copy

import pytest
from support import cluster_objects as co
from support.cluster import against, rows
from support.cyclonus import Pod, allowed
from support.repos import all_objects, one_error_line

NS = "rl-training"
CHECK = "KubeRay -> Ray dashboard"
HEAD = {"ray.io/node-type": "head", "ray.io/is-ray-node": "yes", "ray.io/group": "headgroup"}


def _operator_in(namespace: str) -> list[dict]:
    objects = [o for o in co.healthy({"namespace": NS})
               if not (o["kind"] == "Deployment" and o["metadata"]["name"] == "kuberay-operator")]
    return objects + [co.deployment("kuberay-operator", namespace, "quay.io/kuberay/operator:v1.7.0")]


def test_the_operators_namespace_admitted_is_an_ok_row(generate):
    result, _ = against(generate(), co.healthy({"namespace": NS}), "doctor")
    row = rows(result)[CHECK]
    assert row["state"] == "ok" and "admits kuberay-system/kuberay-operator" in row["detail"], row


def test_an_operator_elsewhere_is_a_problem_with_the_answer_that_fixes_it(generate):
    result, _ = against(generate(), _operator_in("kube-system"), "doctor")
    assert one_error_line(result, 1).startswith("rlgen: error: 1 problem(s)")
    row = rows(result)[CHECK]
    assert row["state"] == "problem" and "shuts kube-system/kuberay-operator out of port 8265" in row["detail"]
    assert "every RayJob ends Failed" in row["detail"]
    assert row["fix"] == "rlgen update --set opensource-sandbox.kuberay_namespace=kube-system"


def _policy_variants(policies: list[dict]) -> dict[str, list[dict]]:
    """The rendered policies, and the head's rules as hand edits might leave them."""
    def with_ingress(ingress):
        edited = copy.deepcopy(policies)
        for p in edited:
            if p["metadata"]["name"] == "ray-dashboard-in-namespace":
                p["spec"]["ingress"] = ingress
        return edited

    return {
        "rendered": policies,
        "namespace only": with_ingress([{"from": [{"podSelector": {}}]}]),
        "ranges around the dashboard": with_ingress([
            {"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 8265}]},
            {"ports": [{"protocol": "TCP", "port": 1, "endPort": 8264},
                       {"protocol": "TCP", "port": 8266, "endPort": 65535}]}]),
        "a range over the dashboard": with_ingress([{"ports": [{"protocol": "TCP", "port": 8000, "endPort": 9000}]}]),
        "named port": with_ingress([{"from": [{"namespaceSelector": {}}], "ports": [{"port": "dashboard"}]}]),
        "operator's pods by label": with_ingress([{"from": [{"namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["kube-system", "kuberay-system"]}]},
            "podSelector": {"matchLabels": {"app.kubernetes.io/component": "kuberay-operator"}}}],
            "ports": [{"protocol": "TCP", "port": 8265}]}]),
        "UDP only": with_ingress([{"ports": [{"protocol": "UDP", "port": 8265}]}]),
    }


@pytest.mark.parametrize("namespace", ["kuberay-system", "kube-system", NS])
def test_doctors_verdict_is_the_engines(generate, tmp_path, namespace):
    from rlgen.doctor import dashboard_access

    policies = [o for o in all_objects(generate()) if o["kind"] == "NetworkPolicy"]
    labels = {"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/component": "kuberay-operator"}
    operator = co.deployment("kuberay-operator", namespace, "quay.io/kuberay/operator:v1.7.0")
    operator["spec"]["template"]["metadata"] = {"labels": labels}
    head = Pod(NS, HEAD)
    variants = _policy_variants(policies)
    engine = {name: allowed(p, [(Pod(namespace, labels), head, 8265, "TCP")], tmp_path / str(i))[0]
              for i, (name, p) in enumerate(variants.items())}
    doctor = {name: dashboard_access.check(p, {NS}, operator, "opensource-sandbox")[0].state == "ok"
              for name, p in variants.items()}
    assert doctor == engine
