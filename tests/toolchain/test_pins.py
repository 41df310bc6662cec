"""One version per upstream tool: toolchain/*/go.mod, docs/toolchain.md and the generated workflows agree."""
from __future__ import annotations

import re

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
            owner = max((p for p in module.requires if tool == p or tool.startswith(p + "/")), key=len)
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
    assert build.stamp(module, "go1.26.8") != build.stamp(module, "go1.27.0")
    assert not build.is_current(module, "go1.26.8")
