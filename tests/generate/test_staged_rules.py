"""The check ``rlgen new`` runs before its first commit, with the builds it starts while the
rest of the repository is generated: a build is used only for exactly the files it read, a
refusal leaves no build running, and each plugin patch's twin leaves the files as they were."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from support.toolchain import tool

from rlgen.errors import RlgenError
from rlgen.generate.staged_rules import EarlyBuilds, refuse_failing
from rlgen.render import manifests
from rlgen.tools import kustomize

KUSTOMIZATION = b"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"


def configmap(name: str) -> bytes:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n".encode()


@pytest.fixture
def counted_builds(monkeypatch):
    """The roots kustomize builds, in the order the builds start."""
    monkeypatch.setenv("PATH", f"{Path(tool('kustomize')).parent}{os.pathsep}{os.environ['PATH']}")
    kustomize.command.cache_clear()
    built: list[str] = []
    real = kustomize.Builds.build

    def build(self, root):
        built.append(Path(root).name)
        return real(self, root)

    monkeypatch.setattr(kustomize.Builds, "build", build)
    yield built
    kustomize.command.cache_clear()


def write(folder: Path, files: dict[str, bytes]) -> None:
    for rel, content in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(content)


def names(texts: dict[str, list[str]]) -> dict[str, list[str]]:
    return {source: [line.split(": ")[1] for doc in docs for line in doc.splitlines() if line.startswith("  name: ")]
            for source, docs in texts.items()}


def test_the_render_takes_a_build_started_early_and_builds_again_a_root_whose_files_changed(tmp_path, counted_builds):
    early_files = {
        "one/kustomization.yaml": KUSTOMIZATION + b"  - cm.yaml\n",
        "one/cm.yaml": configmap("first"),
        # Names a file a later stage adds: its early build fails, and must not be the render's.
        "two/kustomization.yaml": KUSTOMIZATION + b"  - cm.yaml\n  - late.yaml\n",
        "two/cm.yaml": configmap("second"),
    }
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with EarlyBuilds(tmp_path, []) as early:
        early.start(early_files, ["one", "two"])
        early.write({**early_files, "two/late.yaml": configmap("late")})
        rendered = manifests.render({"repo": tmp_path}, cache=early.cache(), builds=early.builds)["repo"]
    assert names(rendered) == {"one": ["first"], "two": ["late", "second"]}
    # "one" once, early; "two" early (failed) and again by the render.
    assert sorted(counted_builds) == ["one", "two", "two"]


def test_a_root_given_a_file_beside_it_after_its_early_build_is_built_again(tmp_path, counted_builds):
    files = {"one/kustomization.yaml": KUSTOMIZATION + b"  - cm.yaml\n", "one/cm.yaml": configmap("first")}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with EarlyBuilds(tmp_path, []) as early:
        early.start(files, ["one"])
        early.write({**files, "one/notes.yaml": b"kept: beside\n"})
        rendered = manifests.render({"repo": tmp_path}, cache=early.cache(), builds=early.builds)["repo"]
    assert names(rendered) == {"one": ["first"]}
    assert counted_builds == ["one", "one"]


def test_leaving_early_builds_ends_the_builds_still_running(tmp_path, monkeypatch):
    # A kustomize that never finishes: a refused repository must not leave it running.
    slow = tmp_path / "bin" / "kustomize"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\necho $$ > \"$(dirname \"$0\")/pid\"\nexec sleep 600\n")
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow.parent}{os.pathsep}{os.environ['PATH']}")
    kustomize.command.cache_clear()
    files = {"one/kustomization.yaml": KUSTOMIZATION + b"  - cm.yaml\n", "one/cm.yaml": configmap("first")}
    repo = tmp_path / "repo"
    try:
        with pytest.raises(RlgenError, match="refused"):
            with EarlyBuilds(repo, []) as early:
                early.start(files, ["one"])
                deadline = time.monotonic() + 30
                while not (slow.parent / "pid").is_file() or not (slow.parent / "pid").read_text().strip():
                    assert time.monotonic() < deadline, "the build never started"
                    time.sleep(0.01)
                raise RlgenError("refused")
    finally:
        kustomize.command.cache_clear()
    pid = int((slow.parent / "pid").read_text())
    assert subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip() \
        in ("", "Z")


def test_a_patch_twin_marks_an_object_without_annotations_and_the_files_come_back(tmp_path, counted_builds):
    from rlgen.contributions import Layer, Patch

    component = (b"apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
                 b"  - path: p.yaml\n    target:\n      kind: ConfigMap\n")
    files = {
        "root/kustomization.yaml": KUSTOMIZATION + b"  - cm.yaml\ncomponents:\n  - ../components/demo/platform\n",
        "root/cm.yaml": configmap("plain"),
        "components/demo/platform/kustomization.yaml": component,
        "components/demo/platform/p.yaml": b"- op: add\n  path: /data/c\n  value: d\n",
        "overlays/production/runs/kustomization.yaml": KUSTOMIZATION.replace(b"resources:\n", b"resources: []\n"),
        "rlgen.yaml": b"plugins: {}\noptions: {}\n",
    }
    write(tmp_path, files)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    reaches = Patch(Layer.PLATFORM, {"kind": "ConfigMap"}, [], "p")
    refuse_failing(tmp_path, [], None, [("demo", [reaches])])
    assert (tmp_path / "components/demo/platform/kustomization.yaml").read_bytes() == component
    stray = Patch(Layer.PLATFORM, {"kind": "Deployment"}, [], "stray")
    with pytest.raises(RlgenError, match=r"plugin 'demo': patch 'stray' \(platform layer\) matches no object"):
        refuse_failing(tmp_path, [], None, [("demo", [stray])])
    assert (tmp_path / "components/demo/platform/kustomization.yaml").read_bytes() == component


def test_a_refusal_after_the_builds_started_leaves_nothing_beside_the_target(tmp_path):
    # The batch rules refuse in the training stage, after the platform's builds have started.
    from support.repos import REQUIRED, one_error_line, run_rlgen

    line = one_error_line(run_rlgen("new", str(tmp_path / "repo"), *REQUIRED, "--set", "rlgen.nnodes=3",
                                    "--no-input"))
    assert "the trainer config breaks a verl batch rule" in line
    assert list(tmp_path.iterdir()) == []
