"""The pinned upstream toolchain (``toolchain/``, built by ``make toolchain``) as tests see it.

A missing tool skips its tests on a developer's machine and fails them under CI=true, where
``scripts/ci.sh`` has built the toolchain first.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

import pytest

from rlgen.tools import toolchain_pins

PROJECT = Path(__file__).resolve().parents[2]
TOOLCHAIN = PROJECT / "toolchain"
BIN = PROJECT / ".toolchain" / "bin"


def tool(name: str) -> str:
    path = BIN / name
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    missing(f"{name} is not built: run `make toolchain` (builds the pinned upstream tools from source)")


def missing(message: str):
    """A tool a test needs is absent: a skip on a developer's machine, a failure under CI=true."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@functools.cache
def module_dir(folder: str, module: str) -> Path:
    """The source of ``module`` at the version ``toolchain/<folder>/go.mod`` pins (from Go's module cache)."""
    # The Go that builds the folder reads its go.mod (a newer one where it needs it).
    env = build.go_env(build.read_module(TOOLCHAIN / folder))
    result = subprocess.run(["go", "mod", "download", "-json", module], cwd=TOOLCHAIN / folder, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"go mod download {module} in toolchain/{folder}: {result.stderr.strip()}")
    return Path(json.loads(result.stdout)["Dir"])



#: ``toolchain/build.py``, the one reader of the consumer modules' go.mod files, as rlgen loads it.
build = toolchain_pins.build_script()


def pinned(folder: str, module: str) -> str:
    """The version of ``module`` that ``toolchain/<folder>/go.mod`` requires."""
    return build.read_module(TOOLCHAIN / folder).requires[module]
