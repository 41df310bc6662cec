"""The table of immutable fields (rlgen.immutable_fields) held against a real kube-apiserver: each
object is created, then the changed object is applied server-side with a server dry-run, as a
sync engine applies it. The API server must refuse exactly the changes the table names, and
let the others through (a label, a PersistentVolume's capacity, a bound claim's storage
request, a Job's parallelism, replicas).

It starts a control plane of its own (no operator or sync engine is needed): the shared one
carries other modules' objects."""
from __future__ import annotations

import copy
import json

import pytest
from support.controlplane import ControlPlane, wait_until

from rlgen.immutable_fields import refused

NS = "immutable-fields"
CSI = {"driver": "ossplugin.csi.alibabacloud.com", "volumeHandle": "h",
       "volumeAttributes": {"bucket": "rl-training-data", "url": "oss-cn-beijing-internal.aliyuncs.com"}}
POD = {"metadata": {"labels": {"app": "a"}},
       "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "registry.rl.test/a:1"}]}}
SERVICE_POD = {"metadata": {"labels": {"app": "a"}},
               "spec": {"containers": [{"name": "c", "image": "registry.rl.test/a:1"}]}}


def _pv(name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "20Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": "",
                     "persistentVolumeReclaimPolicy": "Retain", "csi": copy.deepcopy(CSI), **spec}}


def _pvc(name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "",
                     "resources": {"requests": {"storage": "20Gi"}},
                     "selector": {"matchLabels": {"alicloud-pvname": name}}, **spec}}


def _job(name: str, **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"suspend": False, "template": copy.deepcopy(POD), **spec}}


def _service(name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
            "spec": {"ports": [{"port": 80}], "selector": {"app": "a"}, **spec}}


def _apps(kind: str, name: str, **spec) -> dict:
    labels = spec.pop("labels", {"app": "a"})
    template = copy.deepcopy(SERVICE_POD)
    template["metadata"]["labels"] = labels
    body = {"selector": {"matchLabels": labels}, "template": template, **spec}
    if kind == "StatefulSet":
        body.setdefault("serviceName", "a")
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": body}


def _set(obj: dict, path: str, value) -> dict:
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return out


def _image(obj: dict, image: str) -> dict:
    out = copy.deepcopy(obj)
    out["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return out


def _cases() -> list[tuple[str, dict, dict]]:
    """(what, created, applied after)."""
    pv, pvc = _pv("pv-a"), _pvc("pvc-a")
    job, svc = _job("job-a"), _service("svc-a", clusterIP="10.96.0.50")
    sts = _apps("StatefulSet", "sts-a", replicas=1)
    other_bucket = copy.deepcopy(pv)
    other_bucket["spec"]["csi"]["volumeAttributes"]["bucket"] = "mlteam-rl-data"
    return [
        ("pv bucket", pv, other_bucket),
        ("pv secret", _pv("pv-b"), _set(_pv("pv-b"), "spec.csi.nodePublishSecretRef",
                                         {"name": "oss-credentials", "namespace": NS})),
        ("pv volumeMode", _pv("pv-c"), _set(_pv("pv-c"), "spec.volumeMode", "Block")),
        ("pv capacity", _pv("pv-d"), _set(_pv("pv-d"), "spec.capacity", {"storage": "40Gi"})),
        ("pv label", _pv("pv-e"), _set(_pv("pv-e"), "metadata.labels", {"team": "ml"})),
        ("pvc access modes", pvc, _set(pvc, "spec.accessModes", ["ReadWriteOnce"])),
        ("pvc selector", _pvc("pvc-b"), _set(_pvc("pvc-b"), "spec.selector", {"matchLabels": {"x": "y"}})),
        ("pvc class", _pvc("pvc-c"), _set(_pvc("pvc-c"), "spec.storageClassName", "other")),
        ("pvc label", _pvc("pvc-d"), _set(_pvc("pvc-d"), "metadata.labels", {"team": "ml"})),
        ("job template", job, _image(job, "registry.rl.test/a:2")),
        ("job parallelism", _job("job-b"), _set(_job("job-b"), "spec.parallelism", 2)),
        ("job label", _job("job-c"), _set(_job("job-c"), "metadata.labels", {"team": "ml"})),
        ("service clusterIP", svc, _set(svc, "spec.clusterIP", "10.96.0.51")),
        ("service to ExternalName", _service("svc-b", clusterIP="10.96.0.52"),
         {**_service("svc-b"), "spec": {"type": "ExternalName", "externalName": "oss.rl.test"}}),
        ("service ports", _service("svc-c"), _set(_service("svc-c"), "spec.ports", [{"port": 8080}])),
        ("deployment selector", _apps("Deployment", "dep-a"), _apps("Deployment", "dep-a", labels={"app": "b"})),
        ("deployment replicas", _apps("Deployment", "dep-b"), _apps("Deployment", "dep-b", replicas=3)),
        ("daemonset selector", _apps("DaemonSet", "ds-a"), _apps("DaemonSet", "ds-a", labels={"app": "b"})),
        ("statefulset serviceName", sts, _set(sts, "spec.serviceName", "b")),
        ("statefulset claims", _apps("StatefulSet", "sts-b"), _apps("StatefulSet", "sts-b", volumeClaimTemplates=[
            {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}])),
        ("statefulset replicas", _apps("StatefulSet", "sts-c", replicas=1),
         _apps("StatefulSet", "sts-c", replicas=3)),
        ("statefulset image", _apps("StatefulSet", "sts-d"), _image(_apps("StatefulSet", "sts-d"), "b:2")),
    ]


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory):
    cp = ControlPlane(tmp_path_factory.mktemp("immutable-controlplane"))
    try:
        cp.start()
        cp.kubectl("create", "namespace", NS)
        yield cp
    finally:
        cp.stop()


def _apply(cp: ControlPlane, obj: dict, *flags: str):
    return cp.kubectl("apply", "--server-side", "--field-manager=rlgen-test", *flags, "-f", "-",
                      input=json.dumps(obj), check=False)


@pytest.mark.parametrize("what,created,changed", _cases(), ids=[c[0] for c in _cases()])
def test_the_api_server_refuses_exactly_what_the_table_names(apiserver, what, created, changed):
    made = _apply(apiserver, created)
    assert made.returncode == 0, made.stderr

    answer = _apply(apiserver, changed, "--dry-run=server")

    named = [r.rule.field for r in refused(created, changed)]
    if named:
        assert answer.returncode != 0, f"{what}: the table names {named}, the API server took it"
        assert "immutable" in answer.stderr or "Forbidden" in answer.stderr or "Invalid" in answer.stderr, \
            answer.stderr
    else:
        assert answer.returncode == 0, f"{what}: the table names nothing, the API server said {answer.stderr}"


def test_a_bound_claim_grows_where_its_class_allows_it(apiserver):
    """The storage request, the one claim field the table leaves out, changes on a bound claim
    whose StorageClass allows expansion (an OSS claim has none: OSS ignores the capacity)."""
    cp = apiserver
    cp.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "expandable"},
        "provisioner": "rlgen.test/none", "allowVolumeExpansion": True}))
    volume = _pv("pv-bound", storageClassName="expandable")
    claim = _pvc("pvc-bound", storageClassName="expandable", volumeName="pv-bound")
    del claim["spec"]["selector"]
    assert _apply(cp, volume).returncode == 0
    assert _apply(cp, claim).returncode == 0, "claim"
    wait_until("the claim Bound", lambda: cp.objects("pvc", "-n", NS, "--field-selector",
                                                      "metadata.name=pvc-bound")[0]["status"].get("phase") == "Bound",
               timeout=60, on_timeout=cp.logs)
    bigger = _set(claim, "spec.resources", {"requests": {"storage": "40Gi"}})

    answer = _apply(cp, bigger, "--dry-run=server")

    assert refused(claim, bigger) == []
    assert answer.returncode == 0, answer.stderr
