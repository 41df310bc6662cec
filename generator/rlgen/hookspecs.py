"""The plugin contract of rlgen: every hook a plugin may implement.

A plugin is a module registered under the entry-point group ``rlgen``::

    [project.entry-points.rlgen]
    my-sandbox = "my_package.my_sandbox"

It implements :func:`rlgen_plugin` to say who it is, and any other hook to contribute to the
generated repository. Only the selected plugins (one per slot) are registered while a
repository is generated, so a hook never asks whether its plugin was chosen.

Call semantics, the same for every hook unless its docstring says otherwise:

- every selected plugin's implementation is called, and the results are used in slot order
  (``sandbox, storage, dataset, rollout, sync, tracking, secrets, queue``), whatever order ``--plugin`` flags came in;
- a hook returning a list may return an empty list (or ``None``) to contribute nothing;
- hooks marked *first result* are answered by the one plugin of the slot they belong to
  (:data:`FIRST_RESULT`); rlgen refuses an answer from a plugin of another slot, naming both;
- ``ctx`` (:class:`~rlgen.contributions.Context`) is the selection and its shared names.

Plugins import what they use from :mod:`rlgen.plugin_api` only (``hookimpl``, the types of
:mod:`rlgen.contributions`, option checks and Kubernetes name rules); the built-in plugins
(``rlgen_plugins``) do too. Each example below runs in the test suite through the real
pipeline (``tests/contract/test_hook_examples.py``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import pluggy

if TYPE_CHECKING:
    from rlgen.contributions import (
        ConfigFile, Context, DatasetFormat, Document, Finding, ImageBuild, Patch, PluginInfo, Problem,
        Rendered, Resource, SecretDelivery, SecretRef, Stage, TrainingImage, UpstreamSource)

hookspec = pluggy.HookspecMarker("rlgen")
#: Decorate plugin functions with this: ``@hookimpl def rlgen_plugin(): ...``
hookimpl = pluggy.HookimplMarker("rlgen")
#: The slot whose plugin answers each *first result* hook, filled by :func:`first_result`.
FIRST_RESULT: dict[str, str] = {}


def first_result(slot: str):
    """A *first result* hook (pluggy's ``firstresult``), answered by the plugin of ``slot``
    alone: rlgen refuses an answer from a plugin of another slot."""
    def mark(spec):
        FIRST_RESULT[spec.__name__] = slot
        return hookspec(firstresult=True)(spec)

    return mark


# ---- Who the plugin is -----------------------------------------------------------------------
@hookspec
def rlgen_plugin() -> PluginInfo:
    """Describe the plugin: its name (the entry-point name), slot, summary and options.

    Called on every installed plugin, selected or not (``rlgen plugins`` lists them all).
    An option's ``check`` returns an error message or ``None``; ``rlgen.plugin_api`` has ready
    ones (``image_reference_error``, ``duration_error``, ``int_range(1, 8)``, ...). Hooks read
    the converted values with ``ctx.options(name)``. An answer naming something of the user's
    (a bucket, a region, a role) has no default: ``required=True``. ``required_when=("auth",
    "rrsa")`` requires an option only while an earlier one has that value, and asks it right
    after (``("rlgen.region", in_mainland_china)``: one of rlgen's own answers, tested by a
    predicate); ``cross_check(value, earlier)`` checks it against the plugin's answers before it
    (``endpoint_region_error``, ``same_account_error``).

    Example::

        @hookimpl
        def rlgen_plugin():
            return PluginInfo(
                name="vllm", slot="rollout", summary="vLLM async rollout",
                options=(
                    # --set vllm.gpu_memory_utilization=0.6: converted by `type`, then `check`ed
                    Option("gpu_memory_utilization", "KV-cache share", 0.5, float,
                           check=lambda share: None if 0 < share <= 1 else "must be in (0, 1]"),
                    # no default: rlgen new asks for it on a terminal, --no-input names it
                    Option("reward_url", "URL of the team's reward server", required=True,
                           check=lambda url: None if url.startswith("https://") else "must be an https:// URL"),
                ),
            )
    """


@hookspec
def rlgen_check(ctx: Context) -> list[Problem]:
    """Look at the whole selection and return its problems (empty when it is fine).

    Each problem names the plugins involved; any problem stops ``rlgen new``, ``rlgen update``
    and ``rlgen cluster`` (which render the selection again) with exit code 2 before anything
    is written.

    Example::

        @hookimpl
        def rlgen_check(ctx):
            if ctx.plugins["rollout"] == "sglang" and ctx.spec.gpus_per_node < 2:
                return [Problem("this reward model needs 2 GPUs per node", ("sglang", "rlgen"))]
            return []
    """


# ---- The training run: verl's config, tools, image and data ----------------------------------
@hookspec
def rlgen_trainer_config(ctx: Context) -> dict:
    """Return a fragment of verl's Hydra trainer config (nested dicts).

    Fragments are deep-merged in slot order into ``base/training/trainer.yaml``; a later slot
    wins on the same key. Paths and GPU counts that Kubernetes objects share are set by the
    generator after the fragments, from the spec.

    Example::

        @hookimpl
        def rlgen_trainer_config(ctx):
            # ctx.options(NAME): a selected plugin's options, converted and checked (a method)
            share = ctx.options("vllm")["gpu_memory_utilization"]
            return {"actor_rollout_ref": {"rollout": {"gpu_memory_utilization": round(share + 0.1, 2)}}}
    """


@hookspec
def rlgen_tools(ctx: Context) -> list[dict]:
    """Return verl tool entries (dicts in the tool-config format of the repository's verl
    release, ``verl_release(ctx.spec)``: a ``BaseTool`` class of ``config.type`` ``.tool_type``;
    rlgen's own tools ship in the training image as ``rlgen_verl_tools``).

    They are collected into the trainer ConfigMap key ``spec.tool_config_key``, and
    ``actor_rollout_ref.rollout.multi_turn.tool_config_path`` points at it.

    Example::

        @hookimpl
        def rlgen_tools(ctx):
            return [{"class_name": "rlgen_verl_tools.rewards.Geo3kRewardTool",
                     "config": {"type": verl_release(ctx.spec).tool_type},
                     "tool_schema": {"type": "function", "function": {"name": "calc_geo3k_reward"}}}]
    """


@hookspec
def rlgen_config_files(ctx: Context) -> list[ConfigFile]:
    """Return files that become keys of the trainer ConfigMap.

    The ConfigMap is mounted at ``spec.configs_mount``, so a file's path in the trainer is
    ``ctx.spec.config_path(key)``.

    Example::

        @hookimpl
        def rlgen_config_files(ctx):
            return [ConfigFile("reward_weights.json", '{"format": 0.1}\\n')]
    """


@first_result("rollout")
def rlgen_training_image(ctx: Context) -> TrainingImage:
    """Return the training image of the rollout engine. *First result*: the rollout plugin.

    The generator writes ``images/training/Dockerfile`` from its base (plus verl
    ``spec.verl_version`` from PyPI and every plugin's :func:`rlgen_training_packages`) and
    points the RayJob at ``spec.training_image`` tagged ``<tag>-<hash of images/training>``,
    so that every change of the image's files reaches the nodes under a new tag.

    Example::

        @hookimpl
        def rlgen_training_image(ctx):
            return TrainingImage(verl_release(ctx.spec).base_image("vllm"), f"{ctx.spec.verl_version}-vllm")
    """


@hookspec
def rlgen_training_packages(ctx: Context) -> list[str]:
    """Return pip requirements the training image needs for this plugin's part of the run.

    Example::

        @hookimpl
        def rlgen_training_packages(ctx):
            return ["mathruler==0.1.0"]  # geometry3k's reward
    """


@first_result("dataset")
def rlgen_dataset_format() -> DatasetFormat:
    """Return how a dataset plugin maps source rows to verl rows. *First result*: the dataset
    plugin.

    Takes no context: ``rlgen data prepare --dataset NAME`` calls it outside any repository,
    and the generator reads the default model from it before the spec exists.

    Example::

        @hookimpl
        def rlgen_dataset_format():
            return DatasetFormat("gsm8k", "openai/gsm8k", ("question", "answer"), map_row,
                                 default_model="Qwen/Qwen2.5-3B-Instruct", config="main")
    """


# ---- What the cluster gets: upstream roots, Components and the sync engine's entry points ----
@hookspec
def rlgen_upstream_sources(ctx: Context) -> list[UpstreamSource]:
    """Return upstream kustomize roots installed before the platform.

    They are never remote bases of the generated kustomizations: the sync plugin turns each
    into a pinned source of its engine, so the repository's own roots still build offline.

    Example::

        @hookimpl
        def rlgen_upstream_sources(ctx):
            return [UpstreamSource("sandbox-operator", "https://github.com/openkruise/agents",
                                   "v0.3.0", "config/default", "sandbox-system")]
    """


@hookspec
def rlgen_resources(ctx: Context) -> list[Resource]:
    """Return objects of the plugin's kustomize Component, one Component per layer.

    Resources of :attr:`Layer.PLATFORM <rlgen.contributions.Layer>` land in
    ``components/<plugin>/platform/``, which every platform overlay lists; ``TRAINING`` ones in
    ``components/<plugin>/training/``, which the training base (and so every run) lists;
    ``INFRASTRUCTURE`` ones in ``components/<plugin>/infrastructure/``, synced first. Any other
    layer is an error naming the plugin.

    Example::

        @hookimpl
        def rlgen_resources(ctx):
            quota = {"apiVersion": "v1", "kind": "ResourceQuota",
                     "metadata": {"name": "gpu-quota", "namespace": ctx.spec.namespace},
                     "spec": {"hard": {"requests.nvidia.com/gpu": "16"}}}
            return [Resource(Layer.PLATFORM, "gpu-quota.yaml", quota, "At most two 8-GPU runs at a time.")]
    """


@hookspec
def rlgen_patches(ctx: Context) -> list[Patch]:
    """Return kustomize patches applied by the plugin's Component of their layer.

    A patch is written to ``components/<plugin>/<layer>/<patch.name>.yaml``. Target objects
    whose names carry a hash (the dataset Job, a run's RayJob) by a label selector, or by kind.

    A dict is a strategic merge patch: fine on core kinds, whose lists merge by key. On a custom
    resource (a RayJob) kustomize knows no merge keys and a list in the patch replaces the whole
    list: patch a CRD with JSON 6902 operations (a list) instead. kustomize applies a patch
    whose target matches no object to nothing, silently, so ``rlgen new`` refuses such a patch
    with an error naming the plugin and the patch.

    Example::

        @hookimpl
        def rlgen_patches(ctx):
            # A core kind, strategic merge: give the dataset Job more memory.
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": ctx.spec.dataset_job},
                   "spec": {"template": {"spec": {"containers": [
                       {"name": "pipeline", "resources": {"limits": {"memory": "16Gi"}}}]}}}}
            selector = f"app.kubernetes.io/name={ctx.spec.dataset_job}"
            # A CRD, JSON 6902: append to the head's env without replacing the list.
            env = [{"op": "add", "path": "/spec/rayClusterSpec/headGroupSpec/template/spec/containers/0/env/-",
                    "value": {"name": "NCCL_DEBUG", "value": "WARN"}}]
            return [Patch(Layer.PLATFORM, {"kind": "Job", "labelSelector": selector}, job,
                          "dataset-job-memory", "Large data sets need more memory."),
                    Patch(Layer.TRAINING, {"group": "ray.io", "kind": "RayJob"}, env,
                          "rayjob-nccl-debug", "NCCL warnings in the head's log.")]
    """


@first_result("sync")
def rlgen_sync_files(ctx: Context, stages: list[Stage]) -> dict[str, list[Document]]:
    """Return the sync engine's entry points: ``{path: [Document, ...]}``. *First result*: the
    sync plugin.

    Called once per cluster that syncs the repository (``rlgen.cluster``, then each cluster of
    ``rlgen cluster add``), with ``ctx.spec.cluster`` and ``ctx.spec.environment`` set to that
    cluster's. A cluster's entry points belong under ``clusters/<ctx.spec.cluster>/``. A file
    elsewhere is shared by every cluster and must be the same for each (a plugin returning two
    texts for one shared path fails): the objects that apply the stages' ``upstream`` roots
    belong in ``UPSTREAM_FOLDER``, one kustomization that each cluster's entry points include,
    so that one object syncs every upstream root of every cluster and its owner stays the
    cluster's entry point.

    :param ctx: the selection and its shared names, for this cluster.
    :param stages: the sync order (infrastructure -> platform -> runs); the files must make the
        engine apply the stages in that order and prune what leaves Git, and hold back what
        comes after a stage until it is ready, except a stage with ``wait`` False (the runs,
        the optional Secrets): applied, never waited for.

    Example::

        @hookimpl
        def rlgen_sync_files(ctx, stages):
            source = {"kind": "GitRepository", "name": "flux-system"}
            return {f"clusters/{ctx.spec.cluster}/{s.name}.yaml": [Document(
                {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                 "metadata": {"name": s.name, "namespace": "flux-system"},
                 "spec": {"interval": "10m", "path": s.path, "prune": True, "sourceRef": source,
                          "dependsOn": [{"name": d} for d in s.depends_on]}},
                f"Stage {s.name}: applied after {', '.join(s.depends_on) or 'nothing'}.")]
                for s in stages if s.path}
    """


# ---- Secrets: which the objects read, and how they reach the cluster -------------------------
@hookspec
def rlgen_secrets(ctx: Context) -> list[SecretRef]:
    """Return the Secrets this plugin's objects read (name, namespace, keys, what reads them).

    Declare a Secret here and never write its values: the secrets plugin delivers every declared
    Secret in its own way (a ``kubectl`` step in the README, a SOPS-encrypted file, an
    ExternalSecret), so a plugin needs no knowledge of the modes. ``rlgen validate`` reports an
    object that references a Secret no plugin declared.

    Example::

        @hookimpl
        def rlgen_secrets(ctx):
            return [SecretRef("wandb-api-key", ctx.spec.namespace, ("key",),
                              "Weights & Biases API key", "the trainer")]
    """


@first_result("secrets")
def rlgen_secret_delivery(ctx: Context, secrets: list[SecretRef]) -> SecretDelivery:
    """Deliver the declared Secrets to the cluster, each with its ``labels``. *First result*: the
    secrets plugin.

    :param secrets: every Secret the selected plugins (and rlgen itself) declare, in slot order.
    :returns: the README's section on Secrets, the files that deliver them and, when those hold
        ``secrets/kustomization.yaml``, the ``secrets`` stage synced before every other one.

    Example::

        @hookimpl
        def rlgen_secret_delivery(ctx, secrets):
            lines = [f"- `{s.name}` in `{s.namespace}`: keys {', '.join(s.keys)}" for s in secrets]
            return SecretDelivery("## Secrets\\nCreate these before the first sync:\\n\\n" + "\\n".join(lines) + "\\n")
    """


# ---- The repository's other files ------------------------------------------------------------
@hookspec
def rlgen_files(ctx: Context) -> dict[str, str]:
    """Return plain files of the repository, ``{path: text}`` (values files, scripts).

    Example::

        @hookimpl
        def rlgen_files(ctx):
            return {"docs/sandbox.md": "# The sandbox\\n"}
    """


@hookspec
def rlgen_images(ctx: Context) -> list[ImageBuild]:
    """Return the images the repository builds from folders the plugin writes (``rlgen_files``).

    Each is tagged :meth:`ImageBuild.of` the folder's files, as ``images/training`` is, so the
    objects that run it follow the folder: a changed file is a new tag. ``images/build.sh``
    (which the images workflow runs) lists each one, builds it when the registry lacks its tag
    and refuses a folder whose files no longer match it. A folder holding a ``build.sh`` is
    built by it, run as ``sh <folder>/build.sh <reference>`` (it must push the reference);
    any other folder is a Docker build context.

    Example::

        PROXY = {"images/proxy/Dockerfile": "FROM nginx:1.27\\n"}

        @hookimpl
        def rlgen_files(ctx):
            return PROXY

        @hookimpl
        def rlgen_images(ctx):
            # The tag the plugin's objects name (an image: field): the same files, hashed.
            files = {path: text.encode() for path, text in PROXY.items()}
            return [ImageBuild.of(files, "images/proxy", f"{ctx.spec.registry}/proxy", "v1")]
    """


@hookspec
def rlgen_readme(ctx: Context) -> list[str]:
    """Return Markdown sections for the generated README.

    Example::

        @hookimpl
        def rlgen_readme(ctx):
            return ["## Dashboards\\nGrafana boards for the runs live in `dashboards/`."]
    """


# ---- Later, on every validate and update -----------------------------------------------------
@hookspec
def rlgen_validate_rules(ctx: Context, objects: list[Rendered]) -> list[Finding]:
    """Return the problems the plugin finds in the rendered repository, which no schema holds.

    ``rlgen validate`` calls it on the repository's plugins with every object the repository
    renders (and ``rlgen new`` on what it is about to commit, refusing a repository with any).
    Each finding names the object as ``rlgen validate`` shows it: its ``source`` and ``label``;
    ``fix`` says what resolves it (a command or an edit), shown beside the problem.

    :param ctx: the repository's selection and its shared names.
    :param objects: each rendered object; a run's objects have the source
        ``runs/<run>/run.yaml``, and a RayJob's ``trainer_config`` is the verl config its pods
        mount (the training base and its run's ``run.yaml``, merged).

    Example::

        @hookimpl
        def rlgen_validate_rules(ctx, objects):
            # A run that saves no checkpoint loses everything with a node.
            return [Finding(o.source, o.label, "trainer.save_freq is -1: the run saves no checkpoint",
                            fix=f"rlgen run set {o.source.split('/')[1]} trainer.save_freq=20")
                    for o in objects
                    if o.kind == "RayJob" and o.trainer_config["trainer"]["save_freq"] == -1]
    """


@hookspec
def rlgen_migrate(ctx: Context, from_version: str, to_version: str, files: Mapping[str, str]) -> dict[str, str | None]:
    """Carry a repository written by an older version of this plugin over to the current one.

    Called by ``rlgen update`` (and ``rlgen cluster``) on *this plugin only*, once per selected
    plugin whose installed version differs from the one ``rlgen.yaml`` records under
    ``plugin_versions``; never on plugins that are newly selected. It is called twice with the
    same versions: on rlgen's previous render and on the user's branch, before the two are merged
    with the new render, so a file the plugin moved or reshaped keeps the user's edits. It must
    depend on its arguments only.

    :param ctx: the new selection and its shared names.
    :param from_version: the plugin version that wrote the repository (``rlgen.yaml``).
    :param to_version: the installed version of the plugin.
    :param files: the text files of the tree being migrated, ``{path: text}``.
    :returns: the files to change, ``{path: new text}``, with ``None`` to delete one.

    Example::

        @hookimpl
        def rlgen_migrate(ctx, from_version, to_version, files):
            # 0.3 renamed docs/math.md to docs/example-math.md
            if from_version.startswith(("0.1.", "0.2.")) and "docs/math.md" in files:
                return {"docs/math.md": None, "docs/example-math.md": files["docs/math.md"]}
            return {}
    """
