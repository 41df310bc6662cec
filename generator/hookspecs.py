"""The plugin contract of rlgen: every hook a plugin may implement.

A plugin is a module (or object) registered under the entry-point group ``rlgen``::

    [project.entry-points.rlgen]
    my-sandbox = "my_package.my_sandbox"

It implements :func:`rlgen_plugin` to say who it is, and any of the other hooks to
contribute to the generated repository. Only the plugins selected for a repository (one per
slot) are registered while it is generated, so a hook never has to ask whether its plugin
was chosen. Every contribution hook receives a :class:`rlgen.selection.Context`:

- ``ctx.spec``: the shared names and paths (:class:`rlgen.spec.Spec`), never typed twice;
- ``ctx.options(name)``: the validated options of plugin ``name``;
- ``ctx.plugins``: the selected plugin names by slot.

Built-in plugins in ``rlgen_plugins`` use nothing but this module, :mod:`rlgen.contributions`
and :mod:`rlgen.spec`.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("rlgen")
#: Decorate plugin functions with this: ``@hookimpl def rlgen_plugin(): ...``
hookimpl = pluggy.HookimplMarker("rlgen")


@hookspec
def rlgen_plugin():
    """Describe the plugin: its name, slot, one-line summary and options.

    Called on every installed plugin (selected or not), e.g. for ``rlgen plugins``.
    Return a :class:`rlgen.contributions.PluginInfo`.

    Example::

        @hookimpl
        def rlgen_plugin():
            return PluginInfo(
                name="vllm", slot="rollout", summary="vLLM async rollout",
                options=(Option("gpu_memory_utilization", "KV-cache share", 0.5, float),),
            )
    """


@hookspec
def rlgen_check(ctx):
    """Look at the whole selection and return the problems it has (empty when fine).

    Each :class:`rlgen.contributions.Problem` names the plugins involved; any problem
    stops ``rlgen new`` with exit code 2 before anything is written.

    Example::

        @hookimpl
        def rlgen_check(ctx):
            if ctx.plugins["dataset"] == "geometry3k" and "VL" not in ctx.spec.model:
                return [Problem("geometry3k needs a vision-language model",
                                ("geometry3k", ctx.plugins["rollout"]))]
            return []
    """


@hookspec
def rlgen_trainer_config(ctx):
    """Return a fragment of verl's Hydra trainer config (nested dicts).

    Fragments are deep-merged in slot order (sandbox, storage, dataset, rollout, sync) into
    ``base/training/trainer.yaml``; a later slot wins on the same key.

    Example::

        @hookimpl
        def rlgen_trainer_config(ctx):
            return {"actor_rollout_ref": {"rollout": {"name": "vllm", "mode": "async"}}}
    """


@hookspec
def rlgen_tools(ctx):
    """Return verl tool entries (dicts of the pinned verl line's tool-config format).

    They are collected into the trainer ConfigMap key ``spec.tool_config_key`` and
    ``actor_rollout_ref.rollout.multi_turn.tool_config_path`` points at it.

    Example::

        @hookimpl
        def rlgen_tools(ctx):
            return [{"class_name": "verl.tools.gsm8k_tool.Gsm8kTool",
                     "config": {"type": "native"}, "tool_schema": {...}}]
    """


@hookspec
def rlgen_config_files(ctx):
    """Return :class:`rlgen.contributions.ConfigFile` items: keys of the trainer ConfigMap.

    The ConfigMap is mounted at ``spec.configs_mount``, so a file's path in the trainer is
    ``ctx.spec.config_path(key)``.

    Example::

        @hookimpl
        def rlgen_config_files(ctx):
            return [ConfigFile(ctx.spec.mcp_config_key, json.dumps(servers, indent=2))]
    """


@hookspec
def rlgen_resources(ctx):
    """Return :class:`rlgen.contributions.Resource` items: objects of the plugin's component.

    A plugin's resources of layer ``platform`` land in ``components/<plugin>/platform/``,
    which every platform overlay lists; ``training`` ones in ``components/<plugin>/training/``,
    which the training base lists.

    Example::

        @hookimpl
        def rlgen_resources(ctx):
            svc = {"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": ctx.spec.mcp_service}, "spec": {...}}
            return [Resource("platform", "service.yaml", svc, "Reached by the trainer's MCP tool")]
    """


@hookspec
def rlgen_patches(ctx):
    """Return :class:`rlgen.contributions.Patch` items applied by the plugin's component.

    Example::

        @hookimpl
        def rlgen_patches(ctx):  # run the dataset Job under the storage role's ServiceAccount
            return [Patch("platform", {"kind": "Job", "name": ctx.spec.dataset_job},
                          {"spec": {"template": {"spec": {"serviceAccountName": "reader"}}}})]
    """


@hookspec(firstresult=True)
def rlgen_training_image(ctx):
    """Return the :class:`rlgen.contributions.TrainingImage` of the rollout slot's plugin.

    The generator writes ``images/training/Dockerfile`` from its base (plus the verl checkout
    of ``spec.verl_version`` and every plugin's :func:`rlgen_training_packages`) and points
    the RayJob at ``spec.training_image`` with its tag.

    Example::

        @hookimpl
        def rlgen_training_image(ctx):
            return TrainingImage("verlai/verl:vllm017.latest", f"{ctx.spec.verl_version}-vllm")
    """


@hookspec
def rlgen_training_packages(ctx):
    """Return pip requirements the training image needs for this plugin's part of the run.

    Example::

        @hookimpl
        def rlgen_training_packages(ctx):
            return ["mathruler==0.1.0"]  # geometry3k's reward
    """


@hookspec
def rlgen_upstream_sources(ctx):
    """Return :class:`rlgen.contributions.UpstreamSource` items installed before the platform.

    Upstream kustomize roots are never remote bases of the generated kustomizations: the
    sync plugin turns each into a pinned source of its engine.

    Example::

        @hookimpl
        def rlgen_upstream_sources(ctx):
            return [UpstreamSource("sandbox-operator", "https://github.com/openkruise/agents",
                                   "v0.3.0", "config/default", "sandbox-system")]
    """


@hookspec(firstresult=True)
def rlgen_sync_files(ctx, stages):
    """Return ``{path: [object, ...]}``: the sync engine's entry points.

    An item may be ``(object, comment)`` to put a comment above that object in the file.

    Only the sync slot's plugin implements this. ``stages`` is the ordered list of
    :class:`rlgen.contributions.Stage` (infrastructure -> platform -> runs); the files must
    make the engine apply them in that order and prune what leaves Git.

    Example::

        @hookimpl
        def rlgen_sync_files(ctx, stages):
            return {f"clusters/{ctx.spec.cluster}/{s.name}.yaml": kustomization(s) for s in stages}
    """


@hookspec
def rlgen_files(ctx):
    """Return ``{path: text}``: plain files of the repository (Dockerfiles, scripts).

    Example::

        @hookimpl
        def rlgen_files(ctx):
            return {"images/training/Dockerfile": f"FROM {base_image}\\n..."}
    """


@hookspec
def rlgen_secrets(ctx):
    """Return :class:`rlgen.contributions.SecretRef` items: Secrets the repository names.

    The repository never holds a secret value; the generated README tells how to create
    each Secret listed here.

    Example::

        @hookimpl
        def rlgen_secrets(ctx):
            return [SecretRef("oss-credentials", ctx.spec.namespace, ("akId", "akSecret"),
                              "OSS AccessKey for the CSI driver", "PersistentVolumes")]
    """


@hookspec
def rlgen_readme(ctx):
    """Return Markdown sections (strings) for the generated README.

    Example::

        @hookimpl
        def rlgen_readme(ctx):
            return ["## Sandbox\\nThe open-source OpenKruise agents operator ..."]
    """


@hookspec(firstresult=True)
def rlgen_dataset_format():
    """Return the :class:`rlgen.contributions.DatasetFormat` of a dataset-slot plugin.

    Takes no context: ``rlgen data prepare --dataset NAME`` calls it outside any repository,
    and the generator reads the default model from it before the spec exists.

    Example::

        @hookimpl
        def rlgen_dataset_format():
            return DatasetFormat("gsm8k", "openai/gsm8k", ("question", "answer"), map_row,
                                 default_model="Qwen/Qwen2.5-3B-Instruct")
    """
