"""Builds that start together (rlgen.tools.kustomize.Builds): the caller's own work waits until
each build it expects has started, so none of them waits behind it for the interpreter."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rlgen.tools import kustomize
from support.fake_kustomize import fake_kustomize


@pytest.fixture
def slow_kustomize(tmp_path, monkeypatch) -> Path:
    """A kustomize that notes each root it starts on, then takes a moment."""
    started = tmp_path / "started"
    started.mkdir()
    with fake_kustomize(monkeypatch, tmp_path, f'#!/bin/sh\nfor last; do :; done\ntouch "{started}/$(basename "$last")"\n'
                        'sleep 0.3\necho "kind: ConfigMap"\n'):
        yield started


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
