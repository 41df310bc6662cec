"""Everything a checkout of the repository gives the cluster, as YAML documents by source.

A source is a top kustomization root (one no other root lists as a resource: the overlays and
``runs/``, not ``runs/<run>`` or ``base/training``, whose objects those already contain) or a
plain manifest file outside every kustomization folder (the sync engine's entry points).

Renders are cached by the content of what a root reads (:mod:`rlgen.render.cache`), and
:class:`rlgen.render.changes.ChangesRendering` builds only the roots whose inputs differ between
two checkouts.
"""
from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.render import inputs, parts
from rlgen.render.cache import RenderCache
from rlgen.render.checkouts import Checkout, WorkingTree
from rlgen.tools import kustomize, repo_files, scratch, yamlio

_SEPARATOR = re.compile(r"^---[ \t]*\n?", re.M)
#: Folders of objects applied by hand, never by the sync engine (the reader role of rlgen doctor).
NOT_SYNCED = ("rbac",)
#: Above this many changed runs, one build of ``runs/`` is cheaper than one build per run.
SPLIT_LIMIT = 4


def kustomizations(co: Checkout) -> dict[str, dict]:
    """Folder -> parsed kustomization of every root of the checkout (Components excluded:
    they only build inside a kustomization that lists them). An ignored folder (rendered/,
    a cache) is not the repository."""
    files = {f: rel for f in sorted(co.folders) if (rel := inputs.kustomization_of(co, f))}
    co.prefetch(files.values())
    out = {}
    for folder, rel in files.items():
        try:
            doc = inputs.parse_kustomization(co.text(rel))
        except ValueError as exc:
            raise RlgenError(f"{rel}: not valid YAML ({exc})") from None
        if doc.get("kind") != "Component":
            out[folder] = doc
    for folder in sorted(co.folders - out.keys()):
        # An environment's runs folder without index, as its sync engine builds it.
        if found := inputs.generated(co, folder):
            out[folder] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                           "resources": [posixpath.relpath(f, folder) for f in found]}
    return dict(sorted(out.items()))


def _entry(root: str, entry: object) -> str:
    return posixpath.normpath(posixpath.join(root, str(entry)))


def _remote(entry: str) -> bool:
    return "://" in entry or entry.startswith(("github.com/", "git@")) or "?ref=" in entry


def _require_inside(roots: dict[str, dict]) -> None:
    """The cluster's checkout holds only this repository: an entry that climbs out of it reads
    a file of this machine that the cluster never sees."""
    for root, doc in roots.items():
        for key in ("resources", "components"):
            entries = doc.get(key) or []
            for entry in entries if isinstance(entries, list) else []:
                target = _entry(root, entry)
                if not _remote(str(entry)) and (target == ".." or target.startswith(("../", "/"))):
                    raise RlgenError(f"{posixpath.join(root, 'kustomization.yaml')}: {key}: {entry} is outside "
                                     "the repository (the cluster's checkout has only this repository)")


def top_roots(co: Checkout, roots: dict[str, dict] | None = None) -> list[str]:
    roots = kustomizations(co) if roots is None else roots
    _require_inside(roots)
    listed = {_entry(root, e) for root, doc in roots.items() for e in doc.get("resources") or []}
    return sorted(r for r in roots if r not in listed)


def children(root: str, roots: dict[str, dict]) -> list[str] | None:
    """The roots ``root`` only lists (as ``runs/`` lists the runs), or None when it does more:
    its render is then exactly theirs together, so each can be built on its own."""
    doc = roots.get(root) or {}
    if set(doc) - {"apiVersion", "kind", "resources"} or not doc.get("resources"):
        return None
    found = [_entry(root, e) for e in doc["resources"]]
    return found if all(f in roots for f in found) else None


def committable(tree: Path) -> set[Path]:
    """The files git would commit: tracked or untracked but not ignored, outside hidden folders
    (.github holds workflows, not cluster objects)."""
    return {tree / rel for rel in WorkingTree("", tree).files}


def plain_files(files: set[Path]) -> list[Path]:
    """YAML files that no kustomization folder holds and that contain Kubernetes objects."""
    folders = {p.parent for p in files if p.name in kustomize.KUSTOMIZATION_FILES}
    return [path for path in sorted(files) if _may_be_plain(path.parent.name, path.suffix,
                                                               any(p in folders for p in path.parents))
            and split(_checked(repo_files.shown(path), repo_files.read_text(path)))]


def entry_point(path: Path, repo: Path) -> list:
    """The objects of a sync entry point file, read as strictly as a render reads it."""
    rel = repo_files.shown(path, repo)
    return yamlio.read_plain_all(_checked(rel, repo_files.read_text(path, repo)))


def _checked(rel: str, text: str) -> str:
    """``text`` of the sync entry point ``rel``, once the strict reader took it: the sync engine
    applies it as it is, and a defect found later would have no file to name."""
    try:
        yamlio.read_manifests_all(text)
    except ValueError as exc:
        raise RlgenError(f"{rel}: {exc}") from None
    return text


def _may_be_plain(folder_name: str, suffix: str, in_kustomization_folder: bool) -> bool:
    return suffix in (".yaml", ".yml") and not in_kustomization_folder and folder_name not in NOT_SYNCED


def plain_documents(co: Checkout) -> dict[str, list[str]]:
    """Each plain manifest file of the checkout (a sync entry point): its documents."""
    folders = {rel.rpartition("/")[0] or "." for rel in co.files
               if rel.rpartition("/")[2] in kustomize.KUSTOMIZATION_FILES}

    def inside(rel: str) -> bool:
        parts = rel.split("/")[:-1]
        return "." in folders or any("/".join(parts[:i]) in folders for i in range(1, len(parts) + 1))

    candidates = sorted(rel for rel in co.files
                        if _may_be_plain(posixpath.basename(posixpath.dirname(rel)), posixpath.splitext(rel)[1],
                                         inside(rel)))
    co.prefetch(candidates)
    # Objects or not, a sync engine applying the folder reads every one of them.
    docs = {rel: split(_checked(rel, co.text(rel))) for rel in candidates}
    return {rel: found for rel, found in docs.items() if found}


def _is_object(text: str) -> bool:
    return bool(re.search(r"^apiVersion:", text, re.M) and re.search(r"^kind:", text, re.M))


def split(text: str) -> list[str]:
    """Documents of a YAML stream, as text: comparing text first spares parsing the many
    objects a change leaves alone."""
    return [doc for doc in _SEPARATOR.split(text) if doc.strip() and _is_object(doc)]


@dataclass(frozen=True)
class Unit:
    """One kustomize build: ``root`` (relative to the repository) of ``checkout``, whose
    objects belong to ``source``; ``reads`` finds the files it reads. ``children``: the roots
    ``root`` only lists (:func:`children`), which may be built in parts."""

    checkout: Checkout
    source: str
    root: str
    reads: inputs.Reads = field(compare=False, repr=False)
    children: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.checkout.label

    @cached_property
    def files(self) -> frozenset[str]:
        return self.reads(self.root)

    @cached_property
    def generated(self) -> bool:
        """The root has no kustomization file: the sync engine's own, listing its children, is
        built from a held folder (:func:`rlgen.render.inputs.generated`)."""
        return inputs.kustomization_of(self.checkout, self.root) is None

    @cached_property
    def parts(self) -> list[tuple[str, ...]]:
        return parts.partition(self.children) or ([self.children] if self.generated else [])

    @cached_property
    def key(self) -> str:
        # A render in parts lists the same objects in another order than one build.
        return inputs.key(self.checkout, self.root, self.files, len(self.parts))


def build(units: list[Unit], cache: RenderCache, builds: kustomize.Builds | None = None,
          on_text: Callable[[int, str], None] | None = None,
          on_part: Callable[[int, int, list[str]], None] | None = None) -> list[str]:
    """Each unit's render, from the cache or from kustomize (several builds at a time, a root
    of many children in parts: :mod:`rlgen.render.parts`). ``on_text(i, text)`` is called with
    each unit's render as soon as it is there, in the order they finish: a caller can check the
    short roots' objects while the long one builds. ``on_part(i, k, documents)``, before that,
    with each part ``k`` of a unit built in parts, in the order they finish: what it is given stays
    true, as the unit's render is either the parts together or a failure."""
    kustomize.command()
    builds = builds or kustomize.Builds()
    texts: list[str | None] = [None] * len(units) if cache.empty() else [cache.get(u.key) for u in units]
    missing = [i for i, t in enumerate(texts) if t is None]
    folders = {i: units[i].checkout.on_disk(units[i].files) for i in missing}
    if on_text:
        for i, text in enumerate(texts):
            if text is not None:
                on_text(i, text)
    if not missing:
        return texts  # type: ignore[return-value]

    def done(i: int, text: str) -> None:
        texts[i] = text
        cache.put(units[i].key, text)
        if on_text:
            on_text(i, text)

    in_parts = any(units[i].parts for i in missing)
    with scratch.held_folder(parts.PREFIX) if in_parts else nullcontext() as held:
        _Builds(units, folders, held, builds, done, on_part).run(missing)
    return texts  # type: ignore[return-value]


class _Builds:
    """The builds of :func:`build` still to run, several at a time. A unit built in parts is
    the parts together, unless two parts may share an object id or a part fails: the whole
    root is then built as well, and stands as kustomize's answer: its error, or else the parts
    (a part that failed alone gives its own error)."""

    def __init__(self, units: list[Unit], folders: dict[int, Path], held: Path | None,
                 builds: kustomize.Builds, done: Callable[[int, str], None], on_part) -> None:
        self.units, self.folders, self.held, self.builds = units, folders, held, builds
        self.done, self.on_part = done, on_part
        #: Each part's render and its documents (split once: the clash check reads them too).
        self.pieces: dict[int, dict[int, tuple[str, list[str]]]] = {}
        self.part_errors: dict[int, dict[int, RlgenError]] = {}
        self.failed: dict[tuple[int, int | None], BaseException] = {}

    def one(self, i: int, part: int | None) -> str:
        unit, folder = self.units[i], self.folders[i]
        if part is None:
            target = parts.write(self.held, f"{i}", folder, unit.children) if unit.generated else folder / unit.root
        else:
            target = parts.write(self.held, f"{i}-{part}", folder, unit.parts[part])
        try:
            return self.builds.build(target)
        except RlgenError as exc:
            shown = str(exc).replace(str(target), str(folder / unit.root)) if part is not None else str(exc)
            raise RlgenError(f"{unit.label}: {shown}".replace(str(folder), ".")) from None

    def run(self, missing: list[int]) -> None:
        units = self.units
        # Each build is a separate process: threads only wait on them. The builds that read the
        # most files start first (runs/ reads every run): started last, the longest build would
        # run alone on one core after the short ones. The short ones start at once too, not
        # after the long ones: their objects are then checked while the long ones build.
        by_size = sorted(missing, key=lambda i: -len(units[i].files))
        jobs = [(i, part) for i in by_size for part in (range(len(units[i].parts)) if units[i].parts else [None])]
        workers = max(2, min(len(jobs), 2 * (os.cpu_count() or 1)))
        self.builds.expect(min(workers, len(jobs)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            running = {pool.submit(self.one, *job): job for job in jobs}
            try:
                while running:
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        job = running.pop(future)
                        if (whole := self._finished(job, future)) is not None:
                            running[pool.submit(self.one, whole, None)] = (whole, None)
            except BaseException:
                # Interrupted (Ctrl-C, SIGTERM): leaving the pool waits for its threads, so end
                # the builds they wait on first, or the command outlives its interrupt by a build.
                self.builds.stop()
                raise
        # The first failure in the order the builds started: the same each time.
        for job in [*jobs, *((i, None) for i in by_size)]:
            if job in self.failed:
                raise self.failed[job]

    def _finished(self, job: tuple[int, int | None], future) -> int | None:
        """Takes one build's result; the unit whose whole root must now be built, if any."""
        i, part = job
        error = future.exception()
        if part is None:  # a unit of one build, or the whole root of one in parts
            if error is not None:
                self.failed[job] = error
            elif errors := self.part_errors.get(i):
                self.failed[job] = errors[min(errors)]
            else:
                self.done(i, "---\n".join(text for text, _ in self._ordered(i)) if self.units[i].parts
                      else future.result())
            return None
        # A root built in one part (the sync engine's own kustomization) has no other build to ask.
        if isinstance(error, RlgenError) and not self.builds.stopped and len(self.units[i].parts) > 1:
            first = not self.part_errors.get(i)
            self.part_errors.setdefault(i, {})[part] = error
            return i if first else None
        if error is not None:
            self.failed[job] = error
            return None
        text = future.result()
        docs = split(text)
        self.pieces.setdefault(i, {})[part] = (text, docs)
        if self.on_part:
            self.on_part(i, part, docs)
        if self._complete(i) and not self.part_errors.get(i):
            if parts.clash([docs for _, docs in self._ordered(i)]):
                return i
            self.done(i, "---\n".join(text for text, _ in self._ordered(i)))
        return None

    def _complete(self, i: int) -> bool:
        return len(self.pieces.get(i, ())) == len(self.units[i].parts)

    def _ordered(self, i: int) -> list[tuple[str, list[str]]]:
        return [self.pieces[i][k] for k in range(len(self.units[i].parts))]


def render(trees: dict[str, Path], cache: RenderCache | None = None, builds: kustomize.Builds | None = None,
           on_source: Callable[[str, str, list[str], bool], None] | None = None,
           on_part: Callable[[str, str, int, list[str]], None] | None = None) -> dict[str, dict[str, list[str]]]:
    """``{label: {source: [document]}}`` for each checkout: every top root and plain file.
    ``on_source(label, source, documents, built)`` is called for each as soon as it is there
    (``built``: kustomize wrote the documents). With ``on_part``, a root built in parts is
    handed over a part at a time instead, ``on_part(label, source, k, documents)``."""
    checkouts = [WorkingTree(label, tree) for label, tree in trees.items()]
    units = []
    for co in checkouts:
        reads = inputs.Reads(co)
        roots = kustomizations(co)
        units += [Unit(co, root, root, reads, tuple(children(root, roots) or ())) for root in top_roots(co, roots)]
    out: dict[str, dict[str, list[str]]] = {label: {} for label in trees}
    #: The documents of each part handed over, by unit: its render is theirs, in order.
    handed: dict[int, dict[int, list[str]]] = {}

    def rendered(i: int, text: str) -> None:
        if i in handed:
            out[units[i].label][units[i].source] = [d for k in sorted(handed[i]) for d in handed[i][k]]
            return
        out[units[i].label][units[i].source] = docs = split(text)
        if on_source:
            on_source(units[i].label, units[i].source, docs, True)

    def part(i: int, k: int, docs: list[str]) -> None:
        handed.setdefault(i, {})[k] = docs
        on_part(units[i].label, units[i].source, k, docs)

    build(units, cache or RenderCache(None), builds, rendered, part if on_part else None)
    for co in checkouts:
        for source, docs in plain_documents(co).items():
            out[co.label][source] = docs
            if on_source:
                on_source(co.label, source, docs, False)
    # The roots, then the plain files, each sorted: the same order whichever build finished first.
    roots = {u.source for u in units}
    return {label: dict(sorted(found.items(), key=lambda item: (item[0] not in roots, item[0])))
            for label, found in out.items()}
