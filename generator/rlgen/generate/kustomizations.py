"""Every ``kustomization.yaml`` of the generated repository is written here: the plugins'
Components, the platform and training bases, the overlays, ``infrastructure/``, each run and
each environment's runs index (``rlgen run`` writes run kustomizations with the same functions).

The project's own ``base/`` and ``overlays/`` are the starting point, loaded with their comments.
"""
from __future__ import annotations

import json
import re
import textwrap
from collections import defaultdict

from rlgen import sources
from rlgen.contributions import Layer, Patch, Resource
from rlgen.errors import RlgenError
from rlgen.generate import rayjob
from rlgen.generate.filetree import FileTree
from rlgen.repo.layout import PRIORITY_LABEL, RENAME_TRANSFORMER, RUN_ENTRY, SWEEP_LABEL, TRAINING_BASE
from rlgen.spec import ENVIRONMENTS, Spec
from rlgen.tools import yamlio
from rlgen.verl import releases
from rlgen.verl.batch_rules import Size

_FILE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _kustomization(**fields) -> dict:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **fields}


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
        if not _FILE_NAME.match(item.name or ""):
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
            doc = _kustomization(resources=["../../../base/platform"])
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
             yamlio.dump(_with_components(_kustomization(resources=[]), paths, "../"),
                         "Cluster add-on settings applied before the platform."))
    return True


def run_kustomization(spec: Spec, run: str, rayjob_name: str | None, naming: int = 1, size: Size | None = None,
                      labels: dict[str, str] | None = None) -> str:
    """``runs/<run>/kustomization.yaml``; without ``rayjob_name`` it renders the unnamed run
    whose RayJob spec (naming scheme 1) or inputs (scheme 2) the name is hashed from. ``size``:
    the run's own ``trainer.nnodes`` x ``trainer.n_gpus_per_node`` when its run.yaml sets them
    (else the base's size holds). ``labels``: the run's own Volcano queue and priority."""
    doc = _kustomization(
        resources=["../../base/training"],
        # Every object of the run carries its name, so runs never collide in one namespace.
        namePrefix=f"{run}-",
        configMapGenerator=[{"name": spec.trainer_configmap, "behavior": "merge", "files": [spec.run_config_key]}],
    )
    if size is not None or labels:
        # Comments need ruamel's map (lazy: 70 ms, median of 7); a run of the base's size keeps the
        # plain, faster dump.
        from ruamel.yaml.comments import CommentedMap

        doc = CommentedMap(doc)
    if rayjob_name:
        # A transformer runs after namePrefix, so the RayJob gets exactly this name.
        doc["transformers"] = [yamlio.dump({
            "apiVersion": "builtin",
            "kind": "PatchTransformer",
            "metadata": {"name": RENAME_TRANSFORMER},
            "target": {"kind": "RayJob"},
            "patch": json.dumps(rayjob.name_ops(spec, rayjob_name)),
        }).rstrip("\n")]
    if size is not None:
        ops = textwrap.dedent(yamlio.dump(rayjob.size_patch(spec, size))).rstrip("\n")
        doc["patches"] = [{"target": {"kind": "RayJob"}, "patch": ops}]
        doc.yaml_set_comment_before_after_key(
            "patches", before=f"The run's size, from its run.yaml: {size.nnodes} GPU node(s) x {size.gpus_per_node} "
                              "GPUs.\n`rlgen run` writes it; `rlgen validate` checks it against the trainer config.")
    if labels:
        doc["labels"] = [{"pairs": dict(sorted(labels.items()))}]
        doc.yaml_set_comment_before_after_key("labels", before=_labels_comment(labels))
    hashed = "the rendered run" if naming == 1 else "run.yaml and the training base"
    comment = (f"Training run '{run}'. Change it in run.yaml; the RayJob name below is set by\n"
               f"`rlgen run` from a hash of {hashed}, so an edit starts a new RayJob.")
    return yamlio.dump(doc, comment)


def _labels_comment(labels: dict[str, str]) -> str:
    # A run of no sweep keeps the words it always had: they are hashed into its RayJob's name.
    own = "This run's Volcano queue and priority, read when its RayJob starts."
    if PRIORITY_LABEL in labels:
        own = f"{PRIORITY_LABEL}: this run's WorkloadPriorityClass; Kueue admits a queued run of higher priority first."
    if SWEEP_LABEL not in labels:
        return own
    sweep = (f"{SWEEP_LABEL}: the sweep this run belongs to (rlgen run sweep); rlgen run list groups by it,\n"
             "rlgen run rm --sweep removes its runs, "
             f"kubectl get rayjobs -l {SWEEP_LABEL}={labels[SWEEP_LABEL]} finds them.")
    return sweep + ("\n" + own if len(labels) > 1 else "")


def runs_index(runs: list[str], current: str | None = None, env: str = "", main_env: str = "") -> str:
    """An environment's runs index listing ``runs`` (as :data:`RUN_ENTRY`); given the ``current``
    text, only its list changes, so comments a user added to the index survive. ``env``: an
    environment other than the main cluster's ``main_env``, whose index starts empty."""
    entries = sorted(RUN_ENTRY.format(run=r) for r in runs)
    if current is None:
        comment = ("The active training runs: removing one here (or its folder) prunes its RayJob."
                   if not env else
                   f"The training runs of environment '{env}': list run folders here ({RUN_ENTRY.format(run='<run>')}).\n"
                   f"overlays/{main_env}/runs/ lists the runs of '{main_env}', which rlgen run edits; a run may be in both.")
        return yamlio.dump(_kustomization(resources=entries), comment)
    doc = yamlio.load(current)
    if not isinstance(doc, dict):
        # kustomize refuses it too ("kustomization.yaml is empty"): nothing to keep the comments of.
        raise ValueError("empty or not a mapping, so not a kustomization: write it as a kustomization "
                         "(resources: the run folders) first")
    doc["resources"] = entries
    return yamlio.dump(doc)
