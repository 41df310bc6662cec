"""Schema findings of ``rlgen validate``: by the kubeconform binary when it is on PATH, else
by rlgen's own validator; and, per kind, where its schema came from."""
from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from rlgen.schemas.shipped import CATALOG
from rlgen.validate.kubeconform import kubeconform_binary, start_kubeconform
from rlgen.rules import Finding, Rendered
from rlgen.validate.schema import SchemaValidator


def schema_findings(objects: list[Rendered], validator: SchemaValidator, located: list[tuple[str, str]],
                    cache: Path, offline: bool) -> tuple[str, list[Finding]]:
    """("kubeconform" or "jsonschema", the problems found)."""
    return start_schema_findings(objects, validator, located, cache, offline)()


def start_schema_findings(objects: list[Rendered], validator: SchemaValidator, located: list[tuple[str, str]],
                          cache: Path, offline: bool) -> Callable[[], tuple[str, list[Finding]]]:
    """:func:`schema_findings`, with kubeconform checking in the background while the caller
    does its own work (the rules); call the result for the findings. rlgen's own validator
    checks when it is called."""
    if kubeconform_binary() is None:
        return lambda: ("jsonschema", [Finding(o.source, o.label, message) for o in objects
                                       for message in validator.validate(o.obj)])
    # kubeconform has no cache-only mode: offline, it gets the local locations only.
    templates = [t for _, t in located if not (offline and t.startswith("http"))]
    scratch = tempfile.TemporaryDirectory(prefix="rlgen-validate-")
    try:
        numbers = {}
        # One file per object, so a problem names its object even where two share a kind and
        # name; JSON, because kubeconform reads YAML 1.1, where an unquoted key such as y or on
        # is a boolean, and rlgen writes YAML 1.2.
        for number, o in enumerate(objects):
            path = Path(scratch.name) / f"{number:05d}.json"
            path.write_text(json.dumps(o.obj), encoding="utf-8")
            numbers[str(path)] = number
        pending = start_kubeconform([Path(scratch.name)], templates, cache_dir=cache)
    except BaseException:
        scratch.cleanup()
        raise

    def finish() -> tuple[str, list[Finding]]:
        try:
            return "kubeconform", _findings(objects, numbers, pending())
        finally:
            scratch.cleanup()

    return finish


def _findings(objects: list[Rendered], numbers: dict[str, int], problems) -> list[Finding]:
    found = []
    for problem in problems:
        number = numbers.get(problem.filename, len(objects))
        if number < len(objects):
            o = objects[number]
            found.append((number, Finding(o.source, o.label, problem.text(o.obj))))
        else:
            found.append((number, Finding(problem.filename, f"{problem.kind}/{problem.name}", problem.text())))
    # kubeconform checks files concurrently: report in the order of the objects, as without it.
    return [finding for _, finding in sorted(found, key=lambda pair: pair[0])]


def schema_sources(objects: list[Rendered], validator: SchemaValidator,
                   located: list[tuple[str, str]], repo: Path) -> list[dict]:
    """One entry per (apiVersion, kind): where its schema was found ("none" when nowhere),
    the file relative to rlgen's catalog or to the repository."""
    types = sorted({(o.obj.get("apiVersion"), o.obj.get("kind")) for o in objects
                    if isinstance(o.obj.get("apiVersion"), str) and isinstance(o.obj.get("kind"), str)},
                   key=lambda t: (t[1], t[0]))
    sources = []
    for api_version, kind in types:
        validator.locate(api_version, kind)
        index, where = validator.found.get((api_version, kind), (None, ""))
        sources.append({"apiVersion": api_version, "kind": kind,
                        "source": located[index][0] if index is not None else "none",
                        "location": _short(where, repo)})
    return sources


def _short(where: str, repo: Path) -> str:
    for root in (CATALOG, repo):
        if where.startswith(f"{root}/"):
            return where[len(str(root)) + 1:]
    return where
