"""The local control plane of ``rlgen e2e`` (rlgen.e2e.controlplane), which the tests share: its
programs from the project's toolchain (``make toolchain``), its upstream sources at the versions
``toolchain/*/go.mod`` pins. A missing tool skips on a developer's machine, fails under CI=true."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rlgen.e2e.controlplane import (  # noqa: F401 - the names the tests import from here
    FAIL_POD, KWOK_LABEL, LINGJUN_LABELS, LINGJUN_TAINT, SUBMITTER, free_port, kwok_stages, wait_until)
from rlgen.e2e.controlplane import ControlPlane as _ControlPlane
from rlgen.e2e.programs import FOLDERS
from support.toolchain import module_dir, tool


def source(module: str) -> Path:
    return module_dir(FOLDERS[module], module)


@dataclass
class ControlPlane(_ControlPlane):
    tool: Callable[[str], str] = tool
    source: Callable[[str], Path] = source
