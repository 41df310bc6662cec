"""A kustomize on PATH that logs each root it builds, then runs the real one: tests count
the builds a command makes."""
from __future__ import annotations

import os
import shutil
from pathlib import Path


def counting_kustomize(folder: Path) -> tuple[dict[str, str], Path]:
    """(environment for ``run_rlgen``, log file with one built root a line)."""
    real = shutil.which("kustomize") or shutil.which("kubectl")
    assert real, "kustomize or kubectl must be installed"
    name = Path(real).name
    bin_dir, log = folder / "counting-bin", folder / "kustomize-builds.log"
    bin_dir.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    wrapper = bin_dir / name
    wrapper.write_text(f'#!/bin/sh\nfor last; do :; done\necho "$last" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, log


def builds(log: Path) -> list[str]:
    """The roots built since the last call, and the log emptied."""
    lines = log.read_text().splitlines()
    log.write_text("")
    return lines
