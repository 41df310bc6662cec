"""Shared helpers: run the real CLI, generate repositories, render them with kustomize,
and validate rendered objects against the upstream schemas in shared/schemas."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[1]


def schema_dir() -> Path:
    """``RLGEN_SCHEMA_DIR``, else the schemas shipped beside the project checkout."""
    env = os.environ.get("RLGEN_SCHEMA_DIR")
    path = Path(env) if env else REPO.parent / "shared" / "schemas"
    if not (path / "k8s").is_dir():
        raise RuntimeError(f"no schema folder at {path}: set RLGEN_SCHEMA_DIR")
    return path


def run_rlgen(*args: str, cwd: Path | None = None, env: dict | None = None, input: str | None = None):
    return subprocess.run([sys.executable, "-m", "rlgen", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, input=input)


def kustomize_roots(repo: Path) -> list[Path]:
    from rlgen.kustomize import roots

    return roots(repo)


def build(root: Path) -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(root)], capture_output=True, text=True)
    assert out.returncode == 0, f"kustomize failed on {root}: {out.stderr}"
    return [d for d in YAML(typ="safe").load_all(out.stdout) if d]


def repo_files(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes()
            for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}


def plain_manifests(repo: Path) -> list[dict]:
    """YAML objects outside kustomization roots (the sync engine's entry points)."""
    docs = []
    for path in sorted((repo / "clusters").rglob("*.yaml")):
        docs += [d for d in YAML(typ="safe").load_all(path.read_text()) if d]
    return docs


def all_objects(repo: Path) -> list[dict]:
    objects = plain_manifests(repo)
    for root in kustomize_roots(repo):
        objects += build(root)
    return objects


@pytest.fixture(scope="session")
def generate(tmp_path_factory):
    """``generate(*args)`` runs ``rlgen new <fresh dir> *args --no-input`` and returns the path."""
    cache: dict[tuple, Path] = {}

    def _generate(*args: str) -> Path:
        if args not in cache:
            target = tmp_path_factory.mktemp("repo") / "repo"
            result = run_rlgen("new", str(target), *args, "--no-input")
            assert result.returncode == 0, result.stderr
            cache[args] = target
        return cache[args]

    return _generate


@pytest.fixture(scope="session")
def schemas():
    from jsonschema import Draft7Validator

    root = schema_dir()
    compiled: dict[tuple, object] = {}

    def validate(obj: dict) -> list[str]:
        api, kind = obj["apiVersion"], obj["kind"]
        group, _, version = api.rpartition("/")
        key = (api, kind)
        if key not in compiled:
            # kubeconform's two default templates: k8s/<kind>[-<group label>]-<version>.json,
            # then crds/<group>/<kind>_<version>.json.
            suffix = f"-{group.split('.')[0]}" if group else ""
            candidates = [root / "k8s" / f"{kind.lower()}{suffix}-{version}.json",
                          root / "crds" / group / f"{kind.lower()}_{version}.json"]
            path = next((c for c in candidates if c.exists()), None)
            assert path, f"no schema for {kind} {api}"
            compiled[key] = Draft7Validator(json.loads(path.read_text()))
        return [f"{kind}/{obj['metadata'].get('name')}: {'/'.join(map(str, e.path))}: {e.message}"
                for e in compiled[key].iter_errors(obj)]

    return validate


@pytest.fixture
def repo(generate, tmp_path):
    """A fresh copy (with its .git) of the default generated repository, for a test to change."""
    return shutil.copytree(generate(), tmp_path / "repo", symlinks=True)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", message)
