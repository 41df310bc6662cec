"""rlgen's pinned toolchain as the package ships it: ``toolchain/`` of the project, linked as
``rlgen/e2e/toolchain``, whose ``build.py`` is the one reader of its folders' go.mod files and
their builder (standard library only: it runs before any virtual environment exists)."""
from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "e2e" / "toolchain"


@functools.cache
def build_script():
    """``toolchain/build.py``, loaded as a module."""
    spec = importlib.util.spec_from_file_location("rlgen_toolchain_build", FOLDER / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def newer_go() -> str:
    """What ``$GOTOOLCHAIN`` names for the folders whose go.mod needs a newer Go (Argo CD's)."""
    return build_script().NEWER_GO


def tested_version(folder: str) -> str:
    """The release ``toolchain/<folder>`` pins (e.g. ``v1.6.2`` for ``kuberay``): the version rlgen's
    tests run, which the generated README installs."""
    script = build_script()
    return script.read_module(FOLDER / folder).version
