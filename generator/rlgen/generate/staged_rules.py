"""The semantic checks of ``rlgen validate``, run on the staged repository before its first
commit: ``rlgen new`` never commits a repository that its own ``rlgen validate`` rejects.

Schemas are left to ``rlgen validate`` (they may need the network); the rules need nothing
but kustomize. The same render proves that every plugin patch reaches an object: kustomize
applies a patch whose target selects nothing to nothing, silently (docs/upstream.md), so each
plugin patch gets a twin with the same target that only adds a marker to the object's metadata,
removed again from the render before the rules read it and from the files before they are
committed. The twin is a JSON 6902 patch: kustomize applies it to the object's JSON, where a
strategic-merge twin would make it load the Kubernetes OpenAPI schema, several times the cost
of a build of the runs without it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from rlgen.errors import RlgenError

#: The metadata field a patch's twin adds, numbered per patch.
PROBE = "rlgen.io/patch-probe-"


def refuse_failing(tree: Path, external_secrets: list[str], plugins=None, patches=(),
                   meanwhile: Callable[[list[str]], None] | None = None) -> None:
    """Raise one line naming the first problem when the rules (and the plugins' rules of
    ``plugins``, a ``(Hooks, Context)`` pair) find any in ``tree``, or naming the plugin of the
    first of ``patches`` (``[(plugin, [Patch])]``) whose target matches no object.

    ``meanwhile`` runs while kustomize renders, given the files (relative to ``tree``) that
    hold a patch's twin until the render ends: work on the other files (git's) need not wait
    for the builds."""
    from concurrent.futures import ThreadPoolExecutor

    from rlgen.render import manifests
    from rlgen.tools.yamlio import read_plain_all

    originals, probes = _add_probes(tree, patches)
    parsed: dict[str, list] = {}

    def read(label: str, source: str, docs: list[str], built: bool) -> None:
        # Each source as soon as it is there, while the other builds go on.
        parsed[source] = read_plain_all("\n---\n".join(docs))

    try:
        # The builds are processes: this thread only waits for them, and the calling one goes on.
        with ThreadPoolExecutor(max_workers=1) as pool:
            rendering = pool.submit(manifests.render, {"repo": tree}, on_source=read)
            if meanwhile is not None:
                meanwhile(sorted(path.relative_to(tree).as_posix() for path in originals))
            # Imported while kustomize renders.
            from rlgen.repo.run_files import read_index
            from rlgen.rules import Rendered, check

            sources = rendering.result()["repo"]
    finally:
        for path, text in originals.items():
            path.write_bytes(text)
    objects = [Rendered(source, d) for source in sources for d in parsed[source]]
    matched = {key for o in objects for key in _strip_probes(o.obj)}
    for key, (plugin, name, layer, target) in probes.items():
        if key not in matched:
            raise RlgenError(f"plugin '{plugin}': patch '{name}' ({layer} layer) matches no object "
                             f"(target {target}): kustomize would apply it to nothing")
    findings = check(objects, external_secrets, plugins, read_index(tree))
    if findings:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        raise RlgenError(f"this selection gives a repository that rlgen validate rejects: "
                         f"{first.source}: {first.obj}: {first.message}{more}")


def _add_probes(tree: Path, patches) -> tuple[dict[Path, bytes], dict[str, tuple]]:
    from rlgen.tools import yamlio

    originals: dict[Path, bytes] = {}
    probes: dict[str, tuple] = {}
    for plugin, items in patches:
        for patch in items:
            layer = getattr(patch.layer, "value", patch.layer)
            path = tree / "components" / plugin / layer / "kustomization.yaml"
            originals.setdefault(path, path.read_bytes())
            key = f"{PROBE}{len(probes)}"
            doc = yamlio.read_plain(path.read_text())
            # A field of its own beside metadata.name, which every object has: the operation
            # cannot fail on an object without annotations ("/" is "~1" in a JSON pointer).
            twin = [{"op": "add", "path": "/metadata/" + key.replace("~", "~0").replace("/", "~1"),
                     "value": "matched"}]
            doc.setdefault("patches", []).append({"target": dict(patch.target), "patch": json.dumps(twin)})
            path.write_text(yamlio.dump(doc))
            probes[key] = (plugin, patch.name, layer, dict(patch.target))
    return originals, probes


def _strip_probes(obj: dict) -> list[str]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    found = [key for key in meta if str(key).startswith(PROBE)]
    for key in found:
        del meta[key]
    return found
