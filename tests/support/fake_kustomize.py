"""A stand-in ``kustomize`` first on PATH, for tests of how rlgen runs the binary (its
environment, when builds start): rlgen looks the binary up once, so the lookup is forgotten
before and after."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rlgen.tools import kustomize


@contextmanager
def fake_kustomize(monkeypatch, folder: Path, script: str) -> Iterator[Path]:
    """``script`` (the whole file, with its ``#!`` line) as ``kustomize`` in ``folder/bin``."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "kustomize"
    exe.write_text(script)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    kustomize.command.cache_clear()
    try:
        yield bin_dir
    finally:
        kustomize.command.cache_clear()
