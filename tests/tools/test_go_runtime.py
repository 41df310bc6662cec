"""kustomize and kubeconform run with Go's collector set for a short run (GOGC=400), unless
the user set GOGC: theirs stands."""
from __future__ import annotations

import sys

import pytest

from rlgen.tools import kustomize
from support.fake_kustomize import fake_kustomize


@pytest.fixture
def recording_kustomize(tmp_path, monkeypatch):
    """A ``kustomize`` first on PATH that prints its GOGC as an object's name."""
    with fake_kustomize(monkeypatch, tmp_path, f"#!{sys.executable}\nimport os\n"
                        "print('apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: ' + os.environ.get('GOGC', 'unset'))\n"):
        yield tmp_path


def test_builds_run_with_a_collector_for_a_short_run(recording_kustomize, monkeypatch):
    monkeypatch.delenv("GOGC", raising=False)
    assert kustomize.build(recording_kustomize).endswith("name: 400\n")


def test_a_users_gogc_stands(recording_kustomize, monkeypatch):
    monkeypatch.setenv("GOGC", "50")
    assert kustomize.build(recording_kustomize).endswith("name: 50\n")


def test_kubeconform_runs_with_it_too(tmp_path, monkeypatch):
    from rlgen.validate.kubeconform import Stream

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "kubeconform"
    script.write_text(f"#!{sys.executable}\nimport json, os, sys\nsys.stdin.read()\n"
                      "print(json.dumps({'resources': [{'kind': 'ConfigMap', 'name': os.environ.get('GOGC', 'unset'),"
                      " 'status': 'statusValid'}]}))\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.delenv("GOGC", raising=False)
    stream = Stream([])
    stream.send(["apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"])
    assert [r.name for r in stream.results()] == ["400"]
