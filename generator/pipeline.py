"""Options -> plugin contributions -> in-memory file tree: everything ``rlgen new`` writes.

Data flows one way: :func:`generate` reads the selection, asks the selected plugins for
their contributions and returns a :class:`FileTree`; nothing here touches the disk.
"""
from __future__ import annotations

from rlgen import __version__, answers, crd_schemas, runs, skeleton, trainer_config, training_image, yamlio
from rlgen.contributions import SLOTS, Stage
from rlgen.dataset_job import data_dockerfile, dataset_job, hf_token, service_account
from rlgen.errors import RlgenError
from rlgen.filetree import FileTree
from rlgen.kustomize_files import Components, write_infrastructure, write_platform, write_training
from rlgen.selection import Context, Selection, plugin_manager, problems
from rlgen.spec import Spec


def build_spec(selection: Selection, pm) -> Spec:
    core = selection.values["rlgen"]
    fmt = pm.hook.rlgen_dataset_format()
    if fmt is None:
        raise RlgenError(f"dataset plugin '{selection.plugins['dataset']}' returns no rlgen_dataset_format()")
    return Spec(
        namespace=core["namespace"],
        cluster=core["cluster"],
        git_url=core["git_url"],
        git_branch=core["git_branch"],
        dataset=fmt.name,
        dataset_source=core["dataset_source"] or fmt.source,
        model=core["model"] or fmt.default_model,
        verl_version=core["verl_version"],
        gpus_per_node=core["gpus_per_node"],
        nnodes=core["nnodes"],
        training_image=core["training_image"],
        data_image=core["data_image"],
        environment=core["environment"],
    )


def _flat(results) -> list:
    return [item for batch in results if batch for item in batch]


def _slot_order(results: list) -> list:
    """pluggy calls the last registered plugin first; plugins are registered in slot order."""
    return list(reversed(results))


def _gather(pm, hook: str, ctx: Context) -> list:
    """Every item the selected plugins return from ``hook``, in slot order."""
    return _flat(_slot_order(getattr(pm.hook, hook)(ctx=ctx)))


def generate(selection: Selection) -> tuple[FileTree, Spec, str]:
    """The whole repository but the run's RayJob name (it needs a kustomize render).

    Returns the tree, the spec and the name of the first run.
    """
    pm = plugin_manager(selection)
    spec = build_spec(selection, pm)
    ctx = Context(selection, spec)
    run = selection.values["rlgen"]["run"]
    found = problems(pm, ctx)
    if found:
        raise RlgenError("; ".join(f"{' + '.join(p.plugins)}: {p.message}" for p in found))

    tree = FileTree()
    components = Components()
    selected = [selection.plugins[s] for s in SLOTS]
    for plugin in selected:
        # Called one plugin at a time: each plugin's contributions go to its own component.
        others = [pm.get_plugin(p) for p in selected if p != plugin]

        def own(hook: str) -> list:
            return _flat(pm.subset_hook_caller(hook, others)(ctx=ctx))

        for res in own("rlgen_resources"):
            components.add_resource(plugin, res)
        for patch in own("rlgen_patches"):
            components.add_patch(plugin, patch)
    components.write(tree)

    fragments = [f for f in _slot_order(pm.hook.rlgen_trainer_config(ctx=ctx)) if f]
    tools = _gather(pm, "rlgen_tools", ctx)
    trainer_files = {spec.trainer_config_key: yamlio.dump(trainer_config.base_trainer_config(spec, fragments, bool(tools)))}
    if tools:
        trainer_files[spec.tool_config_key] = trainer_config.tool_config(tools)
    for cfg in _gather(pm, "rlgen_config_files", ctx):
        trainer_files[cfg.key] = cfg.content
    image = pm.hook.rlgen_training_image(ctx=ctx)
    if image is None:
        raise RlgenError(f"rollout plugin '{selection.plugins['rollout']}' returns no rlgen_training_image()")
    packages = _gather(pm, "rlgen_training_packages", ctx)
    tree.add("images/training/Dockerfile", training_image.dockerfile(spec, image, packages))
    write_training(tree, spec, components, trainer_files, training_image.images_entry(spec, image))

    job, job_comment = dataset_job(spec)
    write_platform(tree, spec, components, {
        "service-account.yaml": yamlio.dump(service_account(spec), "Identity of the dataset Job."),
        "dataset-job.yaml": yamlio.dump(job, job_comment),
    })

    has_infra = write_infrastructure(tree, components)
    upstream = tuple(_gather(pm, "rlgen_upstream_sources", ctx))
    stages = [
        Stage("infrastructure", "./infrastructure" if has_infra else "", upstream=upstream),
        Stage("platform", f"./overlays/{spec.environment}/platform", depends_on=("infrastructure",)),
        Stage("runs", "./runs", depends_on=("platform",)),
    ]
    sync_files = pm.hook.rlgen_sync_files(ctx=ctx, stages=stages)
    if not sync_files:
        raise RlgenError(f"sync plugin '{selection.plugins['sync']}' returns no rlgen_sync_files()")
    for path, docs in sorted(sync_files.items()):
        docs = [d if isinstance(d, tuple) else (d, "") for d in (docs if isinstance(docs, list) else [docs])]
        tree.add(path, yamlio.dump_all([d for d, _ in docs], [c for _, c in docs]))

    for files in _slot_order(pm.hook.rlgen_files(ctx=ctx)):
        for path, text in sorted((files or {}).items()):
            tree.add(path, text)

    tree.add("images/data/Dockerfile", data_dockerfile(spec))
    for path, content in crd_schemas.bundled_schemas().items():
        tree.add(f"schemas/{path}", content)

    run_doc = trainer_config.run_config(spec, run)
    tree.add(f"runs/{run}/{spec.run_config_key}", yamlio.dump(run_doc))
    tree.add(f"runs/{run}/kustomization.yaml", runs.run_kustomization(spec, run, None))
    tree.add("runs/kustomization.yaml", runs.runs_index([run]))

    secrets = _gather(pm, "rlgen_secrets", ctx) + [hf_token(spec)]
    tree.add(answers.FILENAME, answers.render(selection, [s.name for s in secrets]))
    sections = _gather(pm, "rlgen_readme", ctx)
    skeleton.render(tree, {
        "rlgen_version": __version__,
        "namespace": spec.namespace,
        "cluster": spec.cluster,
        "environment": spec.environment,
        "run": run,
        "plugins": dict(selection.plugins),
        "secrets": [{"name": s.name, "namespace": s.namespace, "secret_keys": list(s.keys), "purpose": s.purpose,
                     "used_by": s.used_by, "env": [skeleton.secret_env(s.name, k, len(s.keys) == 1) for k in s.keys]}
                    for s in secrets],
        "sections": sections,
        "dataset_dir": spec.dataset_dir(),
        "bucket_note": f"Upload the model `{spec.model}` to `{spec.model_bucket_path}/` in the bucket; "
                       f"the dataset Job uploads `{spec.dataset_bucket_prefix()}`; checkpoints go to "
                       f"`{spec.volumes['checkpoints'].bucket_prefix}/<run>/`.",
    })
    return tree, spec, run
