"""The CRDs of the kinds a repository renders that nothing started so far serves: the pinned
upstream CRD rlgen ships (``upstream/crds/``, linked into the package as ``rlgen/e2e/crds``) where
it has one, else a stand-in that stores any object of the kind. Either way no controller of the
kind runs: it is "not checked here". The sync applies its objects, which the API server checks
against the CRD's schema, and nothing acts on them, so its stage cannot fail on them; the job
names each such kind in one line instead.

A group whose CRDs the repository's own sync installs (an upstream source it fetches,
rlgen.kube.needs.installed_by_repository) is left to that sync."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rlgen.e2e.controlplane import ControlPlane
from rlgen.kube.needs import custom_group, installed_by_repository

SHIPPED = Path(__file__).resolve().parent / "crds"


@dataclass
class Installed:
    """What was installed: one line per kind no controller serves, saying how it is served."""

    unchecked: list[str] = field(default_factory=list)


def served(cp: ControlPlane) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every custom kind the API server serves."""
    found = set()
    for group in json.loads(cp.get("/apis")).get("groups", []):
        for version in group.get("versions", []):
            gv = version["groupVersion"]
            if custom_group(gv):
                found |= {(gv, r["kind"]) for r in json.loads(cp.get(f"/apis/{gv}")).get("resources", [])
                          if "/" not in r["name"]}
    return found


def shipped_crd(group: str, kind: str) -> Path | None:
    for path in sorted(SHIPPED.glob(f"{group}_*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd.get("kind") == "CustomResourceDefinition" and crd["spec"]["names"]["kind"] == kind:
            return path
    return None


def _plural(kind: str) -> str:
    word = kind.lower()
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def stand_in_crd(group: str, kind: str, versions: list[str], namespaced: bool) -> dict:
    """A CRD that serves ``kind`` at ``versions`` and keeps every field of its objects."""
    plural = _plural(kind)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}", "annotations": {"rlgen.io/e2e": "stand-in: not checked here"}},
            "spec": {"group": group, "scope": "Namespaced" if namespaced else "Cluster",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": v, "served": True, "storage": i == 0, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                                  for i, v in enumerate(versions)]}}


def install_missing(cp: ControlPlane, needs) -> Installed:
    """A CRD for each custom kind of ``needs`` not served yet, nor installed by the repository."""
    have = served(cp)
    wanted: dict[tuple[str, str], list[str]] = {}
    for api, kinds in sorted(needs.kinds.items()):
        group = custom_group(api)
        if not group or installed_by_repository(group, needs):
            continue
        for kind in sorted(kinds - {k for gv, k in have if gv == api}):
            wanted.setdefault((group, kind), []).append(api.rpartition("/")[2])
    done = Installed()
    crds = []
    for (group, kind), versions in sorted(wanted.items()):
        shown = f"{kind} ({', '.join(f'{group}/{v}' for v in versions)})"
        if path := shipped_crd(group, kind):
            crds.append(yaml.safe_load(path.read_text()))
            done.unchecked.append(f"{shown}: its pinned CRD installed ({path.name}), no controller of it runs")
            continue
        objects = [o for v in versions for o in needs.custom.get((f"{group}/{v}", kind), [])]
        namespaced = any((o.get("metadata") or {}).get("namespace") for o in objects)
        crds.append(stand_in_crd(group, kind, versions, namespaced))
        done.unchecked.append(f"{shown}: rlgen knows no CRD of it; its objects are stored as applied")
    if crds:
        # Server-side: some upstream CRDs are larger than client-side apply's annotation allows.
        text = "\n".join(json.dumps(c) for c in crds)
        cp.kubectl("apply", "--server-side", "-f", "-", input=text)
        names = [f"crd/{c['metadata']['name']}" for c in crds]
        cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", *names)
    return done
