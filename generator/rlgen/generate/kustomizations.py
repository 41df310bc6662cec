"""Every ``kustomization.yaml`` of the generated repository but a run's and the runs indexes
(:mod:`rlgen.run.folder`, which ``rlgen run`` writes them with too): the plugins' Components, the
platform and training bases, the overlays and ``infrastructure/``.

The project's own ``base/`` and ``overlays/`` are the starting point, loaded with their comments.
"""
from __future__ import annotations

import re
from collections import defaultdict

from rlgen import sources
from rlgen.contributions import Layer, Patch, Resource
from rlgen.errors import RlgenError
from rlgen.generate.filetree import FileTree
from rlgen.repo.layout import TRAINING_BASE
from rlgen.run.folder import kustomization
from rlgen.spec import ENVIRONMENTS, Spec
from rlgen.tools import yamlio
from rlgen.verl import releases

_FILE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class Components:
    """Collects plugin contributions per (plugin, layer) and writes one Component for each."""

    def __init__(self) -> None:
        self.resources: dict[tuple[str, Layer], list[Resource]] = defaultdict(list)
        self.patches: dict[tuple[str, Layer], list[Patch]] = defaultdict(list)
        self.order: list[tuple[str, Layer]] = []

    def _key(self, plugin: str, layer, what: str) -> tuple[str, Layer]:
        try:
            key = (plugin, Layer(layer))
        except ValueError:
            known = ", ".join(repr(item.value) for item in Layer)
            raise RlgenError(f"plugin '{plugin}' returns a {what} for unknown layer {layer!r} (layers: {known})") from None
        if key not in self.order:
            self.order.append(key)
        return key

    def add_resource(self, plugin: str, item: Resource) -> None:
        self.resources[self._key(plugin, item.layer, "resource")].append(item)

    def add_patch(self, plugin: str, item: Patch) -> None:
        if not _FILE_NAME.fullmatch(item.name or ""):
            raise RlgenError(f"plugin '{plugin}' returns a patch named {item.name!r}: "
                             "use lower-case letters, digits and '-' (it names the patch file)")
        self.patches[self._key(plugin, item.layer, "patch")].append(item)

    def paths(self, layer: Layer) -> list[str]:
        return [f"components/{p}/{l.value}" for p, l in self.order if l is layer]

    def write(self, tree: FileTree) -> None:
        for plugin, layer in self.order:
            folder = f"components/{plugin}/{layer.value}"
            doc: dict = {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component"}
            by_file: dict[str, list[Resource]] = defaultdict(list)
            for res in self.resources[(plugin, layer)]:
                by_file[res.filename].append(res)
            if by_file:
                doc["resources"] = list(by_file)
            for filename, items in by_file.items():
                tree.add(f"{folder}/{filename}", yamlio.dump_all([r.obj for r in items], [r.comment for r in items]))
            patches = []
            for patch in self.patches[(plugin, layer)]:
                tree.add(f"{folder}/{patch.name}.yaml", yamlio.dump(patch.patch, patch.comment))
                patches.append({"path": f"{patch.name}.yaml", "target": dict(patch.target)})
            if patches:
                doc["patches"] = patches
            tree.add(f"{folder}/kustomization.yaml",
                     yamlio.dump(doc, f"What plugin '{plugin}' adds to the {layer.value} layer."))


def _with_components(doc, components: list[str], prefix: str):
    if components:
        doc["components"] = [prefix + c for c in components]
    return doc


def write_platform(tree: FileTree, spec: Spec, components: Components, extra_resources: dict[str, str],
                   environments: tuple[str, ...] | list[str] = ENVIRONMENTS) -> None:
    """``base/platform`` and one overlay per environment: production's and staging's from the
    project's sources, any other (a cluster added with its own ``--env``) the base as it is."""
    namespace = sources.load("base/platform/namespace.yaml")
    namespace["metadata"]["name"] = spec.namespace
    tree.add("base/platform/namespace.yaml", yamlio.dump(namespace))
    base = sources.load("base/platform/kustomization.yaml")
    for filename, text in extra_resources.items():
        tree.add(f"base/platform/{filename}", text)
        base["resources"].append(filename)
    tree.add("base/platform/kustomization.yaml", yamlio.dump(base))
    for env in environments:
        path = f"overlays/{env}/platform/kustomization.yaml"
        if env in ENVIRONMENTS:
            doc, comment = sources.load(path), ""
        else:
            doc = kustomization(resources=["../../../base/platform"])
            comment = (f"The platform of the {env} environment: the shared base plus one component per plugin.\n"
                       "Patches of this environment alone go here, as overlays/staging/platform has its own.")
        tree.add(path, yamlio.dump(_with_components(doc, components.paths(Layer.PLATFORM), "../../../"), comment))


def write_training(tree: FileTree, spec: Spec, components: Components, trainer_files: dict[str, str],
                   image: dict) -> None:
    """The training base's kustomization; its other files are written beside it by the caller."""
    kust = sources.load(f"{TRAINING_BASE}/kustomization.yaml")
    kust["namespace"] = spec.namespace
    kust["images"] = [image]
    kust.yaml_set_comment_before_after_key(
        "images", before="The RayJob's placeholder image 'training' is the one built from images/training/Dockerfile.")
    generator = kust["configMapGenerator"][0]
    generator["name"] = spec.trainer_configmap
    generator["files"] = list(trainer_files)
    # Checks of the rendered objects (rlgen validate) apply this release's batch rules.
    generator["options"] = {"labels": {releases.LABEL: spec.verl_version}}
    tree.add(f"{TRAINING_BASE}/kustomization.yaml",
             yamlio.dump(_with_components(kust, components.paths(Layer.TRAINING), "../../")))
    tree.add(f"{TRAINING_BASE}/kustomizeconfig.yaml", sources.text(f"{TRAINING_BASE}/kustomizeconfig.yaml"))


def write_infrastructure(tree: FileTree, components: Components) -> bool:
    """``infrastructure/`` holds only what plugins add there; False when there is nothing."""
    paths = components.paths(Layer.INFRASTRUCTURE)
    if not paths:
        return False
    tree.add("infrastructure/kustomization.yaml",
             yamlio.dump(_with_components(kustomization(resources=[]), paths, "../"),
                         "Cluster add-on settings applied before the platform."))
    return True
