"""rlgen render of a whole repository: every root and the sync engine's entry points."""
from __future__ import annotations

from ruamel.yaml import YAML
from support.repos import ok, rlgen_in


def test_render_out_writes_the_roots_and_the_sync_entry_points(repo):
    ok(rlgen_in(repo, "render", ".", "--out", "rendered"))
    written = {p.name for p in (repo / "rendered").iterdir()}
    assert {"overlays__production__runs.yaml", "overlays__production__platform.yaml"} <= written
    platform = repo / "rendered" / "clusters__production__platform.yaml"
    kinds = {d["kind"] for d in YAML(typ="safe").load_all(platform.read_text()) if d}
    assert "Kustomization" in kinds  # what Flux applies first, as committed


def test_render_to_stdout_names_each_entry_point(repo):
    out = ok(rlgen_in(repo, "render", "."))
    assert "# Source: clusters/production/platform\n" in out and "# Source: overlays/production/runs\n" in out


def test_render_json_and_table_carry_the_objects_of_every_source(repo):
    import json

    yaml_out = ok(rlgen_in(repo, "render", "overlays/production/runs"))
    expected = [d for d in YAML(typ="safe").load_all(yaml_out) if d]
    doc = json.loads(ok(rlgen_in(repo, "render", "overlays/production/runs", "-o", "json")))
    # A runs folder without kustomization file: each run's folder in it is a root of its own.
    assert [s["source"] for s in doc["sources"]] == ["baseline"] and doc["sources"][0]["file"] is None
    assert doc["sources"][0]["objects"] == expected
    table = ok(rlgen_in(repo, "render", "overlays/production/runs", "-o", "table")).splitlines()
    assert table[0].split() == ["SOURCE", "KIND", "NAMESPACE", "NAME", "FILE"]
    rayjob = next(o for o in expected if o["kind"] == "RayJob")
    assert any(line.split()[1:4] == ["RayJob", rayjob["metadata"]["namespace"], rayjob["metadata"]["name"]]
               for line in table[1:])
    assert len(table) == 1 + len(expected)


def test_render_out_with_json_names_each_file_written(repo):
    import json

    doc = json.loads(ok(rlgen_in(repo, "render", ".", "--out", "rendered", "-o", "json")))
    files = {s["source"]: s["file"] for s in doc["sources"]}
    runs = files["overlays/production/runs"]
    assert runs == "rendered/overlays__production__runs.yaml" and (repo / runs).is_file()
    assert {(repo / f).name for f in files.values()} == {p.name for p in (repo / "rendered").iterdir()}
