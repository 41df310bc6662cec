"""What the rlgen update tests share: a copy of a generated repository, validation, git state."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from support.repos import git, rlgen_in, schema_dir
from ruamel.yaml import YAML


def copy_of(generate, tmp_path: Path, *args: str) -> Path:
    """A fresh copy (with its .git) of the repository ``rlgen new ... ARGS`` generates."""
    return shutil.copytree(generate(*args), tmp_path / "repo", symlinks=True)


def validate(repo: Path):
    return rlgen_in(repo, "validate", "--output", "json", env={**os.environ, "RLGEN_SCHEMA_DIR": str(schema_dir())})


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def branch(repo: Path) -> str:
    return git(repo, "symbolic-ref", "--short", "HEAD").strip()


def status(repo: Path) -> str:
    return git(repo, "status", "--porcelain")


def names_in(path: Path) -> set[str]:
    return {f"{d['kind']}/{d['metadata']['name']}" for d in YAML(typ="safe").load_all(path.read_text()) if d}


def recorded_render(repo: Path) -> str:
    return YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["render"]
