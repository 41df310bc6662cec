"""The real kubeconform (built from source at the pinned version) and rlgen's own validator find
the same problems, object by object: on every object of the 32 plugin combinations and on planted
faults, read from the locations ``rlgen validate --offline`` uses (rlgen's catalog, then the
repository's schemas/). ``rlgen validate`` prefers kubeconform when it is on PATH, so a user must
get the same verdict either way; where the two engines once differed, docs/upstream.md says which
was right ("kubeconform and rlgen's validator")."""
from __future__ import annotations

import collections
import copy
import json
import os
import shutil
from pathlib import Path

import pytest
from rlgen.tools import yamlio
from rlgen.validate.schema_findings import schema_findings
from rlgen.validate.repository import collect
from rlgen.validate.locations import default_locations
from rlgen.validate.paths import MISSING, UNKNOWN, path_of
from rlgen.rules import Rendered
from rlgen.validate.schema import SchemaValidator
from support.combinations import COMBOS, args_for
from support.engines import without_kubeconform
from support.repos import run_rlgen
from support.toolchain import tool

ARGO = ("--plugin", "argo")


@pytest.fixture
def kubeconform(monkeypatch) -> Path:
    """The pinned kubeconform, first on PATH, where ``rlgen validate`` looks for it."""
    binary = Path(tool("kubeconform"))
    monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
    return binary


def shape(message: str) -> tuple[str | None, str | None]:
    """What both engines must agree on: the JSON path, and the message where rlgen words it
    itself (unknown and missing fields); the rest of a message is each engine's own."""
    path = path_of(message)
    rest = message[len(path) + 2:] if path else None
    return path, rest if rest in (UNKNOWN, MISSING) else None


def problems_by_engine(repo: Path, objects: list[Rendered], scratch: Path) -> tuple[dict, dict]:
    """(jsonschema, kubeconform): per failing object, its problems as a multiset of shapes."""
    located = default_locations(repo, offline=True)
    cache = scratch / "cache"
    validator = SchemaValidator([t for _, t in located], cache_dir=cache, offline=True)
    engine, findings = schema_findings(objects, validator, located, cache, offline=True)
    assert engine == "kubeconform"
    by_kubeconform = collections.defaultdict(collections.Counter)
    for f in findings:
        by_kubeconform[(f.source, f.obj)][shape(f.message)] += 1
    by_jsonschema = collections.defaultdict(collections.Counter)
    for o in objects:
        for message in validator.validate(o.obj):
            by_jsonschema[(o.source, o.label)][shape(message)] += 1
    return dict(by_jsonschema), dict(by_kubeconform)


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: "+".join(p[0] for p in c))
def test_every_object_of_every_combination(generate, kubeconform, tmp_path, record_property, combo):
    repo = generate(*args_for(combo))
    objects = collect(repo)
    by_jsonschema, by_kubeconform = problems_by_engine(repo, objects, tmp_path)
    assert by_kubeconform == by_jsonschema == {}
    # Summed over the run by tests/conftest.py.
    record_property("kubeconform_parity_combinations", len(objects))


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: mlflow, namespace: mlops}
spec:
  replicas: 1
  selector: {matchLabels: {app: mlflow}}
  template:
    metadata: {labels: {app: mlflow}}
    spec:
      containers:
        - name: mlflow
          image: ghcr.io/mlflow/mlflow:v3.1.0
          ports: [{containerPort: 5000}]
          resources: {limits: {cpu: "1", memory: 2Gi}}
"""
CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata: {name: switches, namespace: rl-training}
"""
# A kind of the user's own, its schema in the repository's schemas/ (no draft declared: draft 4,
# where kubeconform asserts "format"; "duration" is kubeconform's own format).
WIDGET_SCHEMA = {
    "type": "object",
    "properties": {"spec": {"type": "object", "additionalProperties": False, "properties": {
        name: {"type": "string", "format": fmt} for name, fmt in [
            ("interval", "duration"), ("every", "duration"), ("wait", "duration"), ("pause", "duration"),
            ("address", "ipv4"), ("peer", "ipv4"), ("owner", "idn-email"), ("since", "date-time")]}}},
}
WIDGET = """
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: rl-training}
"""


def first(objects: list[Rendered], kind: str) -> Rendered:
    return next(o for o in objects if o.obj["kind"] == kind)


def inline(text: str) -> Rendered:
    return Rendered("planted.yaml", yamlio.read_manifests_all(text)[0])


def containers(rayjob: dict) -> list[dict]:
    return rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]


def condition(when: str) -> dict:
    return {"conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                            "message": "", "lastTransitionTime": when}]}


def _unknown_rayjob(o):
    o["spec"].update(entrypointt="python3 main.py", suspnd=True)
    o["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParam"] = {}


def _missing_in_rayjob(o):
    group = o["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    del group["groupName"], group["maxReplicas"]


def _two_under_one_field(o):
    # santhosh-tekuri groups these under .../limits, which kubeconform's validationErrors
    # report as one "validation failed" at /spec.
    containers(o)[0]["resources"]["limits"].update({"cpu": "lots", "nvidia.com/gpu": True})


def _rayjob_times(o):
    # Valid to kubeconform: a leap second at 23:59 UTC, a lower-case t, an offset.
    o["status"] = {"startTime": "2016-12-31T23:59:60Z", "jobStatusCheckFailureStartTime": "2024-01-01t10:00:00+01:00",
                   "endTime": "2024-02-30T00:00:00Z"}


# (name, repository, kind or inline object, how to break it, the paths of the problems expected).
CASES = [
    ("unknown field in a Flux Kustomization", (), "Kustomization",
     lambda o: o["spec"].update(specc=True), ["$.spec.specc"]),
    ("unknown field in an Argo CD Application", ARGO, "Application",
     lambda o: o["spec"]["source"].update(targetRevisio="main"), ["$.spec.source.targetRevisio"]),
    ("unknown fields in a RayJob", (), "RayJob", _unknown_rayjob,
     ["$.spec.entrypointt", "$.spec.suspnd", "$.spec.rayClusterSpec.headGroupSpec.rayStartParam"]),
    ("unknown field in a Deployment", (), DEPLOYMENT,
     lambda o: o["spec"]["template"]["spec"]["containers"][0].update(imagePullPolicyy="Always"),
     ["$.spec.template.spec.containers[0].imagePullPolicyy"]),
    ("wrong type", (), "RayJob", lambda o: o["spec"].update(shutdownAfterJobFinishes="yes", ttlSecondsAfterFinished="1h"),
     ["$.spec.shutdownAfterJobFinishes", "$.spec.ttlSecondsAfterFinished"]),
    ("wrong type in a core kind", (), DEPLOYMENT, lambda o: o["spec"].update(replicas="3"), ["$.spec.replicas"]),
    ("missing required field", (), "Kustomization", lambda o: o["spec"]["sourceRef"].pop("name"),
     ["$.spec.sourceRef.name"]),
    ("missing required fields of one object", (), "RayJob", _missing_in_rayjob,
     ["$.spec.rayClusterSpec.workerGroupSpecs[0].groupName", "$.spec.rayClusterSpec.workerGroupSpecs[0].maxReplicas"]),
    ("enum violation", (), "Kustomization", lambda o: o["spec"]["sourceRef"].update(kind="GitRepo"),
     ["$.spec.sourceRef.kind"]),
    # kubeconform stops at the first failing of type, const, enum, format: one problem.
    ("enum violation of the wrong type", (), "Kustomization", lambda o: o["spec"]["sourceRef"].update(kind=5),
     ["$.spec.sourceRef.kind"]),
    ("bad date-time in a CRD", (), "Kustomization", lambda o: o.update(status=condition("yesterday")),
     ["$.status.conditions[0].lastTransitionTime"]),
    ("date-times as kubeconform reads them", (), "RayJob", _rayjob_times, ["$.status.endTime"]),
    # The core schemas declare the latest draft, where "format" is only a note.
    ("format not asserted in a core kind", (), DEPLOYMENT,
     lambda o: o["metadata"].update(creationTimestamp="yesterday"), []),
    ("several problems under one field", (), "RayJob", _two_under_one_field,
     ["$.spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].resources.limits.cpu",
      '$.spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]']),
    ("unknown apiVersion", (), "RayJob", lambda o: o.update(apiVersion="ray.io/v2"), [None]),
    ("unknown kind", ARGO, "Application", lambda o: o.update(kind="Applicaton"), [None]),
    ("no kind", (), "Kustomization", lambda o: o.pop("kind"), [None]),
    # YAML and JSON numbers: kubeconform sees a float64 either way and takes 1.0 as an integer.
    ("whole number written 1.0", (), "RayJob", lambda o: o["spec"].update(backoffLimit=1.0), []),
    # A YAML 1.1 reader (kubeconform's) takes these keys for booleans, "y" and "yes" for the same.
    ("keys YAML 1.1 reads as booleans", (), CONFIGMAP,
     lambda o: o.update(data={"y": "1", "yes": "2", "on": "3", "n": "4"}), []),
    ("formats of a schema in the repository's schemas/", (), WIDGET, lambda o: o.update(spec={
        "interval": "1h30m", "every": "P2W", "wait": "10 min", "pause": "soon",
        "address": "10.0.0.1", "peer": "10.0.0.01", "owner": "nobody", "since": "2024-13-01T00:00:00Z"}),
     ["$.spec.pause", "$.spec.peer", "$.spec.since"]),
]


@pytest.fixture(scope="module")
def with_widget_schema(generate, tmp_path_factory):
    """Copies of the generated repositories with the Widget schema in their schemas/."""
    copies = {}

    def _repo(args):
        if args not in copies:
            repo = shutil.copytree(generate(*args), tmp_path_factory.mktemp("parity") / "repo", symlinks=True)
            (repo / "schemas" / "example.com").mkdir()
            (repo / "schemas" / "example.com" / "widget_v1.json").write_text(json.dumps(WIDGET_SCHEMA))
            copies[args] = (repo, collect(repo))
        return copies[args]

    return _repo


@pytest.mark.parametrize("name, args, base, plant, expected", CASES, ids=[c[0] for c in CASES])
def test_planted_faults(with_widget_schema, kubeconform, tmp_path, record_property, name, args, base, plant, expected):
    repo, objects = with_widget_schema(args)
    planted = copy.deepcopy(inline(base) if "\n" in base else first(objects, base))
    plant(planted.obj)
    checked = [*objects, planted]
    by_jsonschema, by_kubeconform = problems_by_engine(repo, checked, tmp_path)
    assert by_kubeconform == by_jsonschema
    found = by_jsonschema.get((planted.source, planted.label), collections.Counter())
    words = UNKNOWN if "unknown field" in name else MISSING if "missing" in name else None
    assert sorted(found.elements(), key=str) == sorted(((p, words if p else None) for p in expected), key=str)
    # Only the planted object fails: the rest of the repository is valid to both.
    assert set(by_jsonschema) <= {(planted.source, planted.label)}
    record_property("kubeconform_parity_planted", len(checked))


def plant_in_files(repo: Path, sync_kind: str) -> None:
    """Faults in the files a user edits: a typo in the sync engine's entry point, an unknown field
    and a wrong type in the RayJob; and an unquoted date, which both engines read as text."""
    runs = repo / "clusters" / "production" / "runs.yaml"
    docs = yamlio.load_all(runs.read_text())
    for doc in docs:
        if doc["kind"] == sync_kind:
            doc["spec"]["specc"] = True
    runs.write_text(yamlio.dump_all(docs) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dated\n"
                    "  namespace: default\n  annotations:\n    rlgen.test/since: 2024-01-01\n")
    rayjob = repo / "base" / "training" / "rayjob.yaml"
    doc = yamlio.load(rayjob.read_text())
    doc["spec"]["suspnd"] = True
    doc["spec"]["shutdownAfterJobFinishes"] = "yes"
    rayjob.write_text(yamlio.dump(doc))


@pytest.mark.parametrize("args, sync_kind", [((), "Kustomization"), (ARGO, "Application")], ids=["flux", "argo"])
def test_rlgen_validate_says_the_same_with_kubeconform_on_path(generate, kubeconform, tmp_path, args, sync_kind):
    repo = shutil.copytree(generate(*args), tmp_path / "repo", symlinks=True)
    plant_in_files(repo, sync_kind)
    reports = {}
    for engine, env in [("jsonschema", without_kubeconform(os.environ)), ("kubeconform", os.environ.copy())]:
        result = run_rlgen("validate", str(repo), "--offline", "--output", "json", env=env)
        assert result.returncode in (0, 1), result.stderr
        report = json.loads(result.stdout)
        assert report["engine"] == engine
        # The planted edit of the training base also leaves the run's RayJob name stale: not a schema finding.
        findings = collections.Counter((p["source"], p["obj"], *shape(p["message"])) for p in report["problems"]
                                       if "edited after its RayJob was named" not in p["message"])
        reports[engine] = (result.returncode, report["checked"], report["schemas"], findings)
    assert reports["kubeconform"] == reports["jsonschema"]
    code, _, _, findings = reports["jsonschema"]
    assert code == 1
    typo = [f for f in findings if f[1].startswith(f"{sync_kind}/") and f[2] == "$.spec.specc"]
    assert typo and all(f[3] == UNKNOWN for f in typo)
    assert {f[2] for f in findings if f[1].startswith("RayJob/")} == {"$.spec.suspnd", "$.spec.shutdownAfterJobFinishes"}
    assert not [f for f in findings if f[1] == "ConfigMap/default/dated"]
