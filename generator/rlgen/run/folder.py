"""A run's folder written: the keys of its ``run.yaml``, its ``kustomization.yaml`` (the training
base under the run's names, with its own size, labels and pinned RayJob name), its entry in the
runs index; and the labels a run is given. What reads them back is :mod:`rlgen.run.files`; the
RayJob's name is :mod:`rlgen.run.naming`'s.

A run's size and name reach its RayJob as a JSON patch of the base RayJob, whose paths are
here: :mod:`rlgen.generate.rayjob` and :mod:`rlgen.generate.gang` shape the base at them.
"""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from rlgen import pool
from rlgen.errors import RlgenError
from rlgen.naming import dns1123_label_error
from rlgen.repo import answers
from rlgen.repo.layout import RUN_ENTRY, RUN_LINK, TRAINING_BASE
from rlgen.run import checkpoints
from rlgen.run.files import RENAME_TRANSFORMER, folder_of, index_path, read_data
from rlgen.spec import Spec
from rlgen.tools import repo_files, yamlio
from rlgen.verl.batch_rules import Size

#: The label every object of a sweep's runs carries (``rlgen run sweep``): the sweep's name.
SWEEP_LABEL = "rlgen.io/sweep"
#: The label Kueue reads a job's WorkloadPriorityClass from (kueue constants.WorkloadPriorityClassLabel).
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
#: The label naming the LocalQueue Kueue queues a job in (kueue constants.QueueLabel).
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: The labels by which KubeRay's Volcano integration picks a RayJob's queue and priority.
VOLCANO_QUEUE = "volcano.sh/queue-name"
VOLCANO_PRIORITY = "ray.io/priority-class-name"
#: The labels of ACK's Gang scheduling on every pod: the pod group and its size.
POD_GROUP = "pod-group.scheduling.sigs.k8s.io/name"
MIN_AVAILABLE = "pod-group.scheduling.sigs.k8s.io/min-available"
#: Paths in the base RayJob.
CLUSTER = "/spec/rayClusterSpec"
WORKERS = f"{CLUSTER}/workerGroupSpecs/0"
TEMPLATES = (f"{CLUSTER}/headGroupSpec/template", f"{WORKERS}/template")
GPU = "nvidia.com/gpu"


def kustomization(**fields) -> dict:
    """A ``kustomization.yaml`` of ``fields``."""
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **fields}


def run_kustomization(spec: Spec, run: str, rayjob_name: str | None, naming: int = 1, size: Size | None = None,
                      labels: dict[str, str] | None = None) -> str:
    """``runs/<run>/kustomization.yaml``; without ``rayjob_name`` it renders the unnamed run
    whose RayJob spec (naming scheme 1) or inputs (scheme 2) the name is hashed from. ``size``:
    the run's own ``trainer.nnodes`` x ``trainer.n_gpus_per_node`` when its run.yaml sets them
    (else the base's size holds). ``labels``: the run's own Volcano queue and priority."""
    doc = kustomization(
        resources=[f"../../{TRAINING_BASE}"],
        # Every object of the run carries its name, so runs never collide in one namespace.
        namePrefix=f"{run}-",
        configMapGenerator=[{"name": spec.trainer_configmap, "behavior": "merge", "files": [spec.run_config_key]}],
    )
    if size is not None or labels:
        # Comments need ruamel's map; a run of the base's size keeps the plain, faster dump.
        doc = CommentedMap(doc)
    if rayjob_name:
        # A transformer runs after namePrefix, so the RayJob gets exactly this name.
        doc["transformers"] = [yamlio.dump({
            "apiVersion": "builtin",
            "kind": "PatchTransformer",
            "metadata": {"name": RENAME_TRANSFORMER},
            "target": {"kind": "RayJob"},
            "patch": json.dumps(name_ops(spec, rayjob_name)),
        }).rstrip("\n")]
    if size is not None:
        ops = textwrap.dedent(yamlio.dump(size_patch(spec, size))).rstrip("\n")
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


def escape(key: str) -> str:
    """A map key as one JSON pointer segment."""
    return key.replace("~", "~0").replace("/", "~1")


def size_patch(spec: Spec, size: Size) -> list[dict]:
    """JSON 6902 operations giving the base RayJob ``size`` (a run's ``trainer.nnodes`` and
    ``trainer.n_gpus_per_node``); a list patch, because kustomize would replace a whole
    ``workerGroupSpecs`` list in a strategic merge of a custom resource. Under ACK's Gang
    scheduling, a resized run's pod group waits for its own number of pods."""
    ops = [{"op": "replace", "path": f"{WORKERS}/{field}", "value": size.nnodes}
           for field in ("replicas", "minReplicas", "maxReplicas")]
    limits = f"{WORKERS}/template/spec/containers/0/resources/limits"
    # A worker of fewer GPUs than a node takes that share of its CPU and memory (rlgen.pool).
    ops += [{"op": "replace", "path": f"{limits}/{escape(key)}", "value": value}
            for key, value in pool.of(spec).worker_resources(size.gpus_per_node).items()]
    if spec.gang_scheduling == "coscheduling":
        ops += [{"op": "replace", "path": f"{t}/metadata/labels/{escape(MIN_AVAILABLE)}", "value": str(1 + size.nnodes)}
                for t in TEMPLATES]
    return ops


def name_ops(spec: Spec, rayjob_name: str) -> list[dict]:
    """Operations after a run's RayJob got its name (``/metadata/name`` and what follows it):
    the name in the pods, where resume.py makes it the RayJob's checkpoint folder; under ACK's
    Gang scheduling each RayJob its own pod group, so two runs, or a run and its renamed
    successor, never share one."""
    ops = [{"op": "replace", "path": "/metadata/name", "value": rayjob_name}, *checkpoints.env_ops(rayjob_name, TEMPLATES)]
    if spec.gang_scheduling == "coscheduling":
        ops += [{"op": "replace", "path": f"{t}/metadata/labels/{escape(POD_GROUP)}", "value": rayjob_name}
                for t in TEMPLATES]
    return ops


def queue_labels(spec: Spec, queue: str | None, priority_class: str | None) -> dict[str, str]:
    """One run's own Volcano queue and priority, over the repository's (``rlgen run new --queue``)."""
    given = {VOLCANO_QUEUE: queue, VOLCANO_PRIORITY: priority_class}
    given = {k: v for k, v in given.items() if v is not None}
    if given and spec.gang_scheduling != "volcano":
        raise RlgenError("--queue and --priority-class need rlgen.gang_scheduling=volcano "
                         f"(this repository: {spec.gang_scheduling})")
    for key, value in given.items():
        if problem := dns1123_label_error(value):
            raise RlgenError(f"{'--queue' if key == VOLCANO_QUEUE else '--priority-class'}: {problem}")
    return given


def priority_labels(root: Path, priority: str | None) -> dict[str, str]:
    """``rlgen run new --priority``: ``{PRIORITY_LABEL: priority}``, the label Kueue reads the
    run's WorkloadPriorityClass from; refused in a repository whose runs Kueue does not queue."""
    if priority is None:
        return {}
    queue = answers.read(root).get("plugins", {}).get("queue", "no-queue")
    if queue != "kueue":
        raise RlgenError(f"--priority needs the kueue queue plugin (this repository: {queue}); "
                         "add it with rlgen update --plugin kueue --set kueue.gpu_quota=N")
    if problem := dns1123_label_error(priority):
        raise RlgenError(f"--priority: {problem}")
    return {PRIORITY_LABEL: priority}


def team_labels(root: Path, team: str | None) -> dict[str, str]:
    """``rlgen run new/sweep --team``: the LocalQueue of the run's team (``kueue.teams``), which
    Kueue queues it in. Never guessed: a repository of one team needs no option, one of several
    refuses a run without it."""
    doc = answers.read(root)
    queue = doc.get("plugins", {}).get("queue", "no-queue")
    teams = [t.strip() for t in str((doc.get("options", {}).get(queue) or {}).get("teams") or "").split(",")
             if t.strip()] if queue == "kueue" else []
    if not teams:
        if team is None:
            return {}
        raise RlgenError(f"--team needs the kueue queue plugin with kueue.teams answered (this repository: {queue}); "
                         "add it with rlgen update --set kueue.teams=TEAM,...")
    if team is None and len(teams) > 1:
        raise RlgenError(f"--team TEAM is needed: the pool is shared by teams {', '.join(teams)} (kueue.teams), "
                         "each with its own queue")
    team = teams[0] if team is None else team
    if team not in teams:
        raise RlgenError(f"--team {team}: not a team of this repository ({', '.join(teams)}, kueue.teams); "
                         "add it with rlgen update --set kueue.teams=...")
    return {KUEUE_QUEUE_LABEL: team}


def _labels_comment(labels: dict[str, str]) -> str:
    # A run of no sweep keeps the words it always had: they are hashed into its RayJob's name.
    own = "This run's Volcano queue and priority, read when its RayJob starts."
    if PRIORITY_LABEL in labels:
        own = f"{PRIORITY_LABEL}: this run's WorkloadPriorityClass; Kueue admits a queued run of higher priority first."
    if KUEUE_QUEUE_LABEL in labels:
        team = (f"{KUEUE_QUEUE_LABEL}: the LocalQueue of the run's team ({labels[KUEUE_QUEUE_LABEL]}); Kueue "
                "admits from the team that used the pool least lately.")
        own = team + ("\n" + own if PRIORITY_LABEL in labels else "")
    if SWEEP_LABEL not in labels:
        return own
    sweep = (f"{SWEEP_LABEL}: the sweep this run belongs to (rlgen run sweep); rlgen run list groups by it,\n"
             "rlgen run rm --sweep removes its runs, "
             f"kubectl get rayjobs -l {SWEEP_LABEL}={labels[SWEEP_LABEL]} finds them.")
    return sweep + ("\n" + own if len(labels) > 1 else "")


def run_labels(repo: Path, run: str) -> dict[str, str]:
    """The labels the run's kustomization gives its objects (its own queue and priority)."""
    path = folder_of(repo, run) / "kustomization.yaml"
    doc = (read_data(repo_files.read_text(path, repo)) if path.is_file() else None) or {}
    return {str(k): str(v) for entry in doc.get("labels") or [] for k, v in (entry.get("pairs") or {}).items()}


def sweep_of(repo: Path, run: str) -> str | None:
    """The sweep ``run`` belongs to, by its kustomization's label."""
    return run_labels(repo, run).get(SWEEP_LABEL)


def set_keys(run_doc: CommentedMap, values: dict[str, Any]) -> None:
    """Set flat ``values`` in a loaded ``run.yaml``, keeping its comments and key order."""
    for key, value in values.items():
        node = run_doc
        *parents, leaf = key.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = CommentedMap()
            node = node[part]
        node[leaf] = value


def index_text(runs: list[str], current: str | None = None, env: str = "", main_env: str = "") -> str:
    """An environment's runs index listing ``runs`` (as :data:`RUN_ENTRY`); given the ``current``
    text, only its list changes, so comments a user added to the index survive. ``env``: an
    environment other than the main cluster's ``main_env``, whose index starts empty."""
    entries = sorted(RUN_ENTRY.format(run=r) for r in runs)
    if current is None:
        comment = ("The active training runs: removing one here (or its folder) prunes its RayJob."
                   if not env else
                   f"The training runs of environment '{env}': list run folders here ({RUN_ENTRY.format(run='<run>')}).\n"
                   f"overlays/{main_env}/runs/ lists the runs of '{main_env}', which rlgen run edits; a run may be in both.")
        return yamlio.dump(kustomization(resources=entries), comment)
    doc = yamlio.load(current)
    if not isinstance(doc, dict):
        # kustomize refuses it too ("kustomization.yaml is empty"): nothing to keep the comments of.
        raise ValueError("empty or not a mapping, so not a kustomization: write it as a kustomization "
                         "(resources: the run folders) first")
    doc["resources"] = entries
    return yamlio.dump(doc)


def link_text(run: str, fields: dict | None = None) -> str:
    """``overlays/<env>/runs/<run>/kustomization.yaml``: the environment gets ``run``. ``fields``:
    what an index moved here applied to its runs besides listing them (:mod:`rlgen.update.index_move`)."""
    doc = kustomization(**(fields or {}), resources=[RUN_LINK.format(run=run)])
    return yamlio.dump(doc, f"This environment runs '{run}': removing this folder prunes its RayJob here.")


def runs_readme(env: str, main_env: str) -> str:
    """The runs folder's README: it keeps the folder in Git with no run, and says how it works."""
    others = "" if env == main_env else f" `rlgen run` adds runs to `overlays/{main_env}/runs/` (or here, with `--env {env}`)."
    return (f"# The training runs of environment `{env}`\n\n"
            f"Each folder here gives the environment one run of `runs/`: its `kustomization.yaml` names\n"
            f"`{RUN_LINK.format(run='<run>')}`. No file lists them all: the sync engine builds this folder from\n"
            "its sub-folders, so run pull requests never edit a file in common and merge in any order.\n"
            f"Removing a run's folder here prunes its RayJob.{others} A YAML file here would be applied as\n"
            "it is: `rlgen validate` refuses one.\n")


def write_index(repo: Path, runs: list[str], env: str | None = None) -> None:
    """``env``'s runs (the main environment's by default), now ``runs``: its index, or the
    runs' folders of a runs folder without one."""
    path = index_path(repo, env)
    if path.name != "kustomization.yaml":
        # The folders as they are: a removed run's own folder may be gone already.
        before = {entry.name for entry in path.iterdir() if (entry / "kustomization.yaml").is_file()} \
            if path.is_dir() else set()
        for run in sorted(before - set(runs)):
            shutil.rmtree(path / run)
        for run in sorted(set(runs) - before):
            (path / run).mkdir(parents=True)
            (path / run / "kustomization.yaml").write_text(link_text(run))
        return
    try:
        text = index_text(runs, repo_files.read_text(path, repo))
    except ValueError as exc:
        raise RlgenError(f"{path.relative_to(repo)}: {exc}") from None
    path.write_text(text)
