"""A root that only lists other roots (``runs/`` lists the runs) built in parts, as many at a
time as there are cores, and the parts joined into exactly the text one build of the root
writes. One build of ``runs/`` runs on one core for most of ``rlgen validate``.

kustomize renders such a root as its roots' objects together, then sorts them all by its
legacy order (``docs/upstream.md``): each part is sorted the same way, so the parts' documents,
sorted again by that order, are the root's. A root whose objects kustomize would refuse
together (two with one id), or a part whose documents cannot be told apart, is built whole,
so a failure reads as kustomize's own.
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

#: A part is worth a kustomize process of its own from this many listed roots up: each part
#: loads the training base again.
PART_MIN = 8

_DOCUMENT = re.compile(r"^---\n", re.M)
# kustomize api v0.20.1, internal/builtins/SortOrderTransformer.go (defaultOrderFirst/Last).
_ORDER_FIRST = ("Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
                "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap",
                "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
                "PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget")
_ORDER_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
_RANK = {**{kind: i - len(_ORDER_FIRST) for i, kind in enumerate(_ORDER_FIRST)},
         **{kind: i + 1 for i, kind in enumerate(_ORDER_LAST)}}


def groups(listed: list[str], workers: int) -> list[list[str]]:
    """``listed`` cut into at most ``workers`` runs of consecutive roots, none below
    :data:`PART_MIN` (one group when there are too few to share)."""
    count = max(1, min(workers, len(listed) // PART_MIN))
    size, extra = divmod(len(listed), count)
    out, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        out.append(listed[start:end])
        start = end
    return out


def write_part(folder: Path, root: Path, listed: list[str]) -> Path:
    """A kustomization in ``folder`` listing ``listed`` (folders relative to ``root``, as the
    root lists them), by paths relative to ``folder``: kustomize refuses absolute ones."""
    folder.mkdir(parents=True)
    lines = "".join(f"  - {os.path.relpath(root / entry, folder)}\n" for entry in listed)
    (folder / "kustomization.yaml").write_text(
        f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{lines}")
    return folder


def join(texts: list[str]) -> str | None:
    """The parts' documents in kustomize's order, as one build writes them; None when two
    share an id or one cannot be read (the caller then builds the root whole)."""
    documents = [d for text in texts for d in _DOCUMENT.split(text) if d]
    ids = [_id(d) for d in documents]
    if None in ids:
        return None
    # kustomize refuses two objects with one group, version, kind and name in one namespace;
    # compared without the namespace here, so whatever it might refuse is built whole.
    if len({(g, v, k, name) for g, v, k, _, name in ids}) != len(ids):
        return None
    order = sorted(range(len(documents)), key=functools.cmp_to_key(lambda a, b: _compare(ids[a], ids[b])))
    return "---\n".join(documents[i] for i in order)


def _id(document: str) -> tuple[str, str, str, str, str] | None:
    """(group, version, kind, namespace, name) of one document kustomize wrote: its top-level
    apiVersion and kind and the name and namespace under metadata, read as the strings
    kustomize holds (libyaml's base loader: no value is typed)."""
    import yaml

    picked, in_metadata = [], False
    for line in document.split("\n"):
        if line[:1] not in ("", " ", "#"):
            in_metadata = line.startswith("metadata:")
            if in_metadata or line.startswith(("apiVersion:", "kind:")):
                picked.append(line)
        elif in_metadata and line.startswith(("  name:", "  namespace:")):
            picked.append(line)
    try:
        doc = yaml.load("\n".join(picked), Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))
    except yaml.YAMLError:
        return None
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    fields = [doc.get("apiVersion", ""), doc.get("kind", ""), *(meta.get(k, "") for k in ("namespace", "name"))] \
        if isinstance(meta, dict) else None
    if fields is None or not all(isinstance(f, str) for f in fields):
        return None
    api_version, kind, namespace, name = fields
    group, slash, version = api_version.partition("/")  # at the first slash, as kustomize
    if not slash:
        group, version = "", api_version
    return group, version, kind, namespace, name


def _compare(a: tuple, b: tuple) -> int:
    """kustomize's legacy order (``legacyIDSorter.Less``): by kind rank, then group, version
    and kind, Namespaces of the core group last among Namespaces; then namespace and name."""
    if a[:3] != b[:3]:
        return -1 if _gvk_less(a, b) else 1
    left, right = _id_string(a), _id_string(b)
    return (left > right) - (left < right)


def _gvk_less(a: tuple, b: tuple) -> bool:
    rank_a, rank_b = _RANK.get(a[2], 0), _RANK.get(b[2], 0)
    if rank_a != rank_b:
        return rank_a < rank_b
    if a[2] == b[2] == "Namespace" and (a[0] == "" or b[0] == ""):
        return _gvk_string(a) > _gvk_string(b)
    return _gvk_string(a) < _gvk_string(b)


def _gvk_string(x: tuple) -> str:
    return "_".join((x[0] or "~G", x[1] or "~V", x[2] or "~K"))


def _id_string(x: tuple) -> str:
    # resid.ResId through legacyResIDSortString: Gvk.String() is kind.version.group.
    gvk = ".".join((x[2] or "[noKind]", x[1] or "[noVer]", x[0] or "[noGrp]"))
    return "|".join((gvk, x[3] or "~X", x[4] or "~N"))
