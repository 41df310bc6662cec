"""Schema findings of ``rlgen validate``: by the kubeconform binary when it is on PATH, else
by rlgen's own validator; and, per kind, where its schema came from."""
from __future__ import annotations

import json
import os
from pathlib import Path

from rlgen.schemas.shipped import CATALOG
from rlgen.validate.kubeconform import Stream, kubeconform_binary
from rlgen.validate.locations import render
from rlgen.rules import Finding, Rendered
from rlgen.validate.schema import SchemaValidator


def schema_findings(objects: list[Rendered], validator: SchemaValidator, located: list[tuple[str, str]],
                    cache: Path, offline: bool) -> tuple[str, list[Finding]]:
    """("kubeconform" or "jsonschema", the problems found)."""
    check = SchemaCheck(validator, located, cache, offline)
    check.add(objects)
    return check.engine, check.findings()


class SchemaCheck:
    """Schema findings of objects handed over a batch at a time (each root's objects as soon as
    it is rendered). With kubeconform on PATH, one kubeconform process, started at once, checks
    each batch while the caller renders and checks the rest; rlgen's own validator checks
    every batch when the findings are asked for."""

    def __init__(self, validator: SchemaValidator, located: list[tuple[str, str]], cache: Path, offline: bool) -> None:
        self.validator = validator
        #: What was sent, in order: an object, or None for a probe whose result is not wanted.
        self._objects: list[Rendered | None] = []
        self._stream: Stream | None = None
        # kubeconform has no cache-only mode: offline, it gets the local locations only.
        self._templates = [t for _, t in located if not (offline and t.startswith("http"))]
        if kubeconform_binary() is not None:
            self._stream = Stream(self._templates, cache_dir=cache)

    def warm(self, types: set[tuple[str, str]]) -> None:
        """Have kubeconform compile the schemas of ``types`` (apiVersion, kind) now, while the
        objects are still being rendered: compiling RayJob's large schema takes about as long
        as checking fifty RayJobs. Each gets a probe object whose result is dropped; only
        types with a schema in a local folder (nothing is downloaded for a probe)."""
        if self._stream is None:
            return
        local = [t for t in self._templates if not t.startswith("http")]
        probes = [{"apiVersion": api_version, "kind": kind, "metadata": {"name": "rlgen-schema-probe"}}
                  for api_version, kind in sorted(types)
                  if any(os.path.isfile(render(t, kind, api_version)) for t in local)]
        self._stream.send([json.dumps(probe) for probe in probes])
        self._objects += [None] * len(probes)
        self._locate(types)

    def __enter__(self) -> SchemaCheck:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """Leaving early (an exception) ends kubeconform: its results are not wanted."""
        if exc_type is not None and self._stream is not None:
            self._stream.stop()

    @property
    def engine(self) -> str:
        return "jsonschema" if self._stream is None else "kubeconform"

    def send(self, documents: list[str]) -> None:
        """Start checking objects from their documents as kustomize wrote them, which kubeconform
        reads as it would the objects; :meth:`add` them next, one object a document."""
        if self._stream is not None:
            self._stream.send(documents)

    def add(self, objects: list[Rendered], sent: bool = False) -> None:
        """Check ``objects`` (``sent``: their documents were sent). Any other object is sent as
        JSON: kubeconform reads YAML 1.1, where an unquoted y or on is a boolean, and rlgen
        writes YAML 1.2, so a file rlgen or a user wrote is checked as rlgen read it."""
        self._objects += objects
        if self._stream is not None and not sent:
            self._stream.send([json.dumps(o.obj) for o in objects])
        self._locate(_types(objects))

    def _locate(self, types: set[tuple[str, str]]) -> None:
        # Where each type's schema is (what the report lists), looked up while the longest
        # root still builds rather than after it.
        for api_version, kind in types:
            self.validator.locate(api_version, kind)

    def findings(self, order: list[Rendered] | None = None) -> list[Finding]:
        """The problems of every object, in the order of ``order`` (the same objects), else in
        the order they were added: that of the builds, which finish in any order. Call it once,
        however the caller's own work ended: it ends the kubeconform process."""
        added = [o for o in self._objects if o is not None]
        if self._stream is None:
            found = {id(o): [Finding(o.source, o.label, message) for message in self.validator.validate(o.obj)]
                     for o in added}
        else:
            found = self._kubeconform_findings()
        return [f for o in (added if order is None else order) for f in found.get(id(o), ())]

    def _kubeconform_findings(self) -> dict[int, list[Finding]]:
        results = iter(self._stream.results())
        found: dict[int, list[Finding]] = {}
        for o in self._objects:
            if o is None:
                next(results, None)
                continue
            for (kind, at), resource in zip(_resources(o.obj), results):
                if kind and resource.kind and kind != resource.kind:
                    raise RuntimeError(f"kubeconform's results are not in the order of the objects: "
                                       f"{resource.kind}/{resource.name} for {o.label}")
                found.setdefault(id(o), []).extend(
                    Finding(o.source, o.label, problem.at(at).text(o.obj)) for problem in resource.problems)
        return found


def _resources(obj: dict) -> list[tuple[str, tuple[str, ...]]]:
    """What kubeconform makes of ``obj``: each resource's kind ("" where it is not a string)
    and where it sits in ``obj``. A List is one resource per item (pkg/resource/resource.go
    Resources)."""
    def kind(o: object) -> str:
        found = o.get("kind") if isinstance(o, dict) else None
        return found if isinstance(found, str) else ""

    if kind(obj).lower() == "list":
        items = obj.get("items")
        return [(kind(item), ("items", str(i))) for i, item in enumerate(items)] if isinstance(items, list) else []
    return [(kind(obj), ())]


def schema_sources(objects: list[Rendered], validator: SchemaValidator,
                   located: list[tuple[str, str]], repo: Path) -> list[dict]:
    """One entry per (apiVersion, kind): where its schema was found ("none" when nowhere),
    the file relative to rlgen's catalog or to the repository."""
    sources = []
    for api_version, kind in sorted(_types(objects), key=lambda t: (t[1], t[0])):
        validator.locate(api_version, kind)
        index, where = validator.found.get((api_version, kind), (None, ""))
        sources.append({"apiVersion": api_version, "kind": kind,
                        "source": located[index][0] if index is not None else "none",
                        "location": _short(where, repo)})
    return sources


def _types(objects: list[Rendered]) -> set[tuple[str, str]]:
    return {(o.obj.get("apiVersion"), o.obj.get("kind")) for o in objects
            if isinstance(o.obj.get("apiVersion"), str) and isinstance(o.obj.get("kind"), str)}


def _short(where: str, repo: Path) -> str:
    for root in (CATALOG, repo):
        if where.startswith(f"{root}/"):
            return where[len(str(root)) + 1:]
    return where
