"""A root that only lists other roots (``runs/`` lists the runs) built in parts, several at a
time. kustomize builds one root on about one core, and one build of many runs costs more than
the builds of its parts together (each object it adds is checked against all before it).

A part is a kustomization in a held temporary folder that lists some of the root's children by
relative path. kustomize builds each child as it does inside the root, which has no field but
``resources`` (:func:`rlgen.render.manifests.children`): the parts together hold the root's
objects, each part in kustomize's order, the parts in the root's order. What only a build of
the whole root does is refuse an object id two children share. Such a clash is looked for in
the parts, conservatively; on one, or when a part fails, the whole root is built as well, and
its error is the one reported; when it builds, the parts stand (docs/upstream.md).
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

#: Children a part holds, about: with fewer children than two parts, one build is as quick.
PART_SIZE = 25
PREFIX = "rlgen-parts-"

_TOP = re.compile(r"^(apiVersion|kind):[ \t]*(.*?)[ \t]*$", re.M)
_METADATA = re.compile(r"^metadata:[ \t]*\n((?:[ \t]+.*(?:\n|$)|[ \t]*\n)*)", re.M)
_META_FIELD = re.compile(r"^  (name|namespace):[ \t]*(.*?)[ \t]*$", re.M)
# kustomize's name suffix of a generated ConfigMap or Secret: its id is the name without it.
_HASH_SUFFIX = re.compile(r"-[245-9bcdfghkmt]{10}$")


def partition(children: Sequence[str]) -> list[tuple[str, ...]]:
    """The children in consecutive parts of about :data:`PART_SIZE`; [] when one build is as
    quick (fewer than two parts' worth)."""
    count = len(children) // PART_SIZE
    if count < 2:
        return []
    size, extra = divmod(len(children), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        out.append(tuple(children[start:end]))
        start = end
    return out


def write(scratch: Path, name: str, checkout: Path, members: Sequence[str]) -> Path:
    """The folder ``name`` in ``scratch``: a kustomization listing ``members``
    (roots relative to the ``checkout`` folder) by their paths relative to it."""
    part = scratch / name
    part.mkdir()
    lines = "".join(f"  - {os.path.relpath(checkout / member, part)}\n" for member in members)
    (part / "kustomization.yaml").write_text(
        f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{lines}")
    return part


def clash(documents: Sequence[Sequence[str]]) -> bool:
    """Whether two parts (the documents of each) may hold objects of one id (or an object whose
    id cannot be read here): the whole root must then be built to know."""
    seen: dict[tuple[str, str, str, str], int] = {}
    for index, docs in enumerate(documents):
        for doc in docs:
            found = _id(doc)
            if found is None or seen.setdefault(found, index) != index:
                return True
    return False


def _id(doc: str) -> tuple[str, str, str, str] | None:
    """(group, kind, namespace, name) of one rendered object, the version left out and a hash
    suffix cut: two objects kustomize tells apart may share it, never the other way round."""
    top = dict(m.groups() for m in _TOP.finditer(doc))
    metadata = _METADATA.search(doc)
    if "apiVersion" not in top or "kind" not in top or metadata is None:
        return None
    fields = dict(m.groups() for m in _META_FIELD.finditer(metadata.group(1)))
    if "name" not in fields:
        return None
    group = _unquoted(top["apiVersion"]).rpartition("/")[0]
    namespace = _unquoted(fields.get("namespace", ""))
    return (group, _unquoted(top["kind"]), "" if namespace == "default" else namespace,
            _HASH_SUFFIX.sub("", _unquoted(fields["name"])))


def _unquoted(value: str) -> str:
    # Valid names need no escapes: the quotes are all a quoted one adds.
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value
