"""Checks of what the runs consume: GPU nodes they tolerate, RDMA devices, and the Secrets
(by name and key) the repository references."""
from __future__ import annotations

from rlgen.kube.needs import Needs, PodShape
from rlgen.kube.report import OK, PROBLEM, Row

GPU = "nvidia.com/gpu"


def gpu_nodes(cluster, needs: Needs) -> list[Row]:
    """Enough schedulable nodes, whose taints the run tolerates, for the largest run."""
    gpu_runs = [r for r in needs.rayjobs if r.gpus]
    if not gpu_runs:
        return []
    largest = max(gpu_runs, key=lambda r: r.gpus)
    nodes = cluster.items("CoreV1Api.list_node")
    rows = []
    for shape in (p for p in largest.pods if p.gpus):
        fits = [n for n in nodes if _fits(n, shape)]
        slots = sum(_allocatable(n, GPU) // shape.gpus for n in fits)
        check = f"GPU nodes for {largest.name}/{shape.group}"
        wanted = f"{shape.count} pod(s) of {shape.gpus} {GPU}"
        if slots >= shape.count:
            rows.append(Row(check, OK, f"{len(fits)} node(s) fit {wanted}{_taints(fits)}"))
        else:
            why, fix = _why_not(nodes, shape)
            rows.append(Row(check, PROBLEM, f"room for {slots} of {wanted}; {why}", fix))
    return rows


def _allocatable(node: dict, resource: str) -> int:
    value = str(((node.get("status") or {}).get("allocatable") or {}).get(resource, "0"))
    return int(value) if value.isdigit() else 0


def _fits(node: dict, shape: PodShape) -> bool:
    spec = node.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    return (not spec.get("unschedulable")
            and all(labels.get(k) == v for k, v in shape.node_selector)
            and all(_tolerated(t, shape.tolerations) for t in spec.get("taints") or []
                    if t.get("effect") in ("NoSchedule", "NoExecute"))
            and _allocatable(node, GPU) >= shape.gpus)


def _tolerated(taint: dict, tolerations: tuple) -> bool:
    for frozen in tolerations:
        t = dict(frozen)
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _taints(nodes: list[dict]) -> str:
    keys = sorted({t["key"] for n in nodes for t in (n.get("spec") or {}).get("taints") or []})
    return f" (tolerated taints: {', '.join(keys)})" if keys else ""


#: What to do when the pool is too small for the run.
GROW = ("add GPU nodes to the pool (ACK: scale the node pool), or make the run smaller "
        "(rlgen run set RUN trainer.nnodes=N)")


def _why_not(nodes: list[dict], shape: PodShape) -> tuple[str, str]:
    """Why the pool has too little room, and what to do about it."""
    gpu = [n for n in nodes if _allocatable(n, GPU)]
    if not gpu:
        return f"no node has allocatable {GPU}", f"add GPU nodes with the GPU device plugin; {GROW}"
    untolerated = sorted({(t["key"], t.get("value", ""), t["effect"]) for n in gpu
                          for t in (n.get("spec") or {}).get("taints") or []
                          if t.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(t, shape.tolerations)})
    if untolerated:
        tainted = sorted(n["metadata"]["name"] for n in gpu if any(
            (t["key"], t.get("value", ""), t.get("effect")) in untolerated for t in (n.get("spec") or {}).get("taints") or []))
        key, value, effect = untolerated[0]
        taint = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
        return (f"GPU nodes carry taints the RayJob does not tolerate: {', '.join(k for k, _, _ in untolerated)} "
                f"(on {', '.join(tainted[:3])}{' ...' if len(tainted) > 3 else ''})",
                f"remove the taint if it is not meant to keep runs off (kubectl taint nodes {tainted[0]} {key}-), "
                f"or add a toleration of {taint} to the run's pods")
    cordoned = [n["metadata"]["name"] for n in gpu if (n.get("spec") or {}).get("unschedulable")]
    if cordoned:
        return (f"GPU node(s) cordoned: {', '.join(cordoned)}",
                f"kubectl uncordon {' '.join(cordoned)} once their maintenance is over; {GROW}")
    most = max(_allocatable(n, GPU) for n in gpu)
    if most < shape.gpus:
        return f"GPU nodes have at most {most} allocatable {GPU}", GROW
    return f"{len(gpu)} GPU node(s) of {most} allocatable {GPU}", GROW


def rdma(cluster, needs: Needs) -> list[Row]:
    rows = []
    nodes = cluster.items("CoreV1Api.list_node") if needs.extended else []
    for resource in sorted(needs.extended):
        having = [n["metadata"]["name"] for n in nodes if _allocatable(n, resource)]
        rows.append(Row(f"device {resource}", OK, f"{len(having)} node(s) advertise it") if having else
                    Row(f"device {resource}", PROBLEM, "no node advertises it",
                        "install the RDMA device plugin (ACK: the eRDMA/RDMA add-on) on the GPU nodes"))
    return rows


def claims(cluster, needs: Needs) -> list[Row]:
    """Each PersistentVolumeClaim the repository renders: Bound, or why a pod using it stays Pending."""
    rows = []
    for namespace, name, volume in sorted(needs.claims):
        check = f"PersistentVolumeClaim {namespace}/{name}"
        live = cluster.call("CoreV1Api.read_namespaced_persistent_volume_claim", name, namespace)
        if live is None:
            rows.append(Row(check, OK, "not created yet: the sync creates it"))
            continue
        phase = (live.get("status") or {}).get("phase") or "Pending"
        if phase == "Bound":
            rows.append(Row(check, OK, f"Bound to {(live.get('spec') or {}).get('volumeName', '')}".rstrip(" to")))
            continue
        wanted = (live.get("spec") or {}).get("volumeName") or volume
        detail = f"{phase}: pods that mount it stay Pending"
        pv = cluster.call("CoreV1Api.read_persistent_volume", wanted) if wanted else None
        held = _held_for_another_claim(pv, live)
        if wanted and pv is None:
            detail += f"; its PersistentVolume {wanted} does not exist"
            fix = (f"create the PersistentVolume {wanted} (the repository declares it next to the claim: "
                   f"check that stage synced), then kubectl -n {namespace} describe pvc {name}")
        elif held:
            # A claim deleted and created again (by hand or by the sync) gets a new uid; a volume
            # kept by reclaim policy Retain stays reserved for the old one and never binds again.
            detail += (f"; its PersistentVolume {wanted} is {held[0]}, still reserved for {held[1]}, "
                       "which no longer exists")
            fix = (f"once the data on {wanted} may serve this claim, release it: kubectl patch pv {wanted} "
                   "--type=json -p '[{\"op\": \"remove\", \"path\": \"/spec/claimRef\"}]'")
        else:
            fix = (f"kubectl -n {namespace} describe pvc {name}: the volume it names must match its "
                   "storageClassName, capacity and accessModes and not be bound to another claim")
        rows.append(Row(check, PROBLEM, detail, fix))
    return rows


def _held_for_another_claim(pv: dict | None, claim: dict) -> tuple[str, str] | None:
    """(the volume's phase, the claim it is reserved for) when that is not ``claim`` itself."""
    ref = ((pv or {}).get("spec") or {}).get("claimRef")
    if not ref:
        return None
    meta = claim.get("metadata") or {}
    if ref.get("uid") and ref.get("uid") == meta.get("uid"):
        return None
    phase = ((pv or {}).get("status") or {}).get("phase") or "Pending"
    return phase, f"a claim {ref.get('namespace', '')}/{ref.get('name', '')} (uid {ref.get('uid', '?')})"


def secrets(cluster, needs: Needs) -> list[Row]:
    """Each referenced Secret by name and key. The API returns values with the keys; only
    the key names are kept, in this function, and no value is printed or stored."""
    rows = []
    for (namespace, name), need in sorted(needs.secrets.items()):
        check = f"Secret {namespace}/{name}"
        keys = _key_names(cluster.call("CoreV1Api.read_namespaced_secret", name, namespace))
        create = _create(need)
        if keys is None:
            filled_by = needs.external_secrets.get((namespace, name))
            if need.optional:
                rows.append(Row(check, OK, "absent (optional)"))
            elif filled_by:
                rows.append(Row(check, PROBLEM, f"missing: {_external_secret_state(cluster, namespace, filled_by)}",
                                f"store {', '.join(sorted(need.keys))} in the secret store "
                                f"(rlgen secret set {name} <key> says where)"))
            else:
                rows.append(Row(check, PROBLEM, "missing", create))
            continue
        missing = sorted(need.keys - keys)
        fix = f"{create} --dry-run=client -o yaml | kubectl apply -f -"
        rows.append(Row(check, PROBLEM, f"missing key(s): {', '.join(missing)}", fix) if missing else
                    Row(check, OK, f"keys present: {', '.join(sorted(need.keys)) or '(any)'}"))
    return rows


def secret_stores(cluster, needs: Needs) -> list[Row]:
    """Each ClusterSecretStore of the secrets stage: present and Ready (External Secrets has
    validated its provider settings and credentials)."""
    rows = []
    for name in sorted(needs.secret_stores):
        check = f"ClusterSecretStore {name}"
        store = cluster.call("CustomObjectsApi.get_cluster_custom_object", "external-secrets.io", "v1",
                             "clustersecretstores", name)
        if store is None:
            rows.append(Row(check, PROBLEM, "missing", "install External Secrets Operator v1.3, then let the "
                                                       "secrets stage sync (README, Secrets)"))
            continue
        ready = next((c for c in (store.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), {})
        rows.append(Row(check, OK, "Ready") if ready.get("status") == "True" else
                    Row(check, PROBLEM, f"not Ready: {ready.get('message') or ready.get('reason') or 'no status yet'}",
                        "check the store's region and authentication (README, Secrets)"))
    return rows


def _external_secret_state(cluster, namespace: str, name: str) -> str:
    """Why External Secrets has not made the Secret: its ExternalSecret's Ready condition."""
    found = cluster.call("CustomObjectsApi.get_namespaced_custom_object", "external-secrets.io", "v1",
                         namespace, "externalsecrets", name)
    if found is None:
        return f"ExternalSecret {namespace}/{name} does not exist (the secrets stage has not applied it)"
    ready = next((c for c in (found.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), {})
    state = ready.get("message") or ready.get("reason") or "no status yet (is External Secrets running?)"
    # The condition says only "could not get secret data from provider"; the provider's error
    # (which KMS secret or key is missing) is in the Warning event External Secrets records.
    events = cluster.items("CoreV1Api.list_namespaced_event", namespace,
                           field_selector=f"involvedObject.kind=ExternalSecret,involvedObject.name={name},type=Warning")
    if events:
        latest = max(events, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        state = f"{state}: {latest.get('message', '')}"
    return f"ExternalSecret {namespace}/{name} not synced: {state}"


def _key_names(secret: dict | None) -> set[str] | None:
    if secret is None:
        return None
    return set(secret.get("data") or {}) | set(secret.get("stringData") or {})


def _create(need) -> str:
    literals = " ".join(f"--from-literal={k}=..." for k in sorted(need.keys))
    return f"kubectl create secret generic {need.name} -n {need.namespace} {literals}".rstrip()
