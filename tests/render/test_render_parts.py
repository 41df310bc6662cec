"""runs/ of many runs is built in parts, several at a time: what rlgen reads is byte for byte
what one build of runs/ writes, and a failure reads as that build's."""
from __future__ import annotations

import json
import os
import subprocess

from support.counting import builds, counting_kustomize
from support.repos import rlgen_in, schema_dir
from support.toolchain import tool

from rlgen.render import manifests, parts


def add_runs(repo, count: int) -> list[str]:
    """``count`` copies of the first run, named and pinned as ``rlgen run new`` would."""
    from rlgen.generate import run_folders
    from rlgen.generate.kustomizations import run_kustomization
    from rlgen.repo import naming_scheme
    from rlgen.repo.workspace import open_workspace

    first = next(p for p in sorted((repo / "runs").iterdir()) if p.is_dir())
    spec = open_workspace(repo).spec
    names = [first.name]
    for i in range(count):
        name = f"copy-{i:02d}"
        (repo / "runs" / name).mkdir()
        (repo / "runs" / name / "run.yaml").write_text((first / "run.yaml").read_text().replace(first.name, name))
        (repo / "runs" / name / "kustomization.yaml").write_text(
            run_kustomization(spec, name, run_folders.inputs_name(repo, spec, name), naming_scheme.INPUTS))
        names.append(name)
    index = repo / "runs" / "kustomization.yaml"
    head, _, _ = index.read_text().partition("resources:")
    index.write_text(head + "resources:\n" + "".join(f"  - {n}\n" for n in sorted(names)))
    return names


def test_many_runs_are_built_in_parts_and_read_as_one_build(repo, tmp_path, monkeypatch):
    kustomize = tool("kustomize")
    add_runs(repo, 2 * parts.PART_MIN + 3)
    env, log = counting_kustomize(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    manifests.kustomize.command.cache_clear()
    try:
        rendered = manifests.render({"repo": repo})["repo"]
    finally:
        manifests.kustomize.command.cache_clear()
    built = builds(log)
    assert sum("rlgen-parts-" in b for b in built) == 2 and not any(b.endswith("/runs") for b in built), built
    whole = subprocess.run([kustomize, "build", str(repo / "runs")], capture_output=True, text=True, check=True)
    assert "---\n".join(rendered["runs"]) == whole.stdout

    # validate reads the same objects and finds the same as when runs/ is built whole.
    check_env = {**os.environ, "RLGEN_SCHEMA_DIR": str(schema_dir())}
    report = json.loads(rlgen_in(repo, "validate", "--output", "json", env=check_env).stdout)
    assert report["checked"] == sum(len(docs) for docs in rendered.values())


def test_a_run_that_fails_in_its_part_fails_as_the_whole_build_does(repo, tmp_path):
    kustomize = tool("kustomize")
    names = add_runs(repo, 2 * parts.PART_MIN + 3)
    broken = repo / "runs" / names[-1] / "kustomization.yaml"
    broken.write_text(broken.read_text() + "patches:\n  - path: missing-patch.yaml\n")
    env, log = counting_kustomize(tmp_path)
    env = {**os.environ, **env, "RLGEN_SCHEMA_DIR": str(schema_dir())}
    result = rlgen_in(repo, "validate", "--output", "json", env=env)
    assert result.returncode == 2, result.stderr
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1 and "rlgen-parts-" not in error, error
    assert "kustomize failed on ./runs" in error and "missing-patch.yaml" in error, error
    assert any(b.endswith("/runs") for b in builds(log))
    whole = subprocess.run([kustomize, "build", str(repo / "runs")], capture_output=True, text=True)
    assert whole.returncode != 0 and "missing-patch.yaml" in whole.stderr


def test_parts_with_one_object_id_twice_are_not_joined():
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n  namespace: rl\n"
    ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: rl\n"
    assert parts.join([cm, cm]) is None
    # Distinct ids: sorted as kustomize sorts (Namespace first), whichever part held them.
    assert parts.join([cm, ns]) == f"{ns}---\n{cm}"
