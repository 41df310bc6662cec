"""The runs stage applies with a namespaced Role, and rlgen validate names, before the merge,
every file a run folder holds that is not the run's (a ClusterRoleBinding, a Secret, a
Deployment of another namespace smuggled into runs/<run>/)."""
from __future__ import annotations

import json

from ruamel.yaml import YAML
from support.repos import commit_all, rlgen_in

SMUGGLED = {
    "crb.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: mine\n"
                "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n"
                "subjects:\n- kind: ServiceAccount\n  name: default\n  namespace: rl-training\n",
    "secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: mine\n  namespace: rl-training\n",
    "deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: mine\n  namespace: kube-system\n"
                       "spec:\n  selector:\n    matchLabels: {app: mine}\n  template:\n    metadata:\n"
                       "      labels: {app: mine}\n    spec:\n      containers:\n      - name: c\n        image: busybox\n",
}


def test_validate_names_each_file_that_is_not_the_runs(repo):
    folder = repo / "runs" / "baseline"
    for name, text in SMUGGLED.items():
        (folder / name).write_text(text)
    kustomization = folder / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - ../../base/training\n",
                                                               "  - ../../base/training\n" + "".join(
                                                                   f"  - {n}\n" for n in SMUGGLED)))
    commit_all(repo, "A run that brings more")
    result = rlgen_in(repo, "validate", "-o", "json")
    assert result.returncode == 1, result.stderr
    named = {p["source"]: p["message"] for p in json.loads(result.stdout)["problems"]}
    for name in SMUGGLED:
        assert "not a file of run baseline" in named[f"runs/baseline/{name}"]
    assert "a run is a RayJob and its ConfigMap in rl-training, nothing else" in named["runs/baseline/crb.yaml"]


def test_argo_cds_runs_application_is_in_a_project_of_run_kinds_only(generate):
    repo = generate("--plugin", "argo")
    runs = YAML(typ="safe").load((repo / "clusters/production/runs.yaml").read_text())
    projects = {d["metadata"]["name"]: d for d in YAML(typ="safe").load_all((repo / "clusters/production/root.yaml").read_text())
                if d and d["kind"] == "AppProject"}
    spec = projects[runs["spec"]["project"]]["spec"]
    assert spec["destinations"] == [{"server": "https://kubernetes.default.svc", "namespace": "rl-training"}]
    assert spec["clusterResourceWhitelist"] == []
    assert spec["namespaceResourceWhitelist"] == [{"group": "ray.io", "kind": "RayJob"}, {"group": "", "kind": "ConfigMap"}]
