"""CRD to JSON schema conversion, checked against the schemas kubeconform's own
converter made from the same CRDs (shared/crds -> shared/schemas/crds)."""
from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from rlgen.errors import RlgenError
from rlgen.schemas.command import command as schemas_command
from rlgen.schemas.convert import import_crds
from rlgen.validate.schema import SchemaValidator, schema_dir_locations

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CRDS = sorted((SHARED / "crds").glob("*.yaml"))
SCHEMAS = Path(os.environ.get("RLGEN_SCHEMA_DIR") or SHARED / "schemas")


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, list[Path]]:
    """shared/crds converted into a folder laid out like shared/schemas."""
    root = tmp_path_factory.mktemp("schemas")
    return root, import_crds(CRDS, root / "crds")


def test_one_schema_per_served_version_in_the_group_folder(imported):
    root, written = imported
    assert sorted(written) == [
        root / "crds/agents.kruise.io/sandboxset_v1alpha1.json",
        root / "crds/ray.io/rayjob_v1.json",
        root / "crds/ray.io/rayjob_v1alpha1.json",
    ]


@pytest.mark.parametrize("name", ["ray.io/rayjob_v1.json", "agents.kruise.io/sandboxset_v1alpha1.json"])
def test_same_json_as_kubeconforms_converter(imported, name):
    # Byte-identical: both files in shared/schemas came from kubeconform's
    # openapi2jsonschema.py, and these CRDs have no node where rlgen's one deviation
    # (x-kubernetes-preserve-unknown-fields with properties stays open) applies.
    root, _ = imported
    assert (root / "crds" / name).read_text() == (SCHEMAS / "crds" / name).read_text()


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
def ours_and_shared(imported) -> tuple[SchemaValidator, SchemaValidator]:
    root, _ = imported
    return SchemaValidator(schema_dir_locations(root)), SchemaValidator(schema_dir_locations(SCHEMAS))


@pytest.mark.parametrize("case", CASES)
def test_same_verdict_as_the_shared_schemas(ours_and_shared, case):
    obj, valid = CASES[case]
    ours, shared = (validator.validate(obj) for validator in ours_and_shared)
    assert (ours == [], shared == []) == (valid, valid), (ours, shared)


def test_older_served_version_gets_its_own_schema(ours_and_shared):
    validator, _ = ours_and_shared
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


def test_shipped_schemas_equal_a_fresh_conversion(tmp_path):
    """rlgen new copies the shipped schemas; they must be exactly what import_crds makes."""
    from rlgen.schemas.convert import bundled_schemas, import_crds

    crds = Path(__file__).resolve().parents[2].parent / "shared" / "crds"
    written = import_crds(sorted(crds.glob("*.yaml")), tmp_path)
    fresh = {p.relative_to(tmp_path).as_posix(): p.read_text() for p in written}
    assert bundled_schemas() == fresh
