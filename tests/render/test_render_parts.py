"""A root that only lists many others (runs/ lists the runs) is built in parts, several at a
time: the same objects as one build of it, the same refusals, nothing left behind."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from rlgen.errors import RlgenError
from rlgen.render import manifests, parts
from rlgen.tools import scratch
from rlgen.tools.yamlio import read_plain_all
from support.toolchain import tool

RUNS = 2 * parts.PART_SIZE + 3


def _tree(tmp_path: Path, runs: int = RUNS) -> Path:
    repo = tmp_path / "repo"
    names = [f"run-{n:03d}" for n in range(runs)]
    for name in names:
        folder = repo / "runs" / name
        folder.mkdir(parents=True)
        (folder / "kustomization.yaml").write_text(
            f"namePrefix: {name}-\nnamespace: training\nresources:\n  - job.yaml\n"
            f"configMapGenerator:\n  - name: config\n    literals:\n      - run={name}\n")
        (folder / "job.yaml").write_text("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\n"
                                         "spec:\n  template:\n    spec:\n      restartPolicy: Never\n"
                                         "      containers:\n        - name: main\n          image: busybox\n")
    (repo / "runs" / "kustomization.yaml").write_text("resources:\n" + "".join(f"  - {n}\n" for n in names))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _whole(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([tool("kustomize"), "build", str(root)], capture_output=True, text=True)


def _objects(docs) -> list:
    return sorted((str(d) for doc in docs for d in read_plain_all(doc)))


@pytest.fixture(autouse=True)
def _kustomize_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", f"{Path(tool('kustomize')).parent}{os.pathsep}{os.environ['PATH']}")
    # A temporary folder of this test's own: other tests' renders run meanwhile.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    manifests.kustomize.command.cache_clear()
    yield
    manifests.kustomize.command.cache_clear()


def _scratch_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob(parts.PREFIX + "*"))


def test_parts_render_what_one_build_renders(tmp_path, monkeypatch):
    repo = _tree(tmp_path)
    built = []
    real = manifests.kustomize.Builds.build
    monkeypatch.setattr(manifests.kustomize.Builds, "build", lambda self, root: built.append(root) or real(self, root))
    before = _scratch_folders()

    rendered = manifests.render({"repo": repo})["repo"]

    assert len(built) == RUNS // parts.PART_SIZE  # parts, not one build of runs/
    assert _objects(rendered["runs"]) == _objects([_whole(repo / "runs").stdout])
    assert len(rendered["runs"]) == 2 * RUNS
    # The same order each time: the parts in the root's order.
    assert manifests.render({"repo": repo})["repo"] == {"runs": rendered["runs"]}
    assert _scratch_folders() == before


def test_an_id_two_parts_share_is_refused_as_one_build_refuses_it(tmp_path):
    repo = _tree(tmp_path)
    last = repo / "runs" / f"run-{RUNS - 1:03d}" / "kustomization.yaml"
    last.write_text(last.read_text().replace(f"namePrefix: run-{RUNS - 1:03d}-", "namePrefix: run-000-"))
    whole = _whole(repo / "runs")
    assert whole.returncode != 0 and "already registered id" in whole.stderr

    with pytest.raises(RlgenError, match="may not add resource with an already registered id") as refused:
        manifests.render({"repo": repo})
    assert " ".join(whole.stderr.split()).replace(str(repo), ".") in str(refused.value)


def test_a_failing_part_gives_the_error_of_one_build(tmp_path):
    repo = _tree(tmp_path)
    broken = repo / "runs" / "run-030" / "kustomization.yaml"
    broken.write_text(broken.read_text().replace("job.yaml", "missing.yaml"))
    whole = _whole(repo / "runs")
    assert whole.returncode != 0

    with pytest.raises(RlgenError) as refused:
        manifests.render({"repo": repo})
    # Named as the root's own build names it: the run relative to runs/, no scratch folder.
    assert "'run-030'" in str(refused.value) and parts.PREFIX not in str(refused.value)
    assert " ".join(whole.stderr.split()).replace(str(repo), ".") in str(refused.value)


def test_few_children_are_one_build(tmp_path, monkeypatch):
    repo = _tree(tmp_path, runs=2 * parts.PART_SIZE - 1)
    built = []
    real = manifests.kustomize.Builds.build
    monkeypatch.setattr(manifests.kustomize.Builds, "build", lambda self, root: built.append(root) or real(self, root))
    manifests.render({"repo": repo})
    assert built == [repo / "runs"]


def test_partition_keeps_the_order_and_balances_the_parts():
    children = [f"runs/{n}" for n in range(2 * parts.PART_SIZE + 7)]
    found = parts.partition(children)
    assert [c for part in found for c in part] == children
    assert max(map(len, found)) - min(map(len, found)) <= 1
    assert parts.partition(children[: 2 * parts.PART_SIZE - 1]) == []


def test_a_killed_commands_scratch_folder_is_removed_by_the_next(tmp_path):
    left = Path(tempfile.mkdtemp(prefix=parts.PREFIX))
    (left / scratch.OWNER).write_text("")  # its lock died with its command
    foreign = Path(tempfile.mkdtemp(prefix=parts.PREFIX))  # no lock file: not one of ours
    try:
        with scratch.held_folder(parts.PREFIX) as held:
            assert held.is_dir()  # its command runs
        # The folder's own clean-up ran beside it (an explicit one meanwhile would race it).
        assert not left.exists() and not held.exists() and foreign.exists()
        assert scratch.remove_abandoned(parts.PREFIX) == [foreign]
    finally:
        for folder in (left, foreign):
            shutil.rmtree(folder, ignore_errors=True)


def test_the_parts_of_a_killed_render_are_removed_by_the_next(tmp_path):
    import signal
    import sys
    import time

    repo = _tree(tmp_path, runs=8 * parts.PART_SIZE)
    before = _scratch_folders()
    script = f"from pathlib import Path\nfrom rlgen.render import manifests\nmanifests.render({{'repo': Path({str(repo)!r})}})\n"
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (_scratch_folders() - before) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        left = _scratch_folders() - before
        assert left, "the render ended before its parts were written"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # kustomize too: nothing of the command runs on
        proc.wait()
    # Until the last of its processes is gone: one forked to start a build shares the lock.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    assert all(folder.exists() for folder in left)

    manifests.render({"repo": repo})
    assert not any(folder.exists() for folder in left)
    assert _scratch_folders() == before


def test_each_part_is_handed_over_as_it_is_built(tmp_path):
    repo = _tree(tmp_path)
    handed, whole = {}, []
    rendered = manifests.render({"repo": repo}, on_source=lambda *a: whole.append(a[1]),
                                on_part=lambda label, source, k, docs: handed.setdefault(source, {}).update({k: docs}))
    assert sorted(handed["runs"]) == list(range(RUNS // parts.PART_SIZE))
    assert [d for k in sorted(handed["runs"]) for d in handed["runs"][k]] == rendered["repo"]["runs"]
    assert "runs" not in whole  # handed over once, in parts


def test_ids_alike_only_once_cut_are_built_whole_and_kept_in_parts(tmp_path, monkeypatch):
    """A ConfigMap named like another's generated name (``run-000-config`` and a hash-like
    suffix) in another part: kustomize tells them apart, the look across parts cannot, so the
    whole root is built to know, and the render is the parts."""
    repo = _tree(tmp_path)
    last = repo / "runs" / f"run-{RUNS - 1:03d}"
    (last / "extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-5bcdfghkmt\ndata:\n  k: v\n")
    (last / "kustomization.yaml").write_text("namePrefix: run-000-\nnamespace: training\nresources:\n  - extra.yaml\n")
    assert _whole(repo / "runs").returncode == 0
    built = []
    real = manifests.kustomize.Builds.build
    monkeypatch.setattr(manifests.kustomize.Builds, "build", lambda self, root: built.append(root) or real(self, root))

    rendered = manifests.render({"repo": repo})["repo"]["runs"]

    assert repo / "runs" in built  # the whole root, to know
    assert _objects(rendered) == _objects([_whole(repo / "runs").stdout])
