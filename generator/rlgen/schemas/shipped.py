"""The JSON schemas rlgen ships (``catalog/``, laid out as kubeconform reads locations):
``k8s/<kind>[-<group label>]-<version>.json`` for Kubernetes core kinds and
``crds/<group>/<kind>_<version>.json`` for custom kinds. ``catalog/SOURCES.json`` says where
each file comes from; ``scripts/update_schemas.py`` regenerates the CRD-derived ones."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

CATALOG = Path(__file__).resolve().parent / "catalog"
CUSTOM = CATALOG / "crds"


def custom_schema_path(api_version: str, kind: str) -> str | None:
    """``<group>/<kind>_<version>.json`` of a shipped custom kind's schema, or None."""
    group, _, version = api_version.rpartition("/")
    if "." not in group:  # core and built-in groups (apps, batch...) are under k8s/
        return None
    name = f"{group}/{kind.lower()}_{version}.json"
    return name if (CUSTOM / name).is_file() else None


def custom_schemas(types: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{"<group>/<kind>_<version>.json": text}`` for each (apiVersion, kind) rlgen ships a
    schema of, as a generated repository carries them in ``schemas/``."""
    names = sorted({name for api_version, kind in types if (name := custom_schema_path(api_version, kind))})
    return {name: (CUSTOM / name).read_text(encoding="utf-8") for name in names}
