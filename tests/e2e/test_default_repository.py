"""The default repository on a real control plane: pushed, bootstrapped as its README says, synced
by Flux's controllers stage by stage, and its run turned into Ray pods by KubeRay on Lingjun nodes.

What a kubelet would refuse and kwok does not check (a missing Secret or key, a missing
ConfigMap, a PVC that is not Bound) is checked here on every scheduled pod.
"""
from __future__ import annotations

import json
import subprocess

import pytest
from support.controlplane import LINGJUN_LABELS, wait_until
from support.repos import ok, run_rlgen

from support.flux import NAMESPACE, ready
from support.kuberay import ray_cluster, ray_pods

pytestmark = pytest.mark.usefixtures("dump_on_failure")


def test_every_stage_becomes_ready_after_the_stages_it_depends_on(synced):
    ks = synced["kustomizations"]
    assert {"flux-system", "sandbox-operator", "sandbox-manager", "platform", "runs"} <= set(ks)
    for name, k in ks.items():
        for dep in k["spec"].get("dependsOn", []):
            assert ready(ks[dep["name"]])["lastTransitionTime"] <= ready(k)["lastTransitionTime"], (name, dep)


def test_flux_bootstrap_installed_flux_through_the_repositorys_own_folder(control_plane, synced):
    """The README's `flux bootstrap git` committed Flux's components and sync objects beside the
    generated kustomization.yaml, which it kept (its patch is on the installed Deployment), and
    the clone pulled them (the README's `git pull`)."""
    cp, folder = control_plane, synced["repo"] / "clusters" / "production" / "flux-system"
    log = subprocess.run(["git", "-C", str(synced["repo"]), "log", "--format=%s", "-3"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log[:2] == ["Add Flux sync manifests", "Add Flux v2.9.3 component manifests"], log
    assert "kind: GitRepository" in (folder / "gotk-sync.yaml").read_text()
    assert "--requeue-dependency=5s" in (folder / "kustomization.yaml").read_text()
    deployments = {d["metadata"]["name"]: d for d in cp.objects("deployments", "-n", "flux-system")}
    assert set(deployments) >= {"source-controller", "kustomize-controller", "helm-controller",
                                "notification-controller"}
    for name, d in deployments.items():
        assert any(c["type"] == "Available" and c["status"] == "True" for c in d["status"]["conditions"]), name
    args = deployments["kustomize-controller"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-1] == "--requeue-dependency=5s", args


def test_the_run_becomes_a_ray_cluster_whose_pods_land_on_lingjun_nodes(control_plane, synced):
    cp = control_plane
    rayjob = json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=synced["repo"])))[0]["rayjob"]
    wait_until("KubeRay's RayCluster of the run", lambda: ray_cluster(cp, NAMESPACE, rayjob))
    pods = wait_until("the run's Ray pods Running", lambda: (ps := ray_pods(cp, NAMESPACE, rayjob)) and all(
        p["status"].get("phase") == "Running" for p in ps) and ps, timeout=120)
    nodes = {n["metadata"]["name"]: n for n in cp.objects("nodes")}
    workers = [p for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "worker"]
    heads = [p for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "head"]
    assert len(heads) == 1 and len(workers) == 1
    for pod in workers:
        node = nodes[pod["spec"]["nodeName"]]
        assert node["metadata"]["labels"].items() >= LINGJUN_LABELS.items()
        gpu = [c for c in pod["spec"]["containers"] if "nvidia.com/gpu" in c["resources"].get("limits", {})]
        assert gpu and gpu[0]["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_scheduled_pods_have_every_secret_configmap_and_claim_they_name(control_plane, synced):
    """What a kubelet checks before it starts a container; kwok starts it regardless."""
    cp = control_plane
    problems = []
    for pod in cp.objects("pods", "-A"):
        if not pod["spec"].get("nodeName"):
            continue
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        if ns in ("kube-system",):
            continue
        for ref in _references(pod):
            kind, obj_name, key = ref
            found = cp.kubectl("get", kind, obj_name, "-n", ns, "-o", "json", check=False)
            if found.returncode != 0:
                problems.append(f"{ns}/{name}: {kind} {obj_name} does not exist")
                continue
            obj = json.loads(found.stdout)
            if kind == "persistentvolumeclaim" and obj["status"].get("phase") != "Bound":
                problems.append(f"{ns}/{name}: PVC {obj_name} is {obj['status'].get('phase')}")
            if key and key not in (obj.get("data") or {}):
                problems.append(f"{ns}/{name}: {kind} {obj_name} has no key {key}")
    assert not problems, "\n".join(problems)


def _references(pod: dict):
    spec = pod["spec"]
    for volume in spec.get("volumes", []):
        if "secret" in volume and not volume["secret"].get("optional"):
            yield "secret", volume["secret"]["secretName"], None
        if "configMap" in volume and not volume["configMap"].get("optional"):
            yield "configmap", volume["configMap"]["name"], None
        if "persistentVolumeClaim" in volume:
            yield "persistentvolumeclaim", volume["persistentVolumeClaim"]["claimName"], None
    for container in spec.get("initContainers", []) + spec.get("containers", []):
        for env in container.get("env", []):
            source = env.get("valueFrom", {})
            for field, kind in (("secretKeyRef", "secret"), ("configMapKeyRef", "configmap")):
                if field in source and not source[field].get("optional"):
                    yield kind, source[field]["name"], source[field]["key"]
        for env_from in container.get("envFrom", []):
            for field, kind in (("secretRef", "secret"), ("configMapRef", "configmap")):
                if field in env_from and not env_from[field].get("optional"):
                    yield kind, env_from[field]["name"], None


def test_the_dataset_and_model_jobs_complete(control_plane, synced):
    # The repository's Jobs; a RayJob's submitter Job (KubeRay's) follows the training instead.
    jobs = [j for j in control_plane.objects("jobs", "-n", NAMESPACE)
            if not any(o["kind"] == "RayJob" for o in j["metadata"].get("ownerReferences", []))]
    assert {j["metadata"]["name"].rsplit("-", 1)[0] for j in jobs} == {"dataset-pipeline", "model-pipeline"}
    assert all(j["status"].get("succeeded", 0) >= 1 for j in jobs), [j["metadata"]["name"] for j in jobs]


def test_every_volume_claim_is_bound_to_its_static_volume(control_plane, synced):
    claims = control_plane.objects("pvc", "-n", NAMESPACE)
    assert {c["metadata"]["name"].rsplit("-", 1)[0] for c in claims} >= {"rl-datasets", "rl-models", "rl-checkpoints"}
    for claim in claims:
        assert claim["status"]["phase"] == "Bound", claim["metadata"]["name"]
        assert claim["spec"]["volumeName"] == claim["metadata"]["name"]


def test_every_service_selects_ready_pods(control_plane, synced):
    cp = control_plane
    problems = []
    for ns in (NAMESPACE, "sandbox-system"):
        for service in cp.objects("services", "-n", ns):
            if not service["spec"].get("selector"):
                continue
            name = service["metadata"]["name"]

            def endpoints(name=name, ns=ns):
                slices = cp.objects("endpointslices", "-n", ns, "-l", f"kubernetes.io/service-name={name}")
                return [e for s in slices for e in s.get("endpoints") or [] if e["conditions"].get("ready")]

            try:
                wait_until(f"endpoints of Service {ns}/{name}", endpoints, timeout=90)
            except AssertionError:
                problems.append(f"Service {ns}/{name} selects no ready pod: {service['spec']['selector']}")
    assert not problems, "\n".join(problems)


def test_ray_pods_carry_what_the_rayjob_declares(control_plane, synced):
    """KubeRay adds its own containers' settings; what the repository declares must survive."""
    import yaml

    rendered = yaml.safe_load_all(ok(run_rlgen("render", "runs/baseline", cwd=synced["repo"])))
    rayjob = next(o for o in rendered if o and o.get("kind") == "RayJob")
    spec = rayjob["spec"]["rayClusterSpec"]
    declared = {"head": spec["headGroupSpec"]["template"]["spec"],
                "worker": spec["workerGroupSpecs"][0]["template"]["spec"]}
    pods = ray_pods(control_plane, NAMESPACE, rayjob["metadata"]["name"])
    assert {p["metadata"]["labels"]["ray.io/node-type"] for p in pods} == {"head", "worker"}
    for pod in pods:
        want, got = declared[pod["metadata"]["labels"]["ray.io/node-type"]], pod["spec"]
        for toleration in want.get("tolerations", []):
            assert toleration in got.get("tolerations", []), toleration
        assert {v["name"] for v in want["volumes"]} <= {v["name"] for v in got["volumes"]}
        container = {c["name"]: c for c in got["containers"]}
        for declared_container in want["containers"]:
            actual = container[declared_container["name"]]
            for kind in ("limits", "requests"):
                for resource, value in declared_container.get("resources", {}).get(kind, {}).items():
                    assert actual["resources"][kind][resource] == value, (resource, kind)
            names = {e["name"] for e in actual.get("env", [])}
            assert {e["name"] for e in declared_container.get("env", [])} <= names
            for mount in declared_container.get("volumeMounts", []):
                assert mount in actual.get("volumeMounts", []), mount
        assert got["securityContext"] == want["securityContext"]
