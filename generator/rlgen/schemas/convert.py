"""Convert CustomResourceDefinitions into JSON schemas that kubeconform (and
``rlgen.validate.schema``) read, by the rules of kubeconform's own converter
(yannh/kubeconform scripts/openapi2jsonschema.py, default settings): the same
output, byte for byte, for the KubeRay and OpenKruise agents CRDs in ``upstream/crds``
(``compact`` only drops the indentation).

Output: ``OUT/<group>/<kind>_<version>.json``, the datree CRDs-catalog layout, found
with the location ``OUT/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rlgen.errors import RlgenError
from rlgen.tools import yamlio

# Group, kind and version become path parts: refuse anything that could leave OUT.
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")


def import_crds(paths: list[Path], out: Path, compact: bool = False) -> list[Path]:
    """Write one schema per served version of every CRD in ``paths``; the files written.
    Every file is read before anything is written, so bad input writes nothing.
    ``compact`` writes no indentation: the same schema in about half the bytes."""
    schemas = []
    for path in paths:
        crds = [doc for doc in _documents(path) if doc.get("kind") == "CustomResourceDefinition"]
        if not crds:
            raise RlgenError(f"{path}: no CustomResourceDefinition in this file")
        for crd in crds:
            schemas += [
                (out / group / f"{kind}_{version}.json".lower(), schema)
                for group, kind, version, schema in _served_schemas(path, crd)
            ]
    for target, schema in schemas:
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(_to_json_schema(schema), **({"separators": (",", ":")} if compact else {"indent": 2}))
        target.write_text(text + "\n", encoding="utf-8")
    return [target for target, _ in schemas]


def _documents(path: Path) -> list[dict]:
    # YAML 1.1 like kubeconform's script (and libyaml: ten times faster on a 1 MB CRD).
    try:
        docs = yamlio.read_yaml11_all(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RlgenError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except ValueError as exc:
        raise RlgenError(f"{path}: not valid YAML: {exc}") from None
    flat = []
    for doc in docs:
        if isinstance(doc, dict):
            # `kubectl get crd -o yaml` prints a List holding the CRDs.
            flat += [item for item in doc.get("items") or [] if isinstance(item, dict)]
            flat.append(doc)
    return flat


def _served_schemas(path: Path, crd: dict) -> list[tuple[str, str, str, dict]]:
    """(group, kind, version, openAPIV3Schema) of each served version. Versions that are
    not served get no schema: the API server rejects objects of those versions."""
    name = (crd.get("metadata") or {}).get("name", "?")
    try:
        spec = crd["spec"]
        group, kind = spec["group"], spec["names"]["kind"]
        # apiextensions v1beta1 put one schema in spec.validation and allowed a lone spec.version.
        shared = (spec.get("validation") or {}).get("openAPIV3Schema")
        versions = spec.get("versions") or [{"name": spec["version"]}]
        found = [
            (group, kind, version["name"], (version.get("schema") or {}).get("openAPIV3Schema") or shared)
            for version in versions
            if version.get("served", True)
        ]
    except KeyError as exc:
        raise RlgenError(f"{path}: CustomResourceDefinition {name} lacks {exc}") from None
    except (TypeError, AttributeError):
        raise RlgenError(f"{path}: CustomResourceDefinition {name} is malformed") from None
    for group, kind, version, schema in found:
        if not all(isinstance(part, str) and _SAFE_NAME.fullmatch(part) for part in (group, kind, version)):
            raise RlgenError(f"{path}: CustomResourceDefinition {name} has an invalid group, kind or version")
        if not isinstance(schema, dict):
            raise RlgenError(f"{path}: CustomResourceDefinition {name} has no openAPIV3Schema for version {version}")
    return found


def _to_json_schema(schema: dict) -> dict:
    _close_objects(schema, root=True)
    return _int_or_string(schema)


def _close_objects(node: Any, root: bool = False) -> None:
    """``additionalProperties: false`` on every object that lists properties, so a typo in
    a field name fails, as kubectl's client-side validation did. Like the script, the
    root stays open and lists (anyOf, allOf...) are not entered. Unlike the script, a node
    with ``x-kubernetes-preserve-unknown-fields`` stays open: the API server keeps unknown
    fields there, so they are valid (no such node in the KubeRay and agents CRDs)."""
    if not isinstance(node, dict):
        return
    if (
        "properties" in node
        and not root
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        node["additionalProperties"] = False
    for value in node.values():
        _close_objects(value)


def _int_or_string(node: Any) -> Any:
    """A field with ``format: int-or-string`` (OpenAPI v2 style) becomes a string/integer
    oneOf; CRDs from controller-gen use ``x-kubernetes-int-or-string`` with an anyOf,
    which already validates and is kept."""
    if isinstance(node, dict):
        return {
            key: {"oneOf": [{"type": "string"}, {"type": "integer"}]}
            if isinstance(value, dict) and value.get("format") == "int-or-string"
            else _int_or_string(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_int_or_string(item) for item in node]
    return node
