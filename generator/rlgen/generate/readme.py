"""What the README and workflow templates are told: the selection, the first run, the secrets
plugin's section and each plugin's own sections."""
from __future__ import annotations

from collections.abc import Iterable

from rlgen import __version__
from rlgen.contributions import Stage
from rlgen.generate import first_sync, skeleton
from rlgen.generate.filetree import FileTree
from rlgen.generate.image_builds import ImageBuild
from rlgen.plugin_host.install import (effective, index_options, needs_git, pip_arguments, plugin_requirements,
                                       upgrade_arguments)
from rlgen.plugin_host.selection import Selection
from rlgen.repo.layout import TRAINING_BASE, runs_root
from rlgen.repo.sync_engines import engine_of_plugin
from rlgen.run import checkpoints
from rlgen.spec import Spec, in_mainland_china
from rlgen.tools import yamlio
from rlgen.tools.toolchain_pins import newer_go
from rlgen.verl import trainer_config

#: What a top-level folder holds, said beside it in the README's tree, and whether the sync engine
#: reads it (the others are for people and CI: the cluster never sees them).
FOLDERS = {
    ".github": (False, "CI on pull requests: validate, diff and rlgen update, and e2e on a throwaway control plane where rlgen e2e supports the sync engine"),
    "base": (True, "what every environment shares: the platform and the run template"),
    "clusters": (True, "the sync engine's entry points, one folder per cluster"),
    "components": (True, "what each plugin adds, one kustomize Component per plugin and layer"),
    "images": (False, "the build contexts of the images the repository builds (training, data, a plugin's), and build.sh, which builds and pushes them"),
    "infrastructure": (True, "what every cluster syncs first: the upstream roots (upstream/, which each cluster folder includes) and add-on settings"),
    "overlays": (True, "each environment a cluster syncs: its platform, and which runs it gets (runs/)"),
    "rbac": (False, "the read-only role of rlgen doctor and rlgen status, applied by hand"),
    "runs": (True, "one folder per training run (overlays/<env>/runs/ says which ones an environment runs)"),
    "schemas": (False, "JSON schemas of the custom kinds, for validation without network"),
    "secrets": (True, "the Secrets the other stages read, synced before them"),
    "optional-secrets": (True, "the Secrets whose readers start without them, synced after secrets/ and "
                               "waited for by nothing"),
}


def stage_rows(stages: list[Stage], components: dict[str, list[str]], spec: Spec) -> list[dict]:
    """The README's *What syncs where*: what each stage of this selection really holds."""
    fixed = {"secrets": ["the Secrets the later stages read, and their namespaces"],
             "optional-secrets": ["the optional Secrets; no stage waits for them"],
             "platform": [f"namespace `{spec.namespace}`", "dataset Job"], "runs": ["one RayJob per training run"]}
    rows = []
    for stage in stages:
        where = [f"`{stage.path.removeprefix('./')}/`"] if stage.path else []
        where += [f"upstream `{up.name}` ({up.path}@{up.tag})" for up in stage.upstream]
        what = fixed.get(stage.name, []) + [f"`{p}`" for p in components.get(stage.name, [])]
        if where:
            rows.append({"where": ", ".join(where), "what": ", ".join(what) or "upstream roots, pinned to their tag"})
    return rows


def folder_tree(paths: Iterable[str]) -> str:
    """The repository's folders two levels deep and its top-level files, drawn as ``tree`` draws
    them, each top-level folder with what it holds and whether the sync engine reads it."""
    children: dict[str, set[str]] = {}
    top_files = set()
    for path in paths:
        parts = path.split("/")
        if len(parts) == 1:
            top_files.add(path)
        else:
            children.setdefault(parts[0], set()).update([parts[1] + "/"] if len(parts) > 2 else [])
    entries = [(f"{name}/", sorted(children[name])) for name in sorted(children)] + [(f, []) for f in sorted(top_files)]
    width = max(len(name) for name, _ in entries) + 6
    lines = []
    for i, (name, below) in enumerate(entries):
        last = i == len(entries) - 1
        line = f"{'└── ' if last else '├── '}{name}"
        synced, note = FOLDERS.get(name.rstrip("/"), (None, ""))
        mark = {True: "[synced] ", False: "[never synced] ", None: ""}[synced]
        lines.append(f"{line.ljust(width)}{mark}{note}" if mark or note else line)
        for j, child in enumerate(below):
            lines.append(f"{'    ' if last else '│   '}{'└── ' if j == len(below) - 1 else '├── '}{child}")
    return "\n".join(lines)


#: What ``rlgen new`` says of a repository on GitLab; its README's Checks section says the same.
GITLAB_NOTE = ("rlgen.git_url is on GitLab, which does not run the GitHub Actions workflows rlgen writes "
               "(.github/workflows/: checks, image builds, updates): run their commands from a .gitlab-ci.yml "
               "of your own (the README's Checks section)")


def write(tree: FileTree, spec: Spec, selection: Selection, run: str, secrets_section: str,
          sections: list[str], run_naming: int, rows: list[dict] = (),
          images: tuple[ImageBuild, ...] = (), stages: list[Stage] = (),
          own_sections: dict[str, list[str]] | None = None) -> None:
    skeleton.write(tree, {
        "tree": folder_tree([*tree.files, *skeleton.paths()]),
        "run_naming": run_naming,
        "registry": spec.registry,
        # The images the repository builds (images/build.sh), each with its context and reference.
        "images": [{"context": i.context, "ref": i.ref, "repository": i.repository, "tag": i.tag} for i in images],
        "stages": list(rows),
        "rlgen_version": __version__,
        "git_host": spec.git_host,
        # How to stop this engine before a merge that syncs with another (rlgen update --plugin).
        "engine": engine_of_plugin(selection.plugins["sync"]),
        # The e2e workflow builds Argo CD with the newer Go its go.mod needs.
        "e2e_gotoolchain": newer_go(),
        **_install(spec),
        "namespace": spec.namespace,
        "cluster": spec.cluster,
        "git_branch": spec.git_branch,
        "environment": spec.environment,
        "run": run,
        "nnodes": spec.nnodes,
        **_e2e_pool(spec, selection),
        "gpus_per_node": spec.gpus_per_node,
        "network": spec.network,
        "gang": spec.gang_scheduling,
        "plugins": dict(selection.plugins),
        "secrets_section": secrets_section,
        "sections": sections,
        "first_sync": first_sync.steps(spec, tree.files, secrets_section, sections, _kuberay_namespace(selection)),
        "clusters": _cluster_rows(selection),
        "bootstraps": first_sync.cluster_bootstraps([secrets_section, *sections], spec.cluster,
                                                    [c for c, _ in selection.all_clusters()], own_sections or {}),
        "dataset_dir": spec.dataset_dir(),
        "bucket_note": _bucket_note(spec), "checkpoint_save": _checkpoint_save(tree, spec),
        "region_note": region_note(spec, stages),
    })


def _e2e_pool(spec: Spec, selection: Selection) -> dict:
    """The GPU nodes of the e2e workflow's throwaway pool, with the answers that size it: the
    node pool's own (rlgen.pool_nodes) when said, else a queue's GPU quota (the most GPUs the
    team's runs hold at once) in nodes of rlgen.gpus_per_node, else the nodes of a run
    (rlgen.nnodes); never fewer than a run needs."""
    if spec.pool_nodes:
        return {"gpu_nodes": max(spec.nnodes, spec.pool_nodes), "gpu_nodes_why": "rlgen.pool_nodes, the node pool's"}
    queue = selection.plugins.get("queue", "")
    quota = selection.values.get(queue, {}).get("gpu_quota")
    if not quota:
        return {"gpu_nodes": spec.nnodes, "gpu_nodes_why": "rlgen.nnodes, the nodes of one run"}
    return {"gpu_nodes": max(spec.nnodes, -(-quota // spec.gpus_per_node)),
            "gpu_nodes_why": f"{queue}.gpu_quota ({quota} GPUs) in nodes of rlgen.gpus_per_node ({spec.gpus_per_node})"}


def _install(spec: Spec) -> dict[str, object]:
    """How the workflows, the data image and the README's reader install the rlgen rlgen.install pins."""
    plugins = plugin_requirements(spec.plugin_packages, spec.plugin_distributions)
    install = effective(spec.rlgen_install)
    # The pull-request checks need rlgen alone; rlgen status reads the cluster (rlgen[cluster]);
    # rlgen update re-renders a team's template when rlgen.yaml records one (rlgen[template]).
    return {
        "rlgen_install": pip_arguments(install, plugins=plugins),
        "rlgen_install_cluster": pip_arguments(install, extra="cluster", plugins=plugins),
        "rlgen_install_update": pip_arguments(install, extra="template", plugins=plugins),
        "rlgen_install_git": needs_git(install),
        "rlgen_upgrade": upgrade_arguments(install, plugins, extra="template"),
        "rlgen_index_options": index_options(install),
    }


def _kuberay_namespace(selection: Selection) -> str:
    """Where KubeRay is installed: the namespace the sandbox plugin's dashboard NetworkPolicy
    admits (``kuberay_namespace``), else the one KubeRay's own manifests use."""
    return next((v["kuberay_namespace"] for v in selection.values.values() if v.get("kuberay_namespace")),
                "kuberay-system")


def _cluster_rows(selection: Selection) -> list[dict]:
    """Each cluster's row of *Clusters and environments*, its own answers included."""
    return [{"name": c, "environment": e, "runs": f"{runs_root(e)}/",
             "own": ", ".join(f"`{p}.{k}={v}`" for p, values in selection.cluster_answers.get(c, {}).items()
                              for k, v in values.items()) or "none: the shared ones"}
            for c, e in selection.all_clusters()]


def _checkpoint_save(tree: FileTree, spec: Spec) -> str:
    """What one save of a run of the training base writes (``rlgen run list`` shows each run's)."""
    text = tree.files.get(f"{TRAINING_BASE}/{spec.trainer_config_key}", b"").decode()
    config = trainer_config.deep_merge(dict(yamlio.read_plain(text) or {}),
                                       {"actor_rollout_ref": {"model": {"path": spec.model_path}}})
    return checkpoints.show_size(checkpoints.save_bytes(config), config)


def _bucket_note(spec: Spec) -> str:
    revision = f" --revision {spec.model_revision}" if spec.model_revision else ""
    return (
        f"The model Job downloads `{spec.model}` from {spec.model_source} and uploads it to "
        f"`{spec.model_bucket_path}/` in the bucket, where the trainer loads it as `{spec.model_path}`; "
        f"the dataset Job loads `{spec.dataset_source}` and uploads `{spec.dataset_bucket_prefix()}`; checkpoints go to "
        f"`{spec.volumes['checkpoints'].bucket_prefix}/<run>/`, one folder per RayJob (see *A lost node*). Both Jobs run code you can run yourself "
        f"(`rlgen data model --source {spec.model_source} --model {spec.model}{revision} --out model/` then "
        f"`rlgen data upload model/ oss://<bucket>/{spec.model_bucket_path}/`; "
        f"`rlgen data prepare --dataset {spec.dataset} --source {spec.dataset_source} --out prepared/`); "
        "a second run fetches and uploads only what is missing."
    )


def region_note(spec: Spec, stages: list[Stage]) -> str:
    """Where the cluster fetches what lies outside the repository: the hubs and the upstream
    repositories, and in mainland China the mirror each upstream repository must be pushed to."""
    upstream = sorted({(up.url, up.tag) for stage in stages for up in stage.upstream})
    if not in_mainland_china(spec.region):
        return ("A cluster in mainland China reaches neither the Hugging Face Hub nor github.com: "
                "`rlgen update --set rlgen.region=<region> --set rlgen.upstream_mirror=<url>` (a `cn-*` "
                "region) has the model and the dataset downloaded from ModelScope and the upstream "
                "repositories fetched from the team's Git mirror, which keeps their owner/name paths; it asks "
                "what else the region needs of the selected plugins (`rlgen plugins`: those required in mainland China).")
    lines = [f"This cluster is in `{spec.region}`, in mainland China, which reaches neither the Hugging Face Hub "
             "nor github.com (`rlgen.region`): the model and the dataset come from ModelScope "
             f"(`{spec.model}`, `{spec.dataset_source}`), and the upstream repositories from the team's mirror "
             f"`{spec.upstream_mirror}` (`rlgen.upstream_mirror`), which must hold each of them at the same "
             "owner/name path and tag before the first sync (a scheduled `git clone --mirror` and `git push "
             "--mirror` from a machine that reaches both keeps it current):", ""]
    lines += [f"- `{url}` at tag `{tag}`" for url, tag in upstream] or ["- none: this selection has no upstream root"]
    return "\n".join(lines)
