"""Options -> plugin contributions -> in-memory file tree: everything ``rlgen new`` writes.

:func:`generate` runs :data:`STAGES` in order. Each stage adds its own files to the tree and
never changes what an earlier stage added. Nothing touches the disk until the tree is written.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from rlgen import sources
from rlgen.contributions import OPTIONAL_SECRETS_FOLDER, SECRETS_FOLDER, Context, Layer, SecretDelivery, SecretRef
from rlgen.contributions import Stage, UpstreamSource
from rlgen.errors import PluginFailed, RlgenError
from rlgen.generate import codeowners, dataset_job, image_builds, model_job, readme, training_image, volume_names
from rlgen.generate.filetree import FileTree
from rlgen.generate.kustomizations import Components, write_infrastructure, write_platform, write_training
from rlgen.generate import rayjob as rayjob_source
from rlgen.generate import reader_role as rbac
from rlgen.generate.rayjob import rayjob
from rlgen.plugin_host import install
from rlgen.plugin_host.manager import Hooks
from rlgen.plugin_host.selection import Selection
from rlgen.repo import answers, image_tags
from rlgen.repo.layout import RUNS_README, TRAINING_BASE, run_link, runs_index as runs_index_path, runs_root
from rlgen.repo.sync_engines import builds_folders
from rlgen.run import checkpoints, naming
from rlgen.run.folder import index_text, link_text, run_kustomization, runs_readme
from rlgen.repo.secret_plan import declared_secrets
from rlgen.schemas.shipped import custom_schemas
from rlgen.spec import ENVIRONMENTS, Spec
from rlgen.tools import yamlio
from rlgen.verl import batch_rules, releases, trainer_config

if TYPE_CHECKING:  # a team template's module is imported only when there is one
    from rlgen.generate.template_source import Fetched


@dataclass
class Build:
    """What the stages share: the inputs, and the tree they add to."""

    selection: Selection
    hooks: Hooks
    spec: Spec
    ctx: Context
    run: str
    tree: FileTree = field(default_factory=FileTree)
    components: Components = field(default_factory=Components)
    stages: list[Stage] = field(default_factory=list)
    rayjob: str = ""
    delivery: SecretDelivery | None = None
    #: How ``rlgen run`` names RayJobs (:mod:`rlgen.run.naming`): a repository keeps its own.
    run_naming: int = naming.CURRENT
    #: The team's cookiecutter template (``--template``), and its files that rlgen's own won over.
    template: Fetched | None = None
    #: The images the repository builds (training, data), once ``images`` has hashed their contexts.
    images: tuple[image_builds.ImageBuild, ...] = ()
    clashes: list[str] = field(default_factory=list)

    def secrets(self) -> list[SecretRef]:
        return declared_secrets(self.hooks, self.ctx)


def check_selection(b: Build) -> None:
    # Before anything else: a source no image build can reach is refused with what to pass.
    install.effective(b.spec.rlgen_install)
    install.plugin_requirements(b.spec.plugin_packages, b.spec.plugin_distributions)
    if found := b.hooks.check(b.ctx):
        raise RlgenError("; ".join(f"{' + '.join(p.plugins)}: {p.message}" for p in found))


def images(b: Build) -> None:
    """``images/training`` and ``images/data``, and the tags hashed from them: the Spec the
    later stages read names each image with its tag, so every reference to it follows its files."""
    image = b.hooks.training_image(b.ctx)
    b.tree.add("images/training/Dockerfile",
               training_image.dockerfile(b.spec, image, b.hooks.training_packages(b.ctx)))
    for path, text in training_image.tool_files().items():
        b.tree.add(path, text)
    b.tree.add("images/data/Dockerfile", dataset_job.data_dockerfile(b.spec))
    data_repository, data_prefix = image_tags.split_reference(b.spec.data_image)
    b.images = (image_builds.build(b.tree.files, "images/training", b.spec.training_image, image.tag),
                image_builds.build(b.tree.files, "images/data", data_repository, data_prefix))
    b.spec = replace(b.spec, training_tag=b.images[0].tag, data_image=b.images[1].ref)
    b.ctx = b.selection.context(b.spec)


def plugin_components(b: Build) -> None:
    """One kustomize Component per plugin and layer, from its resources and patches."""
    resources, patches = dict(b.hooks.resources(b.ctx)), dict(b.hooks.patches(b.ctx))
    for plugin in b.selection.plugins.values():
        for item in resources.get(plugin, []):
            b.components.add_resource(plugin, item)
        for item in patches.get(plugin, []):
            b.components.add_patch(plugin, item)
    b.components.write(b.tree)


def training_base(b: Build) -> None:
    """``base/training``: the RayJob, the trainer config and the tool config every run shares."""
    tools = b.hooks.tools(b.ctx)
    config = trainer_config.base_trainer_config(b.spec, b.hooks.trainer_config(b.ctx), tools)
    if found := batch_rules.problems(config, releases.get(b.spec.verl_version)):
        # The same rules rlgen run and rlgen validate apply: no repository verl would refuse.
        raise RlgenError("the trainer config breaks a verl batch rule: " + "; ".join(found))
    files = {b.spec.trainer_config_key: yamlio.dump(config)}
    if tools:
        files[b.spec.tool_config_key] = trainer_config.tool_config(tools)
    for cfg in b.hooks.config_files(b.ctx):
        files[cfg.key] = cfg.content
    for script in (rayjob_source.WAIT_SCRIPT, checkpoints.SCRIPT):
        files[script] = sources.text(f"{TRAINING_BASE}/{script}")
    write_training(b.tree, b.spec, b.components, files, training_image.images_entry(b.spec))
    for key, text in files.items():
        b.tree.add(f"{TRAINING_BASE}/{key}", text)
    b.tree.add(f"{TRAINING_BASE}/rayjob.yaml", yamlio.dump(rayjob(b.spec)))


def platform_base(b: Build) -> None:
    """``base/platform`` and the overlays: the namespace, the dataset and model Jobs and their identity."""
    patches = dataset_job.job_patches(b.hooks.patches(b.ctx))
    job, comment = dataset_job.dataset_job(b.spec, patches)
    model, model_comment = model_job.model_job(b.spec, patches)
    write_platform(b.tree, b.spec, b.components, {
        "service-account.yaml": yamlio.dump(dataset_job.service_account(b.spec),
                                            "Identity of the dataset and model Jobs."),
        "dataset-job.yaml": yamlio.dump(job, comment),
        "model-job.yaml": yamlio.dump(model, model_comment),
    }, environments(b))


def environments(b: Build) -> list[str]:
    """The environments a cluster syncs, production and staging first: an overlay no cluster
    syncs would be reviewed and validated for nothing (``rlgen cluster add`` writes it)."""
    synced = {env for _, env in b.selection.all_clusters()}
    return [e for e in ENVIRONMENTS if e in synced] + sorted(synced - set(ENVIRONMENTS))


def secret_delivery(b: Build) -> None:
    """The secrets plugin's files; a kustomization among them makes the ``secrets`` stage."""
    b.delivery = b.hooks.secret_delivery(b.ctx, b.secrets())
    for path, content in sorted(b.delivery.files.items()):
        b.tree.add(path, content if isinstance(content, str) else
                   yamlio.dump_all([d.obj for d in content], [d.comment for d in content]))


def sync_entry_points(b: Build) -> None:
    """The stages in sync order, and the sync plugin's files that apply them, once per cluster
    (``rlgen.cluster`` and those of ``rlgen cluster add``), each with its environment's overlay.
    A file outside ``clusters/<cluster>/`` is shared by every cluster, written once (the
    upstream roots' objects in ``UPSTREAM_FOLDER``)."""
    has_infra = write_infrastructure(b.tree, b.components)
    upstream = tuple(replace(up, url=b.spec.mirrored(up.url)) for up in b.hooks.upstream_sources(b.ctx))
    # Before everything that reads a Secret: the sandbox's upstream root already does.
    first = [Stage(SECRETS_FOLDER, f"./{SECRETS_FOLDER}", decryption=b.delivery.decryption)] \
        if f"{SECRETS_FOLDER}/kustomization.yaml" in b.tree.files else []
    # After the secrets stage (its Namespaces and store), and nothing waits for it.
    optional = [Stage(OPTIONAL_SECRETS_FOLDER, f"./{OPTIONAL_SECRETS_FOLDER}",
                      depends_on=tuple(s.name for s in first), wait=False)] \
        if f"{OPTIONAL_SECRETS_FOLDER}/kustomization.yaml" in b.tree.files else []
    shared: dict[str, tuple[str, str]] = {}
    for cluster, env in b.selection.all_clusters():
        ctx = b.selection.context(replace(b.spec, cluster=cluster, environment=env))
        own = [replace(s, patches=_own_patches(b, ctx)) for s in first]
        stages = own + optional + [
            Stage("infrastructure", "./infrastructure" if has_infra else "", upstream=upstream,
                  depends_on=tuple(s.name for s in first)),
            Stage("platform", f"./overlays/{env}/platform", depends_on=("infrastructure",),
                  patches=_own_platform_patches(b, ctx)),
            Stage("runs", f"./{_runs_root(b, env)}", depends_on=("platform",), wait=False),
        ]
        folder = f"clusters/{cluster}/"
        for path, docs in sorted(b.hooks.sync_files(ctx, stages).items()):
            text = yamlio.dump_all([d.obj for d in docs], [d.comment for d in docs])
            if path.startswith(folder):
                b.tree.add(path, text)
            elif shared.setdefault(path, (cluster, text))[1] != text:
                raise PluginFailed(f"sync plugin '{b.selection.plugins['sync']}': {path} differs between "
                                   f"clusters {shared[path][0]} and {cluster}; a file outside clusters/<cluster>/ "
                                   "is shared by every cluster")
        b.stages = b.stages or stages
    for path, (_, text) in sorted(shared.items()):
        b.tree.add(path, text)


def _own_patches(b: Build, ctx) -> tuple[dict, ...]:
    """The objects of the shared secrets stage that a cluster's own answers change (its RRSA
    OIDC provider and role in the ClusterSecretStore), each as a patch of its spec that only
    that cluster's entry point applies."""
    if not b.selection.cluster_answers.get(ctx.spec.cluster):
        return ()
    shared, own = (_delivered(d.files) for d in (b.delivery, b.hooks.secret_delivery(ctx, b.secrets())))
    return _spec_patches(shared, own)


def _own_platform_patches(b: Build, ctx) -> tuple[dict, ...]:
    """The platform objects of the plugins that a cluster's own answers change (its Kueue GPU
    quota in the ClusterQueue), each as a patch of its spec that only that cluster's platform
    stage applies: the environment's overlay stays shared."""
    if not b.selection.cluster_answers.get(ctx.spec.cluster):
        return ()
    shared, own = (_platform_objects(b.hooks.resources(c)) for c in (b.ctx, ctx))
    return _spec_patches(shared, own)


def _platform_objects(resources) -> dict[tuple[str, str, str], dict]:
    return {(r.obj["kind"], r.obj["metadata"].get("namespace", ""), r.obj["metadata"]["name"]): r.obj
            for _, items in resources for r in items
            if r.layer == Layer.PLATFORM and isinstance(r.obj, dict) and "spec" in r.obj}


def _spec_patches(shared: dict, own: dict) -> tuple[dict, ...]:
    """A replace of the spec of each object of ``own`` that differs from ``shared``'s."""
    patches = []
    for key, obj in sorted(own.items()):
        if key in shared and shared[key] != obj:
            target = {"kind": obj["kind"], "name": obj["metadata"]["name"],
                      **({"namespace": obj["metadata"]["namespace"]} if obj["metadata"].get("namespace") else {})}
            patches.append({"target": target, "patch": [{"op": "replace", "path": "/spec", "value": obj["spec"]}]})
    return tuple(patches)


def _delivered(files) -> dict[tuple[str, str, str], dict]:
    """The secrets stage's objects of a secrets plugin's files, by kind, namespace and name."""
    return {(d.obj["kind"], d.obj["metadata"].get("namespace", ""), d.obj["metadata"]["name"]): d.obj
            for path, docs in files.items() if path.startswith(f"{SECRETS_FOLDER}/") and not isinstance(docs, str)
            for d in docs if isinstance(d.obj, dict) and "spec" in d.obj}

def _runs_root(b: Build, env: str) -> str:
    """``env``'s runs folder, written once: the main cluster's by :func:`first_run`, another
    environment's with no run (an index, or a folder of runs kept by its README)."""
    if env != b.spec.environment:
        if not builds_folders(b.selection.plugins["sync"]):
            if runs_index_path(env) not in b.tree.files:
                b.tree.add(runs_index_path(env), index_text([], env=env, main_env=b.spec.environment))
        elif f"{runs_root(env)}/{RUNS_README}" not in b.tree.files:
            b.tree.add(f"{runs_root(env)}/{RUNS_README}", runs_readme(env, b.spec.environment))
    return runs_root(env)



def plugin_files(b: Build) -> None:
    for files in b.hooks.files(b.ctx):
        for path, text in sorted(files.items()):
            b.tree.add(path, text)


def plugin_images(b: Build) -> None:
    """The plugins' images (``rlgen_images``) join training and data in ``images/build.sh``'s list
    and ``rlgen update``'s images to build, each checked against the folder the plugin wrote."""
    for plugin, images in b.hooks.images(b.ctx):
        for image in images:
            files = {p: c for p, c in b.tree.files.items() if p.startswith(image.context.rstrip("/") + "/")}
            digest = image_builds.context_hash(files, image.context)[:image_builds.HASH_LENGTH] if files else None
            if not digest or not image_tags.follows(image.tag, digest):
                # The plugin hashed other files than it wrote: build.sh would refuse the folder.
                raise PluginFailed(plugin, "rlgen_images", ValueError(
                    f"{image.ref} is not tagged with the hash of {image.context}'s files "
                    f"({digest or 'the plugin wrote none'})"))
            b.images += (image,)


def reader_role(b: Build) -> None:
    """The read-only role of rlgen doctor and rlgen status (applied by hand, never synced)."""
    sync_objects = [d for path, text in sorted(b.tree.files.items()) if path.startswith("clusters/")
                    for d in yamlio.read_plain_all(text.decode()) if isinstance(d, dict)]
    # doctor also reads the Secret with the SOPS key and the secret store the secrets stage uses.
    names = [s.name for s in b.secrets()] + ([b.delivery.decryption] if b.delivery.decryption else [])
    stores = any(b"kind: ClusterSecretStore" in content for path, content in b.tree.files.items()
                 if path.startswith(f"{SECRETS_FOLDER}/"))
    # status reads where Kueue has each run, doctor the queue objects.
    queue = any(b"apiVersion: kueue.x-k8s.io/" in content for content in b.tree.files.values())
    b.tree.add(rbac.PATH, rbac.reader_role(names, sync_objects, stores, queue))


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
    (naming scheme 2, see :mod:`rlgen.run.naming`), no render needed. ``rlgen update``
    keeps a repository's own runs instead, so a repository of scheme 1 never gets this one."""
    run_yaml = yamlio.dump(trainer_config.run_config(b.spec, b.run))
    folder = f"runs/{b.run}"
    b.rayjob = naming.inputs_hash(b.run, run_kustomization(b.spec, b.run, None, naming.CURRENT),
                                  b.spec.run_config_key, run_yaml.encode(), b.tree.files)
    b.tree.add(f"{folder}/{b.spec.run_config_key}", run_yaml)
    b.tree.add(f"{folder}/kustomization.yaml", run_kustomization(b.spec, b.run, b.rayjob, naming.CURRENT))
    env = b.spec.environment
    if builds_folders(b.selection.plugins["sync"]):
        b.tree.add(f"{runs_root(env)}/{RUNS_README}", runs_readme(env, env))
        b.tree.add(f"{run_link(env, b.run)}/kustomization.yaml", link_text(b.run))
    else:
        b.tree.add(runs_index_path(env), index_text([b.run]))


def answers_file(b: Build) -> None:
    b.tree.add(answers.FILENAME, answers.text(b.selection, [s.name for s in b.secrets()], b.run_naming,
                                              template=b.template.pin.record() if b.template else None))


def skeleton(b: Build) -> None:
    """README, workflows, .gitignore and, with the teams answered, CODEOWNERS."""
    if owners := codeowners.text(b.selection.values["rlgen"], environments(b)):
        b.tree.add(codeowners.PATH, owners)
    parts = {layer.value: [path.split("/")[1] for path in b.components.paths(layer)] for layer in Layer}
    readme.write(b.tree, b.spec, b.selection, b.run, b.delivery.readme, b.hooks.readme(b.ctx), b.run_naming,
                  readme.stage_rows(b.stages, {"infrastructure": parts["infrastructure"],
                                               "platform": parts["platform"]}, b.spec),
                  b.images, b.stages, _own_sections(b))


def _own_sections(b: Build) -> dict[str, list[str]]:
    """The README sections (secrets, then the plugins') as each other cluster with answers of its
    own reads them: its RAM roles trust its own OIDC provider."""
    own = {}
    for cluster, env in b.selection.all_clusters():
        if cluster != b.spec.cluster and b.selection.cluster_answers.get(cluster):
            ctx = b.selection.context(replace(b.spec, cluster=cluster, environment=env))
            own[cluster] = [b.hooks.secret_delivery(ctx, b.secrets()).readme, *b.hooks.readme(ctx)]
    return own


def team_template(b: Build) -> None:
    """The team's template last, so every file of rlgen's is there to win a clash."""
    if b.template:
        # Lazy: 16 ms (median of 5, -X importtime), for a team template only.
        from rlgen.generate import team_template as rendered

        b.clashes = rendered.add_to(b.tree, b.template, rendered.context(b.spec, b.selection.plugins))


#: The platform before the training base: its roots' builds (:data:`READY`) start the sooner.
STAGES = (check_selection, images, plugin_components, platform_base, training_base, secret_delivery, sync_entry_points,
          plugin_files, plugin_images,
          reader_role, schemas, first_run, answers_file, skeleton, team_template)

#: The kustomization roots whose files are all in the tree once a stage has run: each
#: environment's platform, then the runs. A later stage may still add a file beside one.
READY: dict[Callable[[Build], None], Callable[[Build], list[str]]] = {
    platform_base: lambda b: [f"overlays/{env}/platform" for env in environments(b)],
    # A runs folder without index is built as the engine builds it, not as a root of its own.
    first_run: lambda b: [] if builds_folders(b.selection.plugins["sync"]) else [runs_root(b.spec.environment)],
}


def generate(selection: Selection, run_naming: int = naming.CURRENT, template: Fetched | None = None,
             on_ready: Callable[[Build, list[str]], None] | None = None) -> Build:
    """The whole repository in memory; ``.tree`` holds it, ``.rayjob`` names the first run's RayJob.
    ``run_naming``: the scheme of the repository being updated (a new one gets the current);
    ``template``: the team's cookiecutter template, fetched, whose files join the tree;
    ``on_ready(build, roots)``: told of the roots of :data:`READY` as soon as their files are
    in the tree (``rlgen new`` builds them while the rest is generated)."""
    hooks = selection.hooks()
    spec = selection.spec(hooks)
    spec = volume_names.named(spec, hooks, selection.context(spec))
    build = Build(selection, hooks, spec, selection.context(spec), selection.values["rlgen"]["run"],
                  run_naming=run_naming, template=template)
    for stage in STAGES:
        stage(build)
        if on_ready is not None and stage in READY:
            on_ready(build, READY[stage](build))
    return build

