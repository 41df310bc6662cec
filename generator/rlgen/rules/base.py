"""What every rule shares: the rendered objects it reads and the findings it yields."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    source: str
    obj: str
    message: str


@dataclass(frozen=True)
class Rendered:
    """One rendered object and the kustomization root (or file) it came from."""

    source: str
    obj: dict

    @property
    def label(self) -> str:
        meta = self.obj.get("metadata", {})
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.obj.get('kind')}/{ns}{meta.get('name')}"
