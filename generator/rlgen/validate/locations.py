"""Schema locations as kubeconform's ``-schema-location`` reads them, and where ``rlgen
validate`` looks by default. Template fields, layout and rendering follow yannh/kubeconform
(pkg/registry/registry.go), so one list means the same thing here and to the binary."""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.schemas.shipped import CATALOG

# The layout kubeconform assumes under a location that does not end in "json".
_REGISTRY_LAYOUT = (
    "/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"
)
#: What kubeconform's ``-schema-location default`` stands for.
DEFAULT_LOCATION = "https://raw.githubusercontent.com/yannh/kubernetes-json-schema/master" + _REGISTRY_LAYOUT
#: The community catalog of CRD schemas (kubeconform's default has no CRDs).
CRDS_CATALOG = ("https://raw.githubusercontent.com/datreeio/CRDs-catalog/main/"
                "{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json")
#: A folder laid out like rlgen's catalog (``k8s/``, ``crds/``), looked in before anything else.
SCHEMA_DIR_ENV = "RLGEN_SCHEMA_DIR"
CUSTOM_LAYOUT = "/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"

# kubeconform's default -kubernetes-version; rlgen always validates as with -strict.
_KUBERNETES_VERSION = "master"
_STRICT_SUFFIX = "-strict"
_ACTION = re.compile(r"\{\{(.*?)\}\}")
_FIELD = re.compile(r"\s*\.(\w+)\s*")


def schema_dir_locations(root: str | os.PathLike) -> list[str]:
    """The two templates for a folder with ``k8s/`` (yannh naming) and ``crds/<group>/``
    (datree CRDs-catalog naming), the layout of rlgen's catalog."""
    root = os.fspath(root)
    return [root + "/k8s/{{ .ResourceKind }}{{ .KindSuffix }}.json", root + "/crds" + CUSTOM_LAYOUT]


def env_locations() -> list[str]:
    """The templates of the folder ``$RLGEN_SCHEMA_DIR`` names, or none when it is unset."""
    root = os.environ.get(SCHEMA_DIR_ENV)
    return schema_dir_locations(root) if root else []


def default_locations(repo: Path, offline: bool = False) -> list[tuple[str, str]]:
    """(where from, template) in the order ``rlgen validate`` tries them: ``$RLGEN_SCHEMA_DIR``
    when set, rlgen's own catalog, the repository's ``schemas/``, then the remote catalogs
    (which ``offline`` reads from the cache only)."""
    located = [(f"${SCHEMA_DIR_ENV}", t) for t in env_locations()]
    located += [("rlgen catalog", t) for t in schema_dir_locations(CATALOG)]
    if (repo / "schemas").is_dir():
        located.append(("repository schemas/", str(repo / "schemas") + CUSTOM_LAYOUT))
    remote = "cache" if offline else "remote"
    return located + [(remote, DEFAULT_LOCATION), (remote, CRDS_CATALOG)]


def resolve(locations: Iterable[str]) -> list[str]:
    """Full templates for ``-schema-location`` values. With none, ``$RLGEN_SCHEMA_DIR``
    when set, else kubeconform's default."""
    locations = list(locations) or env_locations() or ["default"]
    templates = [_expand(location) for location in locations]
    for template in templates:
        render(template, "Deployment", "v1")  # a bad template fails now, as in kubeconform
    return templates


def _expand(location: str) -> str:
    if location == "default":
        return DEFAULT_LOCATION
    # kubeconform tests the bare suffix "json" (not ".json") to tell a template from a root.
    return location if location.endswith("json") else location + _REGISTRY_LAYOUT


def render(template: str, kind: str, api_version: str) -> str:
    # The values of kubeconform's schemaPath(); note that for "v1" the Group is "v1".
    parts = api_version.split("/")
    kind_suffix = "-" + parts[0].split(".")[0].lower()
    if len(parts) > 1:
        kind_suffix += "-" + parts[1].lower()
    values = {
        "NormalizedKubernetesVersion": _KUBERNETES_VERSION,
        "StrictSuffix": _STRICT_SUFFIX,
        "ResourceKind": kind.lower(),
        "ResourceAPIVersion": parts[-1],
        "Group": parts[0],
        "KindSuffix": kind_suffix,
    }

    def field(action: re.Match) -> str:
        name = _FIELD.fullmatch(action.group(1))
        if name is None or name.group(1) not in values:
            raise RlgenError(
                f"schema location {template!r}: {action.group(0)} is not one of the kubeconform "
                f"template fields {{{{ .Name }}}} with Name in {', '.join(values)}"
            )
        return values[name.group(1)]

    return _ACTION.sub(field, template)
