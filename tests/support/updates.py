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


def as_index_layout(repo: Path) -> None:
    """The working tree of a Flux repository laid out as rlgen generated it before a run was a
    folder of each environment that runs it: each environment's runs listed in one index,
    ``overlays/<env>/runs/kustomization.yaml``, which every run pull request edited."""
    for runs in sorted((repo / "overlays").glob("*/runs")):
        names = sorted(p.parent.name for p in runs.glob("*/kustomization.yaml"))
        shutil.rmtree(runs)
        runs.mkdir()
        (runs / "kustomization.yaml").write_text(
            "# The active training runs: removing one here (or its folder) prunes its RayJob.\n"
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            + ("resources:\n" + "".join(f"  - ../../../runs/{n}\n" for n in names) if names else "resources: []\n"))


def as_old_layout(repo: Path) -> None:
    """The working tree of a Flux repository laid out as rlgen generated it before each
    environment had its runs index and every cluster shared ``infrastructure/upstream/``: the
    main environment's index in ``runs/kustomization.yaml`` (run names as entries), the runs
    stage applying ``./runs``, and each cluster's upstream roots in its own infrastructure.yaml."""
    yaml = YAML(typ="safe")
    as_index_layout(repo)
    index = repo / "overlays/production/runs/kustomization.yaml"
    text = index.read_text().replace("../../../runs/", "")
    (repo / "runs/kustomization.yaml").write_text(text)
    shutil.rmtree(index.parent)
    for cluster in (repo / "clusters").iterdir():
        runs = cluster / "runs.yaml"
        runs.write_text(runs.read_text().replace("path: ./overlays/production/runs", "path: ./runs"))
        upstream = [p for p in sorted((repo / "infrastructure/upstream").glob("*.yaml")) if p.name != "kustomization.yaml"]
        infra = cluster / "infrastructure.yaml"
        parts = ([infra.read_text()] if infra.exists() else []) + [p.read_text() for p in upstream]
        infra.write_text("---\n".join(parts))
        assert all(yaml.load_all(infra.read_text()))
        shutil.rmtree(cluster / "upstream")
    shutil.rmtree(repo / "infrastructure/upstream")
    if not any((repo / "infrastructure").iterdir()):
        (repo / "infrastructure").rmdir()
