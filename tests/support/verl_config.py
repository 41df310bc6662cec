"""Compose a generated run's config with Hydra against the config tree of a verl release.

Each release rlgen supports is installed without dependencies into ``.verl/<version>`` of the
checkout (``make setup``); nothing imports verl's ``__init__``, which needs ray and torch."""
from __future__ import annotations

import os
import shlex
from contextlib import contextmanager
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from rlgen.verl import releases
from rlgen.verl.trainer_config import flatten

from support.repos import build

CHECKOUT = Path(__file__).resolve().parents[2]


def verl_root(version: str = releases.DEFAULT) -> Path:
    """The folder holding verl ``version``'s ``verl`` package."""
    root = CHECKOUT / ".verl" / version
    assert (root / "verl" / "trainer" / "config").is_dir(), f"verl {version} is not in {root}: run make setup"
    return root


@contextmanager
def in_dir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def mounted_configs(repo: Path, run: str, dest: Path) -> tuple[Path, list[str]]:
    """Write the run's ConfigMap as the pod sees it; return the dir and entrypoint overrides."""
    objects = build(repo / "runs" / run)
    configmap = next(o for o in objects if o["kind"] == "ConfigMap")
    for key, text in configmap["data"].items():
        (dest / key).write_text(text)
    rayjob = next(o for o in objects if o["kind"] == "RayJob")
    # The entrypoint waits for the run's GPUs first, then starts verl through resume.py, which
    # adds the RayJob's checkpoint folder to verl's arguments (tests/verl/test_checkpoints.py).
    *_, command = rayjob["spec"]["entrypoint"].split("&&")
    argv = shlex.split(command)
    assert argv[:2] == ["python3", "/var/configs/resume.py"]
    argv = argv[2:]
    assert argv[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    options = dict(a.split("=", 1) for a in argv[3:] if a.startswith("--"))
    assert options["--config-path"] == "/var/configs" and options["--config-name"] == "run"
    return dest, [a for a in argv[3:] if not a.startswith("--")]


def compose_run(configs: Path, overrides: list[str], version: str = releases.DEFAULT):
    # hydra.searchpath is relative to the RayJob's working_dir, the folder holding verl/.
    with in_dir(verl_root(version)), initialize_config_dir(config_dir=str(configs), version_base=None):
        return compose(config_name="run", overrides=overrides)


def verl_defaults(version: str = releases.DEFAULT):
    config_dir = verl_root(version) / "verl" / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return OmegaConf.to_container(compose(config_name="ppo_trainer"))


def unknown_keys(config: dict, reference: dict) -> list[str]:
    missing = []
    for key in flatten({k: v for k, v in config.items() if k not in ("hydra", "defaults")}):
        node = reference
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                missing.append(key)
                break
            node = node[part]
    return missing
