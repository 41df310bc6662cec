"""What the README and workflow templates are told: the selection, the first run, the secrets
plugin's section and each plugin's own sections."""
from __future__ import annotations

from collections.abc import Iterable

from rlgen import __version__
from rlgen.contributions import Stage
from rlgen.generate import skeleton
from rlgen.generate.filetree import FileTree
from rlgen.generate.image_builds import ImageBuild
from rlgen.plugin_host.install import effective, index_options, pip_arguments, plugin_requirements, upgrade_arguments
from rlgen.plugin_host.selection import Selection
from rlgen.repo.layout import runs_root
from rlgen.spec import Spec
from rlgen.tools.toolchain_pins import newer_go

#: What a top-level folder holds, said beside it in the README's tree, and whether the sync engine
#: reads it (the others are for people and CI: the cluster never sees them).
FOLDERS = {
    ".github": (False, "CI on pull requests: validate, diff and rlgen update, and e2e on a throwaway control plane where rlgen e2e supports the sync engine"),
    "base": (True, "what every environment shares: the platform and the run template"),
    "clusters": (True, "the sync engine's entry points, one folder per cluster"),
    "components": (True, "what each plugin adds, one kustomize Component per plugin and layer"),
    "images": (False, "the build contexts of the images the repository builds (training, data, a plugin's), and build.sh, which builds and pushes them"),
    "infrastructure": (True, "what every cluster syncs first: the upstream roots (upstream/, which each cluster folder includes) and add-on settings"),
    "overlays": (True, "each environment a cluster syncs: its platform, and the index of its runs"),
    "rbac": (False, "the read-only role of rlgen doctor and rlgen status, applied by hand"),
    "runs": (True, "one folder per training run (an environment's index lists the ones it runs)"),
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


def write(tree: FileTree, spec: Spec, selection: Selection, run: str, secrets_section: str,
          sections: list[str], run_naming: int, rows: list[dict] = (),
          images: tuple[ImageBuild, ...] = ()) -> None:
    plugins = plugin_requirements(spec.plugin_packages, spec.plugin_distributions)
    skeleton.write(tree, {
        "tree": folder_tree([*tree.files, *skeleton.paths()]),
        "run_naming": run_naming,
        "registry": spec.registry,
        # The images the repository builds (images/build.sh), each with its context and reference.
        "images": [{"context": i.context, "ref": i.ref, "repository": i.repository, "tag": i.tag} for i in images],
        "stages": list(rows),
        "rlgen_version": __version__,
        # The e2e workflow builds Argo CD with the newer Go its go.mod needs.
        "e2e_gotoolchain": newer_go(),
        # The pull-request checks need rlgen alone; rlgen status reads the cluster (rlgen[cluster]);
        # rlgen update re-renders a team's template when rlgen.yaml records one (rlgen[template]).
        "rlgen_install": pip_arguments(effective(spec.rlgen_install), plugins=plugins),
        "rlgen_install_cluster": pip_arguments(effective(spec.rlgen_install), extra="cluster", plugins=plugins),
        "rlgen_install_update": pip_arguments(effective(spec.rlgen_install), extra="template", plugins=plugins),
        "rlgen_upgrade": upgrade_arguments(effective(spec.rlgen_install), plugins, extra="template"),
        "rlgen_index_options": index_options(effective(spec.rlgen_install)),
        "namespace": spec.namespace,
        "cluster": spec.cluster,
        "git_branch": spec.git_branch,
        "environment": spec.environment,
        "run": run,
        "nnodes": spec.nnodes,
        **_e2e_workflow(spec, selection),
        "gpus_per_node": spec.gpus_per_node,
        "network": spec.network,
        "gang": spec.gang_scheduling,
        "plugins": dict(selection.plugins),
        "secrets_section": secrets_section,
        "sections": sections,
        "first_sync": first_sync_steps(secrets_section, sections),
        "clusters": [{"name": c, "environment": e, "runs": f"{runs_root(e)}/"}
                     for c, e in selection.all_clusters()],
        "dataset_dir": spec.dataset_dir(),
        "bucket_note": _bucket_note(spec),
    })


#: The plugins whose kinds `rlgen e2e` does not sync yet (no controller of theirs on its control
#: plane): the e2e workflow of a repository with one says "not checked here" instead of failing.
E2E_UNSERVED = {"kueue": "Kueue's queues (ClusterQueue, LocalQueue)",
                "external-secrets": "External Secrets' SecretStore and ExternalSecrets"}


def _e2e_workflow(spec: Spec, selection: Selection) -> dict:
    """What the e2e workflow is told: the kinds rlgen e2e cannot sync of this selection, and the
    GPU nodes of its throwaway pool with the answers that size it: a queue's GPU quota (the most
    GPUs the team's runs hold at once) in nodes of rlgen.gpus_per_node, else the nodes of a run
    (rlgen.nnodes); never fewer than a run needs."""
    unserved = " or ".join(E2E_UNSERVED[p] for p in selection.plugins.values() if p in E2E_UNSERVED)
    queue = selection.plugins.get("queue", "")
    quota = selection.values.get(queue, {}).get("gpu_quota")
    if not quota:
        return {"e2e_unserved": unserved, "gpu_nodes": spec.nnodes, "gpu_nodes_why": "rlgen.nnodes, the nodes of one run"}
    return {"e2e_unserved": unserved, "gpu_nodes": max(spec.nnodes, -(-quota // spec.gpus_per_node)),
            "gpu_nodes_why": f"{queue}.gpu_quota ({quota} GPUs) in nodes of rlgen.gpus_per_node ({spec.gpus_per_node})"}


def _bucket_note(spec: Spec) -> str:
    revision = f" --revision {spec.model_revision}" if spec.model_revision else ""
    return (
        f"The model Job downloads `{spec.model}` from {spec.model_source} and uploads it to "
        f"`{spec.model_bucket_path}/` in the bucket, where the trainer loads it as `{spec.model_path}`; "
        f"the dataset Job uploads `{spec.dataset_bucket_prefix()}`; checkpoints go to "
        f"`{spec.volumes['checkpoints'].bucket_prefix}/<run>/`. Both Jobs run code you can run yourself "
        f"(`rlgen data model --source {spec.model_source} --model {spec.model}{revision} --out model/` then "
        f"`rlgen data upload model/ oss://<bucket>/{spec.model_bucket_path}/`); a second run fetches and "
        "uploads only what is missing. `--set rlgen.model_source=modelscope` downloads from ModelScope "
        "(nearer in mainland-China regions)."
    )


def first_sync_steps(secrets_section: str, sections: list[str]) -> list[str]:
    """The README's numbered *First sync*: each step links to the section that says how, the
    Secrets' and the sync engine's being the plugins' own."""
    def link(section: str, fallback: str) -> str:
        heading = section.lstrip().split("\n", 1)[0] if section.lstrip().startswith("## ") else ""
        return f"[{heading[3:]}](#{_anchor(heading[3:])})" if heading else fallback

    sync = next((s for s in sections if s.lstrip().startswith("## Sync")), "")
    return [
        "Check the cluster, read-only: `rlgen doctor` ([Before the first sync](#before-the-first-sync)).",
        "Build and push the images "
        "([Images to build and push before the first sync](#images-to-build-and-push-before-the-first-sync)).",
        f"Give the Secrets their values ({link(secrets_section, 'the secrets plugin section below')}).",
        f"Install the sync engine and point it at `clusters/<cluster>/` ({link(sync, 'the sync plugin section below')}).",
        "Watch it come up: `rlgen status --wait` ([Checks](#checks)).",
    ]


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower-case, punctuation dropped, spaces as hyphens."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.strip().replace(" ", "-")
