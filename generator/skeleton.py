"""The repository skeleton (README, workflows, .gitignore), rendered by cookiecutter from
the template shipped in ``rlgen/templates/repo``."""
from __future__ import annotations

import tempfile
from importlib.resources import as_file, files
from pathlib import Path

from rlgen.filetree import FileTree


def render(tree: FileTree, context: dict) -> None:
    # generate_files, not cookiecutter(): no replay file in the user's home, no prompts.
    from cookiecutter.generate import generate_context, generate_files

    with as_file(files("rlgen.templates") / "repo") as template, tempfile.TemporaryDirectory() as out:
        ctx = generate_context(context_file=str(Path(template) / "cookiecutter.json"),
                               extra_context={"repo": context})
        generate_files(repo_dir=str(template), context=ctx, output_dir=out)
        root = Path(out) / "repo"
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            tree.add(path.relative_to(root).as_posix(), path.read_bytes())


def secret_env(secret: str, key: str, only_key: bool) -> str:
    """The shell variable the README's ``kubectl create secret`` reads a value from."""
    return (secret if only_key else f"{secret}_{key}").upper().replace("-", "_")
