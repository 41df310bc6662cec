"""The repository skeleton (README, workflows, .gitignore): Jinja2 templates shipped in
``rlgen/generate/templates/repo``, filled in memory.

Jinja2 directly rather than cookiecutter: the template is ours and fixed, nothing is asked
and no hook runs, and cookiecutter only renders onto disk (a temporary folder read back).
"""
from __future__ import annotations

from importlib.resources import files
from typing import Iterator

from rlgen.generate.filetree import FileTree


def _templates(folder, prefix: str = "") -> Iterator[tuple[str, str]]:
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.is_dir():
            yield from _templates(item, f"{prefix}{item.name}/")
        else:
            yield f"{prefix}{item.name}", item.read_text(encoding="utf-8")


def paths() -> list[str]:
    """The files the skeleton adds, before it adds them."""
    return [path for path, _ in _templates(files("rlgen") / "generate" / "templates" / "repo")]


def write(tree: FileTree, context: dict) -> None:
    # Lazy: jinja2 is 208 ms to import (median of 7).
    from jinja2 import Environment, StrictUndefined

    env = Environment(keep_trailing_newline=True, undefined=StrictUndefined, autoescape=False)
    for path, source in _templates(files("rlgen") / "generate" / "templates" / "repo"):
        text = env.from_string(source).render(repo=context)
        # A template that renders to nothing is not for this selection (e2e.yaml: an engine rlgen e2e syncs).
        if text.strip():
            tree.add(path, text)

