"""``rlgen validate`` starts its kustomize builds before checking the hand-edited files and hands
each root's documents to one kubeconform process as they are built: a refusal must not leave a
build running, and every problem must land on the object it belongs to."""
from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest
from rlgen.contributions import Rendered
from rlgen.render.background import Rendering
from rlgen.validate.schema import SchemaValidator, schema_dir_locations
from rlgen.validate.schema_findings import SchemaCheck
from support.repos import one_error_line, run_rlgen, schema_dir
from support.toolchain import tool


@pytest.fixture
def repo(generate, tmp_path) -> Path:
    """A generated repository of its own (made before ``slow_kustomize`` is on PATH), without
    the renders another test cached in it: every root must build."""
    shutil.copytree(generate(), tmp_path / "repo", symlinks=True, ignore=shutil.ignore_patterns(".rlgen-cache"))
    return tmp_path / "repo"


@pytest.fixture
def slow_kustomize(repo, tmp_path, monkeypatch) -> Path:
    """A ``kustomize`` first on PATH that writes its pid to ``pids/`` and then sleeps."""
    bin_dir, pids = tmp_path / "bin", tmp_path / "pids"
    bin_dir.mkdir()
    pids.mkdir()
    script = bin_dir / "kustomize"
    script.write_text(f"#!{sys.executable}\n"
                      "import os, pathlib, time\n"
                      f"pathlib.Path({str(pids)!r}, str(os.getpid())).touch()\n"
                      "time.sleep(300)\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    from rlgen.tools import kustomize
    kustomize.command.cache_clear()
    yield pids
    kustomize.command.cache_clear()


def alive(pids: Path) -> list[int]:
    """The fake builds still running (a pid can be another process's by now: the command line
    tells; a killed child not yet reaped is a zombie, gone for every purpose here)."""
    running = []
    for pid in (int(p.name) for p in pids.iterdir()):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if state != "Z" and str(pids.parent / "bin" / "kustomize").encode() in cmdline:
            running.append(pid)
    return running


def test_leaving_a_rendering_early_ends_the_builds_it_started(repo, slow_kustomize):
    with pytest.raises(RuntimeError, match="refused"):
        with Rendering(repo):
            deadline = time.monotonic() + 60
            while not any(slow_kustomize.iterdir()) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert any(slow_kustomize.iterdir()), "no build started"
            raise RuntimeError("refused")
    assert any(slow_kustomize.iterdir()) and alive(slow_kustomize) == []


def test_a_refused_run_file_leaves_no_build_running(repo, slow_kustomize):
    (repo / "runs" / "baseline" / "run.yaml").write_text("trainer: [unclosed\n")
    line = one_error_line(run_rlgen("validate", str(repo)))
    assert "runs/baseline/run.yaml" in line
    assert alive(slow_kustomize) == []


def test_renders_finished_before_a_refusal_are_not_cached(repo):
    """What a refused validate leaves is the repository as it was, even when every build was
    done before the refusal came."""
    with pytest.raises(RuntimeError, match="refused"):
        with Rendering(repo) as rendering:
            rendering._thread.join(timeout=120)  # every build done (the result waits in a queue)
            assert not rendering._thread.is_alive()
            raise RuntimeError("refused")
    assert not (repo / ".rlgen-cache").exists()
    with Rendering(repo) as rendering:
        assert [source for source, _, _, _ in rendering.sources()]
    assert any((repo / ".rlgen-cache" / "renders").iterdir())


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "v"}}


def configmap(name: str, **extra) -> dict:
    return {**CONFIGMAP, "metadata": {"name": name, "namespace": "ns"}, **extra}


def test_each_problem_lands_on_its_object_whether_sent_as_built_or_as_json(tmp_path, monkeypatch):
    binary = Path(tool("kubeconform"))
    monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
    locations = schema_dir_locations(schema_dir())
    located = [("catalog", t) for t in locations]
    check = SchemaCheck(SchemaValidator(locations), located, tmp_path / "cache", offline=True)
    assert check.engine == "kubeconform"
    built = [Rendered("runs", configmap("fine")), Rendered("runs", configmap("bad", extra=1))]
    check.send(["apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine, namespace: ns}\ndata: {k: v}\n",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: ns}\ndata: {k: v}\nextra: 1\n"])
    check.add(built, sent=True)
    # A List is one resource per item for kubeconform: its problems are the List's.
    listed = Rendered("sync.yaml", {"apiVersion": "v1", "kind": "List",
                                    "items": [configmap("one"), configmap("two", data={"k": 2})]})
    last = Rendered("sync.yaml", configmap("last", spec={}))
    check.add([listed, last])
    assert [(f.source, f.obj, f.message) for f in check.findings()] == [
        ("runs", "ConfigMap/ns/bad", "$.extra: unknown field"),
        ("sync.yaml", listed.label, "$.items[1].data.k: got number, want null or string"),
        ("sync.yaml", "ConfigMap/ns/last", "$.spec: unknown field"),
    ]


@pytest.mark.parametrize("engine", ["kubeconform", "jsonschema"])
def test_problems_follow_the_render_not_the_order_builds_finished(tmp_path, monkeypatch, engine):
    """Builds and parts finish in any order; the report lists problems in the order of the
    render, the same each time."""
    if engine == "kubeconform":
        monkeypatch.setenv("PATH", f"{Path(tool('kubeconform')).parent}{os.pathsep}{os.environ['PATH']}")
    else:
        monkeypatch.setenv("PATH", str(tmp_path))  # no kubeconform
    locations = schema_dir_locations(schema_dir())
    check = SchemaCheck(SchemaValidator(locations), [("catalog", t) for t in locations], tmp_path / "cache", offline=True)
    assert check.engine == engine
    first, second = Rendered("runs", configmap("a", extra=1)), Rendered("overlays/x", configmap("b", extra=1))
    check.add([second])  # the second source's build finished first
    check.add([first])
    assert [f.source for f in check.findings([first, second])] == ["runs", "overlays/x"]
