"""One version per upstream tool: toolchain/*/go.mod, docs/toolchain.md and the generated workflows agree."""
from __future__ import annotations

import re
import shutil

import pytest
from support.toolchain import PROJECT, build


def table() -> dict[str, str]:
    """docs/toolchain.md: Go module -> version."""
    rows = {}
    for line in (PROJECT / "docs" / "toolchain.md").read_text().splitlines():
        cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"v\d+\.\d+\.\d+", cells[1]):
            rows[cells[2]] = cells[1]
    return rows


def pinned() -> dict[str, str]:
    """go.mod of every consumer module: the module of each tool -> the version required."""
    found = {}
    for module in build.modules():
        for tool in module.tools:
            # A command of the folder's own (toolchain/argocd) is named for the module it runs.
            source = build.WRAPS.get(module.name, tool)
            owner = max((p for p in module.requires if source == p or source.startswith(p + "/")), key=len)
            found[owner] = build.module_version(module, tool)
    return found


def test_every_tool_is_in_the_table_at_its_pinned_version():
    assert table() == pinned()


def test_the_generated_ci_installs_the_versions_the_tests_run(generate):
    workflows = "".join(p.read_text() for p in (generate() / ".github" / "workflows").glob("*.yaml"))
    versions = dict(re.findall(r"(KUSTOMIZE|KUBECONFORM)_VERSION: \"?([0-9.]+)", workflows))
    assert "v" + versions["KUSTOMIZE"] == pinned()["sigs.k8s.io/kustomize/kustomize/v5"]
    assert "v" + versions["KUBECONFORM"] == pinned()["github.com/yannh/kubeconform"]
    # The crane the images workflow installs is the one the tests run images/build.sh with.
    assert re.search(r"CRANE_VERSION: (v[0-9.]+)", workflows)[1] == pinned()["github.com/google/go-containerregistry"]
    # What rlgen names when it falls back to kubectl's kustomize.
    from rlgen.tools import kustomize

    assert "v" + kustomize.PINNED == pinned()["sigs.k8s.io/kustomize/kustomize/v5"]


def test_a_build_is_keyed_by_everything_that_shapes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RLGEN_TOOLCHAIN_CACHE", str(tmp_path))
    module = next(m for m in build.modules() if m.name == "kubeconform")
    assert build.destination(module) == tmp_path / "kubeconform-v0.8.0"
    stamps = set()
    for go in ("go1.26.8", "go1.27.0"):
        monkeypatch.setattr(build, "go_version", lambda _module, go=go: go)
        stamps.add(build.stamp(module))
    assert len(stamps) == 2
    assert not build.is_current(module)


def test_argo_cd_is_built_with_the_go_that_gotoolchain_names_and_only_it(monkeypatch, capsys):
    """Argo CD 3.6 needs Go 1.27: its folder takes $GOTOOLCHAIN, every other folder keeps the
    machine's Go (their builds stay cached), and without the export the build stops with the fix."""
    argocd = next(m for m in build.modules() if m.name == "argocd")
    kubeconform = next(m for m in build.modules() if m.name == "kubeconform")
    monkeypatch.setattr(build, "local_go", lambda: "go1.26.8")
    monkeypatch.setenv("GOTOOLCHAIN", "go1.27.3")
    assert build.go_env(argocd)["GOTOOLCHAIN"] == "go1.27.3" and build.go_version(argocd) == "go1.27.3"
    assert build.go_env(kubeconform)["GOTOOLCHAIN"] == "local" and build.go_version(kubeconform) == "go1.26.8"
    monkeypatch.delenv("GOTOOLCHAIN")
    with pytest.raises(SystemExit) as exit:
        build.go_env(argocd)
    assert exit.value.code == 2
    assert "export GOTOOLCHAIN=go1.27.3" in capsys.readouterr().err


def test_a_folders_own_main_package_keys_its_build(tmp_path, monkeypatch):
    monkeypatch.setenv("GOTOOLCHAIN", "go1.27.3")
    folder = tmp_path / "argocd"
    shutil.copytree(PROJECT / "toolchain" / "argocd", folder)
    module = build.read_module(folder)
    assert module.version == build.read_module(PROJECT / "toolchain" / "argocd").requires[build.WRAPS["argocd"]]
    assert module.binaries() == ["argocd"]
    before = build.stamp(module)
    main = folder / "argocd" / "main.go"
    main.write_text(main.read_text() + "\n")
    assert build.stamp(module) != before
