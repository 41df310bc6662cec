"""What a repository asks of the cluster, read from its own rendered objects.

The commands never guess from plugin names: the kinds, Secrets and keys, CSI drivers, GPU
shapes and sync engine are those of the objects ``rlgen render`` gives the cluster, plus the
Secrets the plugins declare for objects outside the repository (an add-on's parameters).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rlgen.repo import answers
from rlgen.repo.objects import get, pod_specs
from rlgen.repo.secret_plan import plan

#: Resources a pod may request that need a device plugin, besides GPUs.
RDMA_PREFIXES = ("rdma/", "aliyun/erdma", "nvidia.com/hostdev")
KUEUE_GROUP = "kueue.x-k8s.io"
#: KubeRay's label that turns on gang scheduling through its batch scheduler.
GANG_LABEL = "ray.io/gang-scheduling-enabled"
#: The label KubeRay's Volcano integration reads a PodGroup's queue from (batchscheduler/volcano
#: QueueNameLabelKey): a RayJob carrying it is gang scheduled by Volcano.
VOLCANO_QUEUE = "volcano.sh/queue-name"
RRSA_LABEL = "pod-identity.alibabacloud.com/injection"
#: Groups whose CRDs upstream sources install, by the owner/name of the repository that ships
#: them (on GitHub or on the mirror of ``rlgen.upstream_mirror``, which keeps the path).
INSTALLED_FROM = {"agents.kruise.io": "/openkruise/agents"}


@dataclass
class SecretNeed:
    namespace: str
    name: str
    keys: set[str] = field(default_factory=set)
    optional: bool = True
    used_by: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class PodShape:
    """One group of identical pods of a RayJob: how many, what each needs, where it may run."""

    group: str
    count: int
    gpus: int
    tolerations: tuple
    node_selector: tuple


@dataclass
class RayJobNeed:
    name: str
    namespace: str
    submission_mode: str
    pods: list[PodShape]
    scheduler: str = ""
    gang: bool = False
    #: The RayJob sets spec.submitterConfig (its submitter Job's retries).
    submitter_config: bool = False
    #: The batch scheduler the RayJob's labels are meant for ("volcano"), "" for none.
    batch_scheduler: str = ""

    @property
    def gpus(self) -> int:
        return sum(p.count * p.gpus for p in self.pods)


@dataclass
class Needs:
    kinds: dict[str, set[str]] = field(default_factory=dict)
    secrets: dict[tuple[str, str], SecretNeed] = field(default_factory=dict)
    csi_drivers: set[str] = field(default_factory=set)
    rayjobs: list[RayJobNeed] = field(default_factory=list)
    extended: set[str] = field(default_factory=set)
    rrsa: bool = False
    sync_objects: list[dict] = field(default_factory=list)
    #: (namespace, name, volume) of each PersistentVolumeClaim the repository renders: its
    #: volumeName, else the rendered PersistentVolume its selector matches, else "".
    claims: list[tuple[str, str, str]] = field(default_factory=list)
    #: Labels of each rendered PersistentVolume, and the matchLabels of each claim without a
    #: volumeName: the two are joined once every object is read.
    volume_labels: dict[str, dict] = field(default_factory=dict)
    claim_selectors: dict[tuple[str, str], dict] = field(default_factory=dict)
    #: ClusterSecretStores the secrets stage's ExternalSecrets read from.
    secret_stores: set[str] = field(default_factory=set)
    #: (namespace, Secret) -> the ExternalSecret that fills it.
    external_secrets: dict[tuple[str, str], str] = field(default_factory=dict)
    network_policies: list[dict] = field(default_factory=list)
    #: Kueue's objects the repository renders (ResourceFlavors, ClusterQueues, LocalQueues).
    queue_objects: list[dict] = field(default_factory=list)
    #: The plugin of each slot, as rlgen.yaml records it (a fix names the plugin's option).
    plugins: dict[str, str] = field(default_factory=dict)
    #: (namespace, Secret) of each age key a Flux Kustomization decrypts SOPS files with.
    decryption_keys: set[tuple[str, str]] = field(default_factory=set)
    #: (apiVersion, kind) -> the rendered objects, for every kind of a group outside Kubernetes'
    #: own (a dot in its name, not *.k8s.io) and Ingresses: what serves them reads them.
    custom: dict[tuple[str, str], list[dict]] = field(default_factory=dict)

    def secret(self, namespace: str, name: str) -> SecretNeed:
        return self.secrets.setdefault((namespace, name), SecretNeed(namespace, name))


def custom_group(api_version: str) -> str:
    """The group of ``api_version`` when no Kubernetes release serves it, else ""."""
    group = api_version.rpartition("/")[0]
    return group if "." in group and not group.endswith(".k8s.io") else ""


def installed_by_repository(group: str, needs: Needs) -> str:
    """The upstream source (URL@tag) the repository's own sync installs ``group``'s CRDs from, or ""."""
    url = INSTALLED_FROM.get(group)
    for obj in needs.sync_objects:
        spec = obj.get("spec") or {}
        found = spec.get("url") or (spec.get("source") or {}).get("repoURL") or ""
        if url and found.rstrip("/").removesuffix(".git").endswith(url):
            tag = (spec.get("ref") or {}).get("tag") or (spec.get("source") or {}).get("targetRevision") or ""
            return f"{found}@{tag}" if tag else found
    return ""


def read(repo: Path, cluster: str | None = None) -> Needs:
    """Render the repository (as ``rlgen validate`` does) and collect what it needs: of every
    cluster, or of ``cluster`` alone (its entry points and its environment's overlays)."""
    # Lazy: the renderer is 59 ms (median of 5, -X importtime) of doctor before its first check.
    from rlgen.render import manifests
    from rlgen.tools.yamlio import read_plain_all

    needs = Needs()
    # Lazy: the Spec's answers are read only for a named cluster.
    from rlgen.repo.workspace import load_spec

    env = answers.cluster_environment(repo, cluster, load_spec(repo).cluster) if cluster else None
    for source, docs in manifests.render({"repo": repo})["repo"].items():
        if cluster and _elsewhere(source, cluster, env):
            continue
        for obj in read_plain_all("\n---\n".join(docs)):
            if isinstance(obj, dict):
                _collect(needs, obj, source)
                if custom_group(api := obj.get("apiVersion", "")) or obj.get("kind") == "Ingress":
                    needs.custom.setdefault((api, obj.get("kind")), []).append(obj)
    needs.claims = [(ns, name, volume or _selected_volume(needs, needs.claim_selectors.get((ns, name))))
                    for ns, name, volume in needs.claims]
    needs.plugins = dict(answers.read(repo)["plugins"])
    for ref in plan(repo).secrets:
        rendered = (ref.namespace, ref.name) in needs.secrets
        need = needs.secret(ref.namespace, ref.name)
        need.keys |= set(ref.keys)
        if not rendered:
            # Only objects outside the repository use it (an add-on's parameters): required.
            need.optional = False
            need.used_by.add(ref.used_by)
    return needs


def _elsewhere(source: str, cluster: str, env: str) -> bool:
    """Whether ``source`` is another cluster's entry points or another environment's overlay."""
    top, _, rest = source.partition("/")
    return (top == "clusters" and not rest.startswith(f"{cluster}/")) or \
        (top == "overlays" and not rest.startswith(f"{env}/"))


def _collect(needs: Needs, obj: dict, source: str) -> None:
    kind, api = obj.get("kind"), obj.get("apiVersion", "")
    needs.kinds.setdefault(api, set()).add(kind)
    ns = get(obj, "metadata", "namespace", default="")
    label = f"{kind}/{get(obj, 'metadata', 'name')}"
    if source.startswith("clusters/"):
        needs.sync_objects.append(obj)
        if kind == "Kustomization" and (key := get(obj, "spec", "decryption", "secretRef", "name")):
            # kustomize-controller imports the keys named *.agekey; the README names it age.agekey.
            _use(needs, ns, key, "age.agekey", False, f"{label} (SOPS decryption)")
            needs.decryption_keys.add((ns, key))
    if kind == "ClusterSecretStore":
        needs.secret_stores.add(get(obj, "metadata", "name"))
    if kind == "ExternalSecret":
        name = get(obj, "metadata", "name")
        needs.external_secrets[(ns, get(obj, "spec", "target", "name") or name)] = name
    if kind == "NetworkPolicy":
        needs.network_policies.append(obj)
    if api.startswith(KUEUE_GROUP + "/"):
        needs.queue_objects.append(obj)
    if kind == "PersistentVolume" and (driver := get(obj, "spec", "csi", "driver")):
        needs.csi_drivers.add(driver)
        if ref := get(obj, "spec", "csi", "nodePublishSecretRef"):
            _use(needs, ref.get("namespace", ns), ref["name"], None, False, label)
        if get(obj, "spec", "csi", "volumeAttributes", "authType") == "rrsa":
            needs.rrsa = True
    if kind == "PersistentVolume":
        needs.volume_labels[get(obj, "metadata", "name")] = get(obj, "metadata", "labels", default={}) or {}
    if kind == "PersistentVolumeClaim":
        name = get(obj, "metadata", "name")
        needs.claims.append((ns, name, get(obj, "spec", "volumeName", default="") or ""))
        if selector := get(obj, "spec", "selector", "matchLabels"):
            needs.claim_selectors[(ns, name)] = selector
    if kind == "Namespace" and get(obj, "metadata", "labels", RRSA_LABEL) == "on":
        needs.rrsa = True
    for pod in pod_specs(obj):
        _pod(needs, pod, ns, label)
    if kind == "RayJob":
        needs.rayjobs.append(_rayjob(obj))


def _selected_volume(needs: Needs, selector: dict | None) -> str:
    """The one rendered PersistentVolume a claim's matchLabels select ("" if none or several)."""
    if not selector:
        return ""
    matching = [n for n, labels in needs.volume_labels.items() if labels.items() >= selector.items()]
    return matching[0] if len(matching) == 1 else ""


def _use(needs: Needs, namespace: str, name: str, key: str | None, optional: bool, label: str) -> None:
    need = needs.secret(namespace, name)
    if key:
        need.keys.add(key)
    need.optional = need.optional and optional
    need.used_by.add(label)


def _pod(needs: Needs, pod: dict, ns: str, label: str) -> None:
    for volume in pod.get("volumes", []):
        if name := get(volume, "secret", "secretName"):
            _use(needs, ns, name, None, bool(get(volume, "secret", "optional")), label)
    for secret in pod.get("imagePullSecrets", []):
        _use(needs, ns, secret["name"], None, False, label)
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        for env in container.get("env", []):
            if ref := get(env, "valueFrom", "secretKeyRef"):
                _use(needs, ns, ref["name"], ref.get("key"), bool(ref.get("optional")), label)
        for source in container.get("envFrom", []):
            if ref := source.get("secretRef"):
                _use(needs, ns, ref["name"], None, bool(ref.get("optional")), label)
        for resource in (get(container, "resources", "limits") or {}):
            if resource.startswith(RDMA_PREFIXES):
                needs.extended.add(resource)


def _rayjob(obj: dict) -> RayJobNeed:
    spec = obj.get("spec") or {}
    cluster = spec.get("rayClusterSpec") or {}
    groups = [("head", 1, get(cluster, "headGroupSpec", "template", "spec") or {})]
    for g in cluster.get("workerGroupSpecs") or []:
        groups.append((g.get("groupName", "workers"), int(g.get("replicas") or g.get("minReplicas") or 0),
                       get(g, "template", "spec") or {}))
    pods = [PodShape(name, count, _gpus(pod), tuple(_frozen(t) for t in pod.get("tolerations") or []),
                     tuple(sorted((pod.get("nodeSelector") or {}).items())))
            for name, count, pod in groups]
    labels = get(obj, "metadata", "labels") or {}
    head = groups[0][2]
    return RayJobNeed(get(obj, "metadata", "name"), get(obj, "metadata", "namespace", default=""),
                      spec.get("submissionMode", "K8sJobMode"), pods,
                      scheduler=head.get("schedulerName", "") if head.get("schedulerName") != "default-scheduler" else "",
                      gang=labels.get(GANG_LABEL) == "true", submitter_config="submitterConfig" in spec,
                      batch_scheduler="volcano" if VOLCANO_QUEUE in labels else "")


def _gpus(pod: dict) -> int:
    total = 0
    for c in pod.get("containers", []):
        limits = get(c, "resources", "limits") or {}
        total += int(str(limits.get("nvidia.com/gpu", 0)))
    return total


def _frozen(toleration: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in toleration.items()))
