"""CRD to JSON schema conversion of the pinned upstream CRDs (upstream/crds), checked against
what kubeconform's own converter makes of them, and the shipped catalog against a fresh
conversion."""
from __future__ import annotations

import copy
import hashlib
import shutil
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from rlgen.errors import RlgenError
from rlgen.commands.schemas import command as schemas_command
from rlgen.schemas.convert import import_crds
from rlgen.validate.schema import SchemaValidator, schema_dir_locations

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO / "upstream" / "crds"
CRDS = [UPSTREAM / "ray.io_rayjobs.yaml", UPSTREAM / "agents.kruise.io_sandboxsets.yaml"]
# yannh/kubeconform scripts/openapi2jsonschema.py (commit e65429b1e5990dd019ebb7b5642dcd22a3e9cd13,
# default settings) run on upstream/crds/agents.kruise.io_sandboxsets.yaml; the same file is
# agents.kruise.io/sandboxset_v1alpha1.json of the datreeio/CRDs-catalog layout.
KUBECONFORM_SANDBOXSET = Path(__file__).parent / "data" / "sandboxset_v1alpha1.kubeconform.json"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, list[Path]]:
    """The RayJob and SandboxSet CRDs converted into a folder laid out like rlgen's catalog."""
    root = tmp_path_factory.mktemp("schemas")
    return root, import_crds(CRDS, root / "crds")


def test_one_schema_per_served_version_in_the_group_folder(imported):
    root, written = imported
    assert sorted(written) == [
        root / "crds/agents.kruise.io/sandboxset_v1alpha1.json",
        root / "crds/ray.io/rayjob_v1.json",
        root / "crds/ray.io/rayjob_v1alpha1.json",
    ]


def test_same_json_as_kubeconforms_converter(imported):
    # Byte-identical: this CRD has no node where rlgen's one deviation
    # (x-kubernetes-preserve-unknown-fields with properties stays open) applies.
    root, _ = imported
    assert (root / "crds/agents.kruise.io/sandboxset_v1alpha1.json").read_text() == KUBECONFORM_SANDBOXSET.read_text()


def test_compact_output_is_the_same_schema(imported, tmp_path):
    root, _ = imported
    written = import_crds([UPSTREAM / "agents.kruise.io_sandboxsets.yaml"], tmp_path, compact=True)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == ["agents.kruise.io/sandboxset_v1alpha1.json"]
    text = written[0].read_text()
    assert "\n" not in text.rstrip("\n") and len(text) < 0.8 * KUBECONFORM_SANDBOXSET.stat().st_size
    assert json.loads(text) == json.loads(KUBECONFORM_SANDBOXSET.read_text())


RAYJOB = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": {"name": "verl-gsm8k"},
    "spec": {
        "entrypoint": "python3 -m verl.trainer.main_ppo",
        "shutdownAfterJobFinishes": True,
        "rayClusterSpec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "head", "image": "verlai/verl"}]}},
            }
        },
    },
}
SANDBOXSET = {
    "apiVersion": "agents.kruise.io/v1alpha1",
    "kind": "SandboxSet",
    "metadata": {"name": "code-sandbox"},
    # spec.template keeps unknown fields (x-kubernetes-preserve-unknown-fields), so
    # anything goes inside it.
    "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "s", "image": "i"}]}, "anything": 1}},
}


def changed(obj: dict, path: str, value) -> dict:
    """A copy of ``obj`` with the dotted ``path`` set to ``value`` (None deletes it)."""
    obj = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = obj
    for key in parents:
        node = node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return obj


CASES = {
    "valid RayJob": (RAYJOB, True),
    "unknown spec field": (changed(RAYJOB, "spec.entrypointt", "x"), False),
    "unknown nested field": (changed(RAYJOB, "spec.rayClusterSpec.headGroupSpec.rayStartParam", {}), False),
    "unknown field in a container": (
        changed(RAYJOB, "spec.rayClusterSpec.headGroupSpec.template.spec.containers", [{"name": "h", "imag": "i"}]),
        False,
    ),
    "wrong type": (changed(RAYJOB, "spec.shutdownAfterJobFinishes", "yes"), False),
    "missing required field": (changed(RAYJOB, "spec.rayClusterSpec.headGroupSpec.template", None), False),
    # The root is left open, as kubeconform's converter does by default.
    "unknown root field": (changed(RAYJOB, "extra", 1), True),
    "valid SandboxSet with free-form template": (SANDBOXSET, True),
    "SandboxSet replicas as text": (changed(SANDBOXSET, "spec.replicas", "two"), False),
    "SandboxSet without replicas": (changed(SANDBOXSET, "spec.replicas", None), False),
    "SandboxSet unknown spec field": (changed(SANDBOXSET, "spec.pauseStrategy", {}), False),
}


@pytest.fixture(scope="module")
def converted(imported) -> SchemaValidator:
    root, _ = imported
    return SchemaValidator(schema_dir_locations(root))


@pytest.mark.parametrize("case", CASES)
def test_verdicts_of_the_converted_schemas(converted, case):
    obj, valid = CASES[case]
    problems = converted.validate(obj)
    assert (problems == []) == valid, problems


def test_older_served_version_gets_its_own_schema(converted):
    validator = converted
    assert validator.validate({**RAYJOB, "apiVersion": "ray.io/v1alpha1"}) == []
    assert validator.validate(changed({**RAYJOB, "apiVersion": "ray.io/v1alpha1"}, "spec.typo", 1)) == [
        "$.spec.typo: unknown field"
    ]


WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                port: {format: int-or-string}
                labels: {type: object, additionalProperties: {type: string}}
                extra:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
                  properties: {known: {type: string}}
    - name: v0
      served: false
      storage: false
      schema: {openAPIV3Schema: {type: object}}
"""


@pytest.fixture
def widget_schemas(tmp_path) -> tuple[SchemaValidator, list[Path]]:
    crd = tmp_path / "widgets.yaml"
    crd.write_text(WIDGET_CRD)
    written = import_crds([crd], tmp_path / "schemas" / "crds")
    return SchemaValidator(schema_dir_locations(tmp_path / "schemas")), written


def test_only_served_versions_are_converted(widget_schemas, tmp_path):
    _, written = widget_schemas
    assert written == [tmp_path / "schemas/crds/example.com/widget_v1.json"]


@pytest.mark.parametrize(
    "spec, problems",
    [
        ({"port": 8080}, []),
        ({"port": "50%"}, []),
        ({"port": [80]}, ["$.spec.port: [80] is not valid under any of the given schemas"]),
        # An explicit additionalProperties (a map of strings) is kept.
        ({"labels": {"team": "rl"}}, []),
        ({"labels": {"team": 1}}, ["$.spec.labels.team: 1 is not of type 'string'"]),
        # The API server keeps unknown fields under x-kubernetes-preserve-unknown-fields.
        ({"extra": {"known": "a", "free": {"form": 1}}}, []),
        ({"prot": 80}, ["$.spec.prot: unknown field"]),
    ],
)
def test_int_or_string_maps_and_preserved_fields(widget_schemas, spec, problems):
    validator, _ = widget_schemas
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}
    assert validator.validate(widget) == problems


def test_crds_inside_a_list_as_kubectl_prints_them(tmp_path):
    listing = tmp_path / "crds.yaml"
    listing.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [yaml.safe_load(WIDGET_CRD)]}))
    assert import_crds([listing], tmp_path / "out") == [tmp_path / "out/example.com/widget_v1.json"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no CustomResourceDefinition in this file"),
        ("kind: CustomResourceDefinition\nspec: [\n", "not valid YAML"),
        (WIDGET_CRD.replace("group: example.com", "group: ../../escape"), "has an invalid group, kind or version"),
        (WIDGET_CRD.replace("  group: example.com\n", ""), "CustomResourceDefinition widgets.example.com lacks 'group'"),
        (WIDGET_CRD.replace("openAPIV3Schema:\n", "openAPI:\n"), "has no openAPIV3Schema for version v1"),
    ],
)
def test_bad_input_is_one_line_error_naming_the_file_and_nothing_is_written(tmp_path, content, message):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(WIDGET_CRD)
    bad.write_text(content)
    with pytest.raises(RlgenError) as raised:
        import_crds([good, bad], tmp_path / "out")
    assert str(raised.value).startswith(f"{bad}: ")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "out").exists() and not (tmp_path / "escape").exists()


def test_unreadable_file_is_an_error(tmp_path):
    with pytest.raises(RlgenError, match=r"missing\.yaml: cannot read: No such file or directory"):
        import_crds([tmp_path / "missing.yaml"], tmp_path / "out")


def test_schemas_import_command_lists_the_files_written(tmp_path):
    crd = tmp_path / "widgets.yaml"
    crd.write_text(WIDGET_CRD)
    result = CliRunner().invoke(schemas_command, ["import", str(crd), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [str(tmp_path / "out/example.com/widget_v1.json")]


def test_schemas_import_command_raises_rlgen_error_for_a_non_crd(tmp_path):
    configmap = tmp_path / "cm.yaml"
    configmap.write_text("apiVersion: v1\nkind: ConfigMap\n")
    result = CliRunner().invoke(schemas_command, ["import", str(configmap), "--out", str(tmp_path / "out")])
    assert isinstance(result.exception, RlgenError)
    assert result.exception.exit_code == 2


def test_shipped_catalog_equals_a_fresh_conversion_of_the_pinned_crds():
    """scripts/update_schemas.py --check converts upstream/crds with `rlgen schemas import`
    (after checking each file's sha256) and compares with every file of the catalog."""
    result = subprocess.run([sys.executable, "scripts/update_schemas.py", "--check"], cwd=REPO,
                            capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize("change", ["edit", "extra"])
def test_a_drifted_catalog_is_named(tmp_path, change):
    catalog = tmp_path / "generator/rlgen/schemas/catalog"
    shutil.copytree(REPO / "generator/rlgen/schemas/catalog", catalog)
    shutil.copytree(UPSTREAM, tmp_path / "upstream/crds")
    if change == "edit":
        target = catalog / "crds/ray.io/rayjob_v1.json"
        target.write_text(target.read_text().replace('"entrypoint":', '"entrypointt":', 1))
    else:
        target = catalog / "crds/ray.io/rayjob_v1alpha1.json"
        target.write_text("{}\n")
    result = subprocess.run([sys.executable, REPO / "scripts/update_schemas.py", "--check", "--root", tmp_path],
                            capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert result.stdout == f"{target}: differs from a fresh conversion (run make schemas)\n"


def test_every_shipped_schema_has_its_source_recorded():
    from rlgen.schemas.shipped import CATALOG

    sources = json.loads((CATALOG / "SOURCES.json").read_text())
    files = sorted(p.relative_to(CATALOG).as_posix() for p in CATALOG.rglob("*.json") if p.name != "SOURCES.json")
    assert sorted(sources) == files
    for name, entry in sources.items():
        assert {"url", "version", "sha256", "made"} <= set(entry), name
        assert hashlib.sha256((CATALOG / name).read_bytes()).hexdigest() == entry["sha256"], name
    manifest = json.loads((UPSTREAM / "MANIFEST.json").read_text())["files"]
    for entry in manifest:
        assert hashlib.sha256((UPSTREAM / entry["file"]).read_bytes()).hexdigest() == entry["sha256"], entry["file"]
