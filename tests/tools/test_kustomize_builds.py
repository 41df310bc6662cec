"""Builds that start together (rlgen.tools.kustomize.Builds): the caller's own work waits until
each build it expects has started, so none of them waits behind it for the interpreter."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rlgen.tools import kustomize


@pytest.fixture
def slow_kustomize(tmp_path, monkeypatch) -> Path:
    """A kustomize that notes each root it starts on, then takes a moment."""
    started = tmp_path / "started"
    started.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kustomize"
    fake.write_text(f'#!/bin/sh\nfor last; do :; done\ntouch "{started}/$(basename "$last")"\nsleep 0.3\n'
                    'echo "kind: ConfigMap"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    kustomize.command.cache_clear()
    yield started
    kustomize.command.cache_clear()


def _until(predicate, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.005)
    return predicate()


def test_started_waits_for_every_build_expected(tmp_path, slow_kustomize):
    builds = kustomize.Builds()
    builds.expect(2)
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(builds.build, tmp_path / "a")
        assert _until(lambda: (slow_kustomize / "a").exists())
        assert not builds.started.is_set()
        second = pool.submit(builds.build, tmp_path / "b")
        assert builds.started.wait(5)
        assert first.result() == second.result() == "kind: ConfigMap\n"


def test_without_expect_the_first_build_is_enough(tmp_path, slow_kustomize):
    builds = kustomize.Builds()
    with ThreadPoolExecutor(max_workers=1) as pool:
        done = pool.submit(builds.build, tmp_path / "a")
        assert builds.started.wait(5)
        assert not done.done()  # started, not finished
        assert done.result() == "kind: ConfigMap\n"
