"""Schema findings of ``rlgen validate``: by the kubeconform binary when it is on PATH, else
by rlgen's own validator; and, per kind, where its schema came from."""
from __future__ import annotations

import tempfile
from pathlib import Path

from rlgen.schemas.shipped import CATALOG
from rlgen.tools import yamlio
from rlgen.validate.kubeconform import kubeconform_binary, validate_with_kubeconform
from rlgen.rules import Finding, Rendered
from rlgen.validate.schema import SchemaValidator


def schema_findings(objects: list[Rendered], validator: SchemaValidator, located: list[tuple[str, str]],
                    cache: Path, offline: bool) -> tuple[str, list[Finding]]:
    """("kubeconform" or "jsonschema", the problems found)."""
    if kubeconform_binary() is None:
        return "jsonschema", [Finding(o.source, o.label, message) for o in objects
                              for message in validator.validate(o.obj)]
    # kubeconform has no cache-only mode: offline, it gets the local locations only.
    templates = [t for _, t in located if not (offline and t.startswith("http"))]
    return "kubeconform", _kubeconform(objects, templates, cache)


def _kubeconform(objects: list[Rendered], templates: list[str], cache: Path) -> list[Finding]:
    by_source: dict[str, list[Rendered]] = {}
    for o in objects:
        by_source.setdefault(o.source, []).append(o)
    with tempfile.TemporaryDirectory(prefix="rlgen-validate-") as scratch:
        files, labels = [], {}
        # One file per root, so each problem names the root its object comes from.
        for number, (source, group) in enumerate(sorted(by_source.items())):
            path = Path(scratch) / f"{number:04d}.yaml"
            path.write_text(yamlio.dump_all([o.obj for o in group]), encoding="utf-8")
            files.append(path)
            for o in group:
                labels[(str(path), o.obj.get("kind", ""), (o.obj.get("metadata") or {}).get("name", ""))] = (
                    source, o.label)
        problems = validate_with_kubeconform(files, templates, cache_dir=cache)
    findings = []
    for filename, kind, name, message in problems:
        source, label = labels.get((filename, kind, name), (filename, f"{kind}/{name}"))
        findings.append(Finding(source, label, message))
    return findings


def schema_sources(objects: list[Rendered], validator: SchemaValidator,
                   located: list[tuple[str, str]], repo: Path) -> list[dict]:
    """One entry per (apiVersion, kind): where its schema was found ("none" when nowhere),
    the file relative to rlgen's catalog or to the repository."""
    types = sorted({(o.obj.get("apiVersion"), o.obj.get("kind")) for o in objects
                    if isinstance(o.obj.get("apiVersion"), str) and isinstance(o.obj.get("kind"), str)},
                   key=lambda t: (t[1], t[0]))
    sources = []
    for api_version, kind in types:
        validator.lookup(api_version, kind)
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
