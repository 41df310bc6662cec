"""Options -> plugin contributions -> in-memory file tree: everything ``rlgen new`` writes.

:func:`generate` runs :data:`STAGES` in order. Each stage adds its own files to the tree and
never changes what an earlier stage added. Nothing touches the disk until the tree is written.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import pluggy

from rlgen import sources
from rlgen.contributions import SLOTS, Context, Layer, SecretRef, Stage
from rlgen.errors import RlgenError
from rlgen.generate import dataset_job, model_job, readme, training_image
from rlgen.generate.filetree import FileTree
from rlgen.generate.kustomizations import (
    ENV_RUNS,
    RUNS_INDEX,
    TRAINING_BASE,
    Components,
    env_runs_index,
    run_kustomization,
    runs_index,
    write_infrastructure,
    write_platform,
    write_training,
)
from rlgen.generate import rayjob as rayjob_source
from rlgen.generate.rayjob import rayjob
from rlgen.registry import install
from rlgen.registry.selection import Selection
from rlgen.repo import answers
from rlgen.runs import naming_scheme
from rlgen.schemas.shipped import custom_schemas
from rlgen.spec import Spec
from rlgen.tools import yamlio
from rlgen.verl import batch_rules, trainer_config


@dataclass
class Build:
    """What the stages share: the inputs, and the tree they add to."""

    selection: Selection
    pm: pluggy.PluginManager
    spec: Spec
    ctx: Context
    run: str
    tree: FileTree = field(default_factory=FileTree)
    components: Components = field(default_factory=Components)
    stages: list[Stage] = field(default_factory=list)
    rayjob: str = ""

    def gather(self, hook: str, **kwargs) -> list:
        """Every item the selected plugins return from ``hook``, in slot order."""
        # pluggy calls the last registered plugin first; plugins are registered in slot order.
        results = reversed(getattr(self.pm.hook, hook)(ctx=self.ctx, **kwargs))
        return [item for batch in results if batch for item in batch]

    def only(self, hook: str, slot: str, **kwargs):
        """The answer of the one plugin that fills ``slot`` (a first-result hook)."""
        answer = getattr(self.pm.hook, hook)(ctx=self.ctx, **kwargs)
        if answer is None:
            raise RlgenError(f"{slot} plugin '{self.selection.plugins[slot]}' returns no {hook}()")
        return answer

    def secrets(self) -> list[SecretRef]:
        return self.gather("rlgen_secrets") + [dataset_job.hf_token(self.spec)]


def check_selection(b: Build) -> None:
    # Before anything else: a source no image build can reach is refused with what to pass.
    install.effective(b.spec.rlgen_install)
    found = [p for batch in b.pm.hook.rlgen_check(ctx=b.ctx) for p in (batch or [])]
    if found:
        raise RlgenError("; ".join(f"{' + '.join(p.plugins)}: {p.message}" for p in found))


def plugin_components(b: Build) -> None:
    """One kustomize Component per plugin and layer, from its resources and patches."""
    selected = [b.selection.plugins[s] for s in SLOTS]
    for plugin in selected:
        # Called one plugin at a time: each plugin's contributions go to its own Component.
        others = [b.pm.get_plugin(p) for p in selected if p != plugin]
        for hook, add in (("rlgen_resources", b.components.add_resource), ("rlgen_patches", b.components.add_patch)):
            for batch in b.pm.subset_hook_caller(hook, others)(ctx=b.ctx):
                for item in batch or []:
                    add(plugin, item)
    b.components.write(b.tree)


def training_base(b: Build) -> None:
    """``base/training``: the RayJob, the trainer config and the tool config every run shares."""
    fragments = [f for f in reversed(b.pm.hook.rlgen_trainer_config(ctx=b.ctx)) if f]
    tools = b.gather("rlgen_tools")
    config = trainer_config.base_trainer_config(b.spec, fragments, bool(tools))
    if found := batch_rules.problems(config):
        # The same rules rlgen run and rlgen validate apply: no repository verl would refuse.
        raise RlgenError("the trainer config breaks a verl batch rule: " + "; ".join(found))
    files = {b.spec.trainer_config_key: yamlio.dump(config)}
    if tools:
        files[b.spec.tool_config_key] = trainer_config.tool_config(tools)
    for cfg in b.gather("rlgen_config_files"):
        files[cfg.key] = cfg.content
    files[rayjob_source.WAIT_SCRIPT] = sources.text(f"{TRAINING_BASE}/{rayjob_source.WAIT_SCRIPT}")
    image = b.only("rlgen_training_image", "rollout")
    write_training(b.tree, b.spec, b.components, files, training_image.images_entry(b.spec, image))
    for key, text in files.items():
        b.tree.add(f"{TRAINING_BASE}/{key}", text)
    b.tree.add(f"{TRAINING_BASE}/rayjob.yaml", yamlio.dump(rayjob(b.spec)))
    b.tree.add("images/training/Dockerfile",
               training_image.dockerfile(b.spec, image, b.gather("rlgen_training_packages")))


def platform_base(b: Build) -> None:
    """``base/platform`` and the overlays: the namespace, the dataset and model Jobs and their identity."""
    job, comment = dataset_job.dataset_job(b.spec)
    model, model_comment = model_job.model_job(b.spec)
    write_platform(b.tree, b.spec, b.components, {
        "service-account.yaml": yamlio.dump(dataset_job.service_account(b.spec),
                                            "Identity of the dataset and model Jobs."),
        "dataset-job.yaml": yamlio.dump(job, comment),
        "model-job.yaml": yamlio.dump(model, model_comment),
    })
    b.tree.add("images/data/Dockerfile", dataset_job.data_dockerfile(b.spec))


def sync_entry_points(b: Build) -> None:
    """The stages in sync order, and the sync plugin's files that apply them, once per cluster
    (``rlgen.cluster`` and those of ``rlgen cluster add``), each with its environment's overlay."""
    has_infra = write_infrastructure(b.tree, b.components)
    for cluster, env in b.selection.all_clusters():
        stages = [
            Stage("infrastructure", "./infrastructure" if has_infra else "",
                  upstream=tuple(b.gather("rlgen_upstream_sources"))),
            Stage("platform", f"./overlays/{env}/platform", depends_on=("infrastructure",)),
            Stage("runs", f"./{_runs_root(b, env)}", depends_on=("platform",)),
        ]
        ctx = b.selection.context(replace(b.spec, cluster=cluster, environment=env))
        files = b.pm.hook.rlgen_sync_files(ctx=ctx, stages=stages)
        if files is None:
            raise RlgenError(f"sync plugin '{b.selection.plugins['sync']}' returns no rlgen_sync_files()")
        for path, docs in sorted(files.items()):
            b.tree.add(path, yamlio.dump_all([d.obj for d in docs], [d.comment for d in docs]))
        b.stages = b.stages or stages


def _runs_root(b: Build, env: str) -> str:
    """``runs`` for the main cluster's environment; another environment's own index, written once."""
    if env == b.spec.environment:
        return "runs"
    folder = ENV_RUNS.format(env=env)
    if f"{folder}/kustomization.yaml" not in b.tree.files:
        b.tree.add(f"{folder}/kustomization.yaml", env_runs_index(env, b.spec.environment))
    return folder


def plugin_files(b: Build) -> None:
    for files in reversed(b.pm.hook.rlgen_files(ctx=b.ctx)):
        for path, text in sorted((files or {}).items()):
            b.tree.add(path, text)


def reader_role(b: Build) -> None:
    """The read-only role of rlgen doctor and rlgen status (applied by hand, never synced)."""
    from rlgen.cluster import rbac

    sync_objects = [d for path, text in sorted(b.tree.files.items()) if path.startswith("clusters/")
                    for d in yamlio.read_plain_all(text.decode()) if isinstance(d, dict)]
    b.tree.add(rbac.PATH, rbac.reader_role([s.name for s in b.secrets()], sync_objects))


def schemas(b: Build) -> None:
    """The schemas of every custom kind the repository's YAML holds, so its CI validates
    them with no network."""
    types = set()
    for path, content in b.tree.files.items():
        if path.endswith((".yaml", ".yml")):
            try:
                docs = yamlio.read_plain_all(content.decode())
            except ValueError:  # a file kustomize or the sync engine reads as data, not an object
                continue
            types |= {(d["apiVersion"], d["kind"]) for d in docs if isinstance(d, dict)
                      and isinstance(d.get("apiVersion"), str) and isinstance(d.get("kind"), str)}
    for path, content in custom_schemas(types).items():
        b.tree.add(f"schemas/{path}", content)


def first_run(b: Build) -> None:
    """``runs/<run>/`` with its RayJob name pinned: a hash of the run's inputs in the tree
    (naming scheme 2, see :mod:`rlgen.runs.naming_scheme`), no render needed."""
    run_yaml = yamlio.dump(trainer_config.run_config(b.spec, b.run))
    folder = f"runs/{b.run}"
    run_files = {f"{folder}/kustomization.yaml": run_kustomization(b.spec, b.run, None, naming_scheme.CURRENT).encode(),
                 f"{folder}/{b.spec.run_config_key}": run_yaml.encode()}
    b.rayjob = naming_scheme.inputs_name(b.run, run_files, b.tree.files)
    b.tree.add(f"{folder}/{b.spec.run_config_key}", run_yaml)
    b.tree.add(f"{folder}/kustomization.yaml", run_kustomization(b.spec, b.run, b.rayjob, naming_scheme.CURRENT))
    b.tree.add(RUNS_INDEX, runs_index([b.run]))


def answers_file(b: Build) -> None:
    b.tree.add(answers.FILENAME, answers.render(b.selection, [s.name for s in b.secrets()], naming_scheme.CURRENT))


def skeleton(b: Build) -> None:
    """README, workflows and .gitignore."""
    parts = {layer.value: [path.split("/")[1] for path in b.components.paths(layer)] for layer in Layer}
    image = training_image.images_entry(b.spec, b.only("rlgen_training_image", "rollout"))
    readme.render(b.tree, b.spec, b.selection, b.run, b.secrets(), b.gather("rlgen_readme"),
                  readme.stage_rows(b.stages, {"infrastructure": parts["infrastructure"],
                                               "platform": parts["platform"]}, b.spec),
                  f"{image['newName']}:{image['newTag']}")


STAGES = (check_selection, plugin_components, training_base, platform_base, sync_entry_points, plugin_files,
          reader_role, schemas, first_run, answers_file, skeleton)


def generate(selection: Selection) -> Build:
    """The whole repository in memory; ``.tree`` holds it, ``.rayjob`` names the first run's RayJob."""
    pm = selection.plugin_manager()
    spec = selection.spec(pm)
    build = Build(selection, pm, spec, selection.context(spec), selection.values["rlgen"]["run"])
    for stage in STAGES:
        stage(build)
    return build

