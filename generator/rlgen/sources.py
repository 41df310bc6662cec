"""The project's own kustomize sources (``base/``, ``overlays/``), the starting point of every
generated repository.

They live at the top of the project so they read as plain kustomize; ``rlgen/sources/`` holds
links to them, which a wheel build turns into copies. This module is the only reader.
"""
from __future__ import annotations

from typing import Any

from rlgen.tools import yamlio


def text(path: str) -> str:
    """A source file by its repository path, e.g. ``base/training/rayjob.yaml``."""
    # Lazy: importlib.resources is 9 ms (median of 7); importing this module (the trainer config
    # helpers do) reads no file.
    from importlib.resources import files

    return (files("rlgen") / "sources" / path).read_text(encoding="utf-8")


def load(path: str) -> Any:
    """A source YAML file, parsed with its comments (they reach the generated file)."""
    return yamlio.load(text(path))
