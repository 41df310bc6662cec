"""Every ``kustomization.yaml`` of the generated repository is written here.

The project's own ``base/`` and ``overlays/`` are the starting point (loaded with their
comments); plugin contributions become one kustomize Component per plugin and layer, listed
by the kustomization of that layer.
"""
from __future__ import annotations

from collections import defaultdict
from importlib.resources import files

from rlgen import yamlio
from rlgen.contributions import Patch, Resource
from rlgen.filetree import FileTree
from rlgen.spec import Spec

ENVIRONMENTS = ("production", "staging")
#: The run template every runs/<run>/ builds on.
TRAINING_BASE = "base/training"


def source(path: str):
    """A file of the project's kustomize sources (``base/...`` or ``overlays/...``), parsed."""
    package, _, rest = path.partition("/")
    return yamlio.load((files(f"rlgen.{package}") / rest).read_text())


def source_text(path: str) -> str:
    package, _, rest = path.partition("/")
    return (files(f"rlgen.{package}") / rest).read_text()


class Components:
    """Collects plugin contributions per (plugin, layer) and writes their Components."""

    def __init__(self) -> None:
        self.resources: dict[tuple[str, str], list[Resource]] = defaultdict(list)
        self.patches: dict[tuple[str, str], list[Patch]] = defaultdict(list)
        self.order: list[tuple[str, str]] = []

    def _touch(self, key: tuple[str, str]) -> None:
        if key not in self.order:
            self.order.append(key)

    def add_resource(self, plugin: str, item: Resource) -> None:
        self._touch((plugin, item.layer))
        self.resources[(plugin, item.layer)].append(item)

    def add_patch(self, plugin: str, item: Patch) -> None:
        self._touch((plugin, item.layer))
        self.patches[(plugin, item.layer)].append(item)

    def paths(self, layer: str) -> list[str]:
        return [f"components/{p}/{l}" for p, l in self.order if l == layer]

    def write(self, tree: FileTree) -> None:
        for plugin, layer in self.order:
            folder = f"components/{plugin}/{layer}"
            doc: dict = {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component"}
            by_file: dict[str, list[Resource]] = defaultdict(list)
            for res in self.resources[(plugin, layer)]:
                by_file[res.filename].append(res)
            if by_file:
                doc["resources"] = list(by_file)
            for filename, items in by_file.items():
                tree.add(f"{folder}/{filename}", yamlio.dump_all([r.obj for r in items], [r.comment for r in items]))
            patches = []
            for index, patch in enumerate(self.patches[(plugin, layer)], start=1):
                name = f"patch-{patch.target.get('kind', 'object').lower()}-{index}.yaml"
                tree.add(f"{folder}/{name}", yamlio.dump(patch.patch, patch.comment))
                patches.append({"path": name, "target": dict(patch.target)})
            if patches:
                doc["patches"] = patches
            tree.add(f"{folder}/kustomization.yaml",
                     yamlio.dump(doc, f"What plugin '{plugin}' adds to the {layer} layer."))


def with_components(doc, components: list[str], prefix: str):
    if components:
        doc["components"] = [prefix + c for c in components]
    return doc


def write_platform(tree: FileTree, spec: Spec, components: Components, extra_resources: dict[str, str]) -> None:
    namespace = source("base/platform/namespace.yaml")
    namespace["metadata"]["name"] = spec.namespace
    tree.add("base/platform/namespace.yaml", yamlio.dump(namespace))
    base = source("base/platform/kustomization.yaml")
    for filename, text in extra_resources.items():
        tree.add(f"base/platform/{filename}", text)
        base["resources"].append(filename)
    tree.add("base/platform/kustomization.yaml", yamlio.dump(base))
    for env in ENVIRONMENTS:
        path = f"overlays/{env}/platform/kustomization.yaml"
        tree.add(path, yamlio.dump(with_components(source(path), components.paths("platform"), "../../../")))


def write_training(tree: FileTree, spec: Spec, components: Components, trainer_files: dict[str, str],
                   image: dict) -> None:
    kust = source("base/training/kustomization.yaml")
    kust["namespace"] = spec.namespace
    kust["images"] = [image]
    kust.yaml_set_comment_before_after_key(
        "images", before="The RayJob's placeholder image 'training' is the one built from images/training/Dockerfile.")
    generator = kust["configMapGenerator"][0]
    generator["name"] = spec.trainer_configmap
    generator["files"] = list(trainer_files)
    tree.add(f"{TRAINING_BASE}/kustomization.yaml",
             yamlio.dump(with_components(kust, components.paths("training"), "../../")))
    for key, text in trainer_files.items():
        tree.add(f"{TRAINING_BASE}/{key}", text)
    tree.add(f"{TRAINING_BASE}/kustomizeconfig.yaml", source_text(f"{TRAINING_BASE}/kustomizeconfig.yaml"))
    tree.add(f"{TRAINING_BASE}/rayjob.yaml", yamlio.dump(rayjob(spec)))


def rayjob(spec: Spec):
    """The project's RayJob template with the spec's names, GPU count and volumes."""
    job = source("base/training/rayjob.yaml")
    job["metadata"]["name"] = spec.rayjob_name
    pod = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    container = pod["containers"][0]
    container["resources"]["limits"]["nvidia.com/gpu"] = str(spec.gpus_per_node)
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    mounts["configs"]["mountPath"] = spec.configs_mount
    volumes = {v["name"]: v for v in pod["volumes"]}
    volumes["configs"]["configMap"]["name"] = spec.trainer_configmap
    for key, volume in spec.volumes.items():
        mounts[key]["mountPath"] = volume.mount_path
        volumes[key]["persistentVolumeClaim"]["claimName"] = volume.name
    return job


def write_infrastructure(tree: FileTree, components: Components) -> bool:
    """``infrastructure/`` holds only what plugins add there; False when there is nothing."""
    paths = components.paths("infrastructure")
    if not paths:
        return False
    doc = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": []}
    tree.add("infrastructure/kustomization.yaml",
             yamlio.dump(with_components(doc, paths, "../"),
                         "Cluster add-on settings applied before the platform."))
    return True
