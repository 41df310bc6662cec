"""rlgen render of a whole repository: every root and the sync engine's entry points."""
from __future__ import annotations

from ruamel.yaml import YAML
from support.repos import ok, rlgen_in


def test_render_out_writes_the_roots_and_the_sync_entry_points(repo):
    ok(rlgen_in(repo, "render", ".", "--out", "rendered"))
    written = {p.name for p in (repo / "rendered").iterdir()}
    assert {"runs.yaml", "overlays__production__platform.yaml"} <= written
    platform = repo / "rendered" / "clusters__production__platform.yaml"
    kinds = {d["kind"] for d in YAML(typ="safe").load_all(platform.read_text()) if d}
    assert "Kustomization" in kinds  # what Flux applies first, as committed


def test_render_to_stdout_names_each_entry_point(repo):
    out = ok(rlgen_in(repo, "render", "."))
    assert "# Source: clusters/production/platform\n" in out and "# Source: runs\n" in out
