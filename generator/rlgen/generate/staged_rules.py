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
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Mapping

from rlgen.errors import RlgenError
from rlgen.render import inputs
from rlgen.render.cache import RenderCache
from rlgen.render.checkouts import Checkout, blob_id, visible
from rlgen.tools import kustomize, yamlio
from rlgen.tools.yamlio import read_plain_all

#: The metadata field a patch's twin adds, numbered per patch.
PROBE = "rlgen.io/patch-probe-"


def refuse_failing(tree: Path, external_secrets: list[str], plugins=None, patches=(),
                   meanwhile: Callable[[list[str]], None] | None = None, early: EarlyBuilds | None = None) -> None:
    """Raise one line naming the first problem when the rules (and the plugins' rules of
    ``plugins``, a ``(Hooks, Context)`` pair) find any in ``tree``, or naming the plugin of the
    first of ``patches`` (``[(plugin, [Patch])]``) whose target matches no object.

    ``meanwhile`` runs while kustomize renders, given the files (relative to ``tree``) that
    hold a patch's twin until the render ends: work on the other files (git's) need not wait
    for the builds. ``early``: the builds started while ``tree`` was written, which wrote the
    twins of its ``patches`` (then ``patches`` is not used)."""
    # Lazy: 45 ms in rlgen new (median of 9), imported once the early builds run.
    from rlgen.render import manifests

    originals, probes = (early.originals, early.probes) if early else _add_probes(tree, patches)
    parsed: dict[str, list] = {}

    def read(label: str, source: str, docs: list[str], built: bool) -> None:
        # Each source as soon as it is there, while the other builds go on.
        parsed[source] = read_plain_all("\n---\n".join(docs))

    try:
        # The builds are processes: this thread only waits for them, and the calling one goes on.
        with ThreadPoolExecutor(max_workers=1) as pool:
            rendering = pool.submit(manifests.render, {"repo": tree}, on_source=read,
                                    cache=early.cache() if early else None, builds=early.builds if early else None)
            if meanwhile is not None:
                meanwhile(sorted(path.relative_to(tree).as_posix() for path in originals))
            # Lazy: 149 ms in rlgen new (median of 9), imported while kustomize renders.
            from rlgen.run.files import read_index
            from rlgen.rules import Rendered, check

            sources = rendering.result()["repo"]
    finally:
        for path, text in originals.items():
            path.write_bytes(text)
    objects = [Rendered(source, d) for source in sources for d in parsed[source]]
    _refuse_unmatched(objects, probes)
    _refuse_findings(check(objects, external_secrets, plugins, read_index(tree)))


def _refuse_findings(findings: list) -> None:
    if findings:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        raise RlgenError(f"this selection gives a repository that rlgen validate rejects: "
                         f"{first.source}: {first.obj}: {first.message}{more}")


def _refuse_unmatched(objects, probes: dict[str, tuple]) -> None:
    """One line naming the plugin of the first patch whose twin marked no object."""
    matched = {key for o in objects for key in _strip_probes(o.obj)}
    for key, (plugin, name, layer, target) in probes.items():
        if key not in matched:
            raise RlgenError(f"plugin '{plugin}': patch '{name}' ({layer} layer) matches no object "
                             f"(target {target}): kustomize would apply it to nothing")


def _add_probes(tree: Path, patches) -> tuple[dict[Path, bytes], dict[str, tuple]]:
    originals = {rel: (tree / rel).read_bytes() for rel in _probed_paths(patches)}
    twins, probes = with_probes(originals, patches)
    for rel, text in twins.items():
        (tree / rel).write_bytes(text)
    return {tree / rel: text for rel, text in originals.items()}, probes


def _probed_paths(patches) -> list[str]:
    return [f"components/{plugin}/{getattr(patch.layer, 'value', patch.layer)}/kustomization.yaml"
            for plugin, items in patches for patch in items]


def with_probes(files: Mapping[str, bytes], patches) -> tuple[dict[str, bytes], dict[str, tuple]]:
    """The Component kustomizations of ``files`` (path -> content) that hold a plugin patch, each
    with a twin of every patch it holds; and each twin's key -> (plugin, patch, layer, target)."""
    twins: dict[str, bytes] = {}
    probes: dict[str, tuple] = {}
    for plugin, items in patches:
        for patch in items:
            layer = getattr(patch.layer, "value", patch.layer)
            rel = f"components/{plugin}/{layer}/kustomization.yaml"
            key = f"{PROBE}{len(probes)}"
            doc = yamlio.read_plain(twins.get(rel, files[rel]).decode())
            # A field of its own beside metadata.name, which every object has: the operation
            # cannot fail on an object without annotations ("/" is "~1" in a JSON pointer).
            twin = [{"op": "add", "path": "/metadata/" + key.replace("~", "~0").replace("/", "~1"),
                     "value": "matched"}]
            doc.setdefault("patches", []).append({"target": dict(patch.target), "patch": json.dumps(twin)})
            twins[rel] = yamlio.dump(doc).encode()
            probes[key] = (plugin, patch.name, layer, dict(patch.target))
    return twins, probes


def _strip_probes(obj: dict) -> list[str]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    found = [key for key in meta if str(key).startswith(PROBE)]
    for key in found:
        del meta[key]
    return found


class EarlyBuilds:
    """Builds of the check's roots started as soon as their files are written, while the rest
    of the repository is generated: on two cores the builds use the one Python leaves idle.

    The render of :func:`refuse_failing` takes a build only under the key of exactly the files
    it read (:mod:`rlgen.render.inputs`), so a file a later stage adds to what a root reads
    makes the render build that root again, never use a stale build. :meth:`close` ends the
    builds still running: a refused repository leaves no kustomize behind."""

    def __init__(self, folder: Path, patches) -> None:
        self.folder = folder
        self.patches = patches
        self.builds = kustomize.Builds()
        self.originals: dict[Path, bytes] = {}
        self.probes: dict[str, tuple] = {}
        self._twins: dict[str, bytes] | None = None
        self._written: set[str] = set()
        self._made: set[Path] = set()
        self._pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
        self._started: dict[str, Future] = {}

    def start(self, files: Mapping[str, bytes], roots: list[str]) -> None:
        """Write ``files`` (the repository so far: each patch's twin beside it) and build
        ``roots``, whose files are all among them."""
        if self._twins is None:
            self._twins, self.probes = with_probes(files, self.patches)
            self.originals = {self.folder / rel: files[rel] for rel in self._twins}
        self.write(files)
        snapshot = _Snapshot({**files, **self._twins})
        reads = inputs.Reads(snapshot)
        for root in roots:
            try:
                key = inputs.key(snapshot, root, reads(root))
            except RlgenError:  # the render says what is wrong with the root
                continue
            if key not in self._started:
                self._started[key] = self._pool.submit(self.builds.build, self.folder / root)

    def write(self, files: Mapping[str, bytes]) -> None:
        """Write the ``files`` not written yet (a patch's twin instead of its Component's own)."""
        for rel in sorted(files.keys() - self._written):
            dest = self.folder / rel
            if dest.parent not in self._made:
                dest.parent.mkdir(parents=True, exist_ok=True)
                self._made.add(dest.parent)
            dest.write_bytes(self._twins.get(rel, files[rel]) if self._twins else files[rel])
            self._written.add(rel)

    def cache(self):
        """The builds as a render cache of :func:`rlgen.render.manifests.render`: a failed one
        is built again there, which reports it its own way."""
        started = self._started

        class Started(RenderCache):
            def empty(self) -> bool:
                return not started

            def get(self, key: str) -> str | None:
                build = started.get(key)
                if build is None or build.exception() is not None:
                    return None
                return build.result()

        return Started(None)

    def close(self) -> None:
        self.builds.stop()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> EarlyBuilds:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Snapshot(Checkout):
    """Files in memory (path -> content) as the render's checkout of them reads them."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.label, self.repo = "", Path()
        self._data = {rel: content for rel, content in files.items() if visible(rel)}
        self.files = frozenset(self._data)

    def read(self, rel: str) -> bytes:
        return self._data[rel]

    def id(self, rel: str) -> str:
        return blob_id(self._data[rel])
