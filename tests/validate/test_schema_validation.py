"""Schema validation of rendered objects, against the schemas rlgen ships."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from rlgen.errors import RlgenError
from rlgen.validate.schema import (
    SchemaValidator,
    kubeconform_binary,
    schema_dir_locations,
    validate_with_kubeconform,
)
from support.repos import schema_dir
from support.toolchain import tool

SCHEMAS = schema_dir()

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata: {name: trainer-config, namespace: verl}
data: {config.yaml: "trainer: {total_epochs: 1}"}
"""
JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: gsm8k-prepare}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: prepare
          image: python:3.11
          command: [python, -c, "print(1)"]
          resources: {limits: {cpu: "1", memory: 2Gi}}
"""
PV = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: oss-data, labels: {alicloud-pvname: oss-data}}
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadOnlyMany]
  persistentVolumeReclaimPolicy: Retain
  csi:
    driver: ossplugin.csi.alibabacloud.com
    volumeHandle: oss-data
    volumeAttributes: {bucket: rl-data, url: oss-cn-hangzhou-internal.aliyuncs.com, path: /gsm8k}
"""
RAYJOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: verl-gsm8k}
spec:
  entrypoint: python3 -m verl.trainer.main_ppo
  shutdownAfterJobFinishes: true
  ttlSecondsAfterFinished: 600
  submissionMode: K8sJobMode
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {dashboard-host: 0.0.0.0}
      template:
        spec:
          containers:
            - name: ray-head
              image: verlai/verl:latest
              resources: {limits: {nvidia.com/gpu: 1}}
    workerGroupSpecs:
      - groupName: gpu
        replicas: 1
        minReplicas: 1
        maxReplicas: 1
        rayStartParams: {}
        template:
          spec:
            containers: [{name: ray-worker, image: verlai/verl:latest}]
"""
SANDBOXSET = """
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: code-sandbox}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: sandbox}}
    spec:
      containers: [{name: sandbox, image: python:3.11-slim}]
"""
FLUX_KUSTOMIZATION = """
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: rl-jobs, namespace: flux-system}
spec:
  interval: 10m
  path: ./overlays/prod
  prune: true
  sourceRef: {kind: GitRepository, name: rl-gitops}
"""


def load(text: str) -> dict:
    return yaml.safe_load(text)


@pytest.fixture(scope="module")
def validator() -> SchemaValidator:
    return SchemaValidator(schema_dir_locations(SCHEMAS))


@pytest.mark.parametrize("text", [CONFIGMAP, JOB, PV, RAYJOB, SANDBOXSET, FLUX_KUSTOMIZATION])
def test_valid_objects_pass(validator, text):
    assert validator.validate(load(text)) == []


def test_unknown_field_under_rayjob_spec_is_named(validator):
    rayjob = load(RAYJOB)
    rayjob["spec"]["entrypointt"] = "python3 main.py"
    rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParam"] = {}
    assert validator.validate(rayjob) == [
        "$.spec.rayClusterSpec.headGroupSpec.rayStartParam: unknown field",
        "$.spec.entrypointt: unknown field",
    ]


def test_unknown_field_at_configmap_root_is_named(validator):
    configmap = load(CONFIGMAP)
    configmap["datas"] = {"a": "b"}
    assert validator.validate(configmap) == ["$.datas: unknown field"]


def test_wrong_type_names_its_path(validator):
    job = load(JOB)
    job["spec"]["backoffLimit"] = "three"
    job["metadata"]["labels"] = {"app.kubernetes.io/part-of": 1}
    problems = validator.validate(job)
    assert len(problems) == 2
    assert problems[0].startswith('$.metadata.labels["app.kubernetes.io/part-of"]: 1 is not of type')
    assert problems[1].startswith("$.spec.backoffLimit: 'three' is not of type 'integer'")


def test_kind_without_schema_is_one_error_naming_kind_version_and_locations(validator):
    problems = validator.validate({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert problems == [
        "no schema for kind Widget (apiVersion example.com/v1); tried: "
        f"{SCHEMAS}/k8s/widget-example-v1.json, {SCHEMAS}/crds/example.com/widget_v1.json"
    ]


def test_object_without_kind_is_reported(validator):
    assert validator.validate({"apiVersion": "v1", "metadata": {"name": "x"}}) == ["missing apiVersion or kind: no schema to look up"]


def test_schema_dir_from_environment_when_no_location_is_given(monkeypatch):
    monkeypatch.setenv("RLGEN_SCHEMA_DIR", str(SCHEMAS))
    rayjob = load(RAYJOB)
    assert SchemaValidator([]).validate(rayjob) == []
    rayjob["spec"]["suspnd"] = True
    assert SchemaValidator([]).validate(rayjob) == ["$.spec.suspnd: unknown field"]


def test_plain_directory_uses_kubeconform_registry_layout(tmp_path):
    # kubeconform appends /{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/...
    # to a location not ending in "json"; it validates as -strict against "master".
    layout = tmp_path / "master-standalone-strict"
    layout.mkdir()
    shutil.copy(SCHEMAS / "k8s" / "configmap-v1.json", layout)
    configmap = load(CONFIGMAP)
    validator = SchemaValidator([str(tmp_path)])
    assert validator.validate(configmap) == []
    assert validator.validate({**configmap, "extra": 1}) == ["$.extra: unknown field"]


def test_default_location_is_kubeconforms_registry():
    problems = SchemaValidator(["default"], offline=True).validate(load(CONFIGMAP))
    assert problems == [
        "no schema for kind ConfigMap (apiVersion v1); tried: https://raw.githubusercontent.com/yannh/"
        "kubernetes-json-schema/master/master-standalone-strict/configmap-v1.json (not cached, offline)"
    ]


def test_unknown_template_field_is_refused_up_front():
    with pytest.raises(RlgenError, match=r"\{\{ \.Kind \}\} is not one of the kubeconform template fields"):
        SchemaValidator(["schemas/{{ .Kind }}.json"])


def test_schema_is_read_once_per_type(tmp_path):
    shutil.copy(SCHEMAS / "k8s" / "configmap-v1.json", tmp_path)
    validator = SchemaValidator([f"{tmp_path}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"])
    assert validator.validate(load(CONFIGMAP)) == []
    (tmp_path / "configmap-v1.json").unlink()
    assert validator.validate({**load(CONFIGMAP), "extra": 1}) == ["$.extra: unknown field"]


def test_a_schema_of_another_kind_is_used_as_kubeconform_uses_it(tmp_path, monkeypatch):
    # A template that ignores the kind finds the ConfigMap schema for a Secret too; kubeconform
    # takes the first schema found, and so does rlgen, which reports what kubeconform reports.
    shutil.copy(SCHEMAS / "k8s" / "configmap-v1.json", tmp_path / "schema.json")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}}
    locations = [f"{tmp_path}/schema.json", *schema_dir_locations(SCHEMAS)]
    problems = SchemaValidator(locations).validate(secret)
    assert sorted(problems) == ["$.kind: 'Secret' is not one of ['ConfigMap']", "$.stringData: unknown field"]
    binary = Path(tool("kubeconform"))
    monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
    found = validate_with_kubeconform(yaml.safe_dump(secret), locations)
    assert sorted(p.text(secret).split(":")[0] for p in found) == ["$.kind", "$.stringData"]


@pytest.mark.parametrize("declared, problems", [
    (None, ["$.spec.address: '10.0.0.300' is not a 'ipv4'"]),
    ("http://json-schema.org/schema#", []),
])
def test_format_is_asserted_where_kubeconform_asserts_it(tmp_path, declared, problems):
    # kubeconform's validator (santhosh-tekuri) asserts "format" before draft 2019-09:
    # in CRD schemas, which declare no draft and get draft 4. It reads the $schema of
    # the yannh Kubernetes schemas as the latest draft, where "format" is only a note.
    schema = {"type": "object", "properties": {"spec": {"properties": {"address": {"format": "ipv4"}}}}}
    if declared:
        schema["$schema"] = declared
    (tmp_path / "thing_v1.json").write_text(json.dumps(schema))
    validator = SchemaValidator([f"{tmp_path}/{{{{ .ResourceKind }}}}_{{{{ .ResourceAPIVersion }}}}.json"])
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"address": "10.0.0.300"}}
    assert validator.validate(thing) == problems


@contextmanager
def serving(root: Path, status: int | None = None):
    """An HTTP server on 127.0.0.1 serving ``root`` (or answering every GET with ``status``)."""
    requests: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self):
            requests.append(self.path)
            if status:
                self.send_error(status)
            else:
                super().do_GET()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def no_proxy(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def registry(tmp_path) -> Path:
    """A folder laid out like kubeconform's default registry, with the ConfigMap schema."""
    root = tmp_path / "registry"
    (root / "master-standalone-strict").mkdir(parents=True)
    shutil.copy(SCHEMAS / "k8s" / "configmap-v1.json", root / "master-standalone-strict")
    return root


def test_remote_schema_is_downloaded_once_then_read_from_disk_cache(no_proxy, registry, tmp_path):
    cache = tmp_path / "cache"
    configmap, typo = load(CONFIGMAP), {**load(CONFIGMAP), "extra": 1}
    with serving(registry) as (url, requests):
        first = SchemaValidator([url], cache_dir=cache)
        assert first.validate(configmap) == []
        assert first.validate(typo) == ["$.extra: unknown field"]
        assert requests == ["/master-standalone-strict/configmap-v1.json"]
    # Named like kubeconform's -cache files, so both tools can share the folder.
    schema_url = f"{url}/master-standalone-strict/configmap-v1.json"
    assert [p.name for p in cache.iterdir()] == [hashlib.sha256(schema_url.encode()).hexdigest()]
    # The server is gone: a download attempt would fail, so these verdicts come from the cache.
    second = SchemaValidator([url], cache_dir=cache)
    assert second.validate(configmap) == []
    assert second.validate(typo) == ["$.extra: unknown field"]


def test_offline_without_cache_reports_the_schema_missing_and_downloads_nothing(no_proxy, registry, tmp_path):
    with serving(registry) as (url, requests):
        problems = SchemaValidator([url], cache_dir=tmp_path / "cache", offline=True).validate(load(CONFIGMAP))
    assert requests == []
    assert problems == [
        f"no schema for kind ConfigMap (apiVersion v1); tried: "
        f"{url}/master-standalone-strict/configmap-v1.json (not cached, offline)"
    ]


def test_not_found_remotely_falls_through_to_the_next_location(no_proxy, tmp_path):
    with serving(tmp_path) as (url, requests):
        validator = SchemaValidator([url, *schema_dir_locations(SCHEMAS)])
        assert validator.validate({**load(CONFIGMAP), "extra": 1}) == ["$.extra: unknown field"]
    assert requests == ["/master-standalone-strict/configmap-v1.json"]


def test_server_error_stops_the_search_like_kubeconform(no_proxy, tmp_path):
    with serving(tmp_path, status=500) as (url, _):
        problems = SchemaValidator([url, *schema_dir_locations(SCHEMAS)]).validate(load(CONFIGMAP))
    assert problems == [
        f"cannot check kind ConfigMap (apiVersion v1): error while downloading schema at "
        f"{url}/master-standalone-strict/configmap-v1.json - received HTTP status 500"
    ]


@pytest.fixture
def fake_kubeconform(tmp_path, monkeypatch):
    """A `kubeconform` on PATH that records its arguments and stdin and prints a report."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls, report = tmp_path / "calls.json", tmp_path / "report.txt"
    report.write_text(json.dumps({"resources": []}))
    script = bin_dir / "kubeconform"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'stdin': sys.stdin.read()}}, open({str(calls)!r}, 'w'))\n"
        f"sys.stdout.write(open({str(report)!r}).read())\n"
        "sys.stderr.write('kubeconform: invalid flag\\n')\n"
        "sys.exit(1)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return script, calls, report


def test_real_kubeconform_names_each_problem_at_its_path(monkeypatch):
    # kubeconform's validationErrors stop at the first level of santhosh-tekuri's error tree
    # ("/spec: validation failed" for these three); rlgen reads each problem from the tree.
    binary = Path(tool("kubeconform"))
    monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
    rayjob = load(RAYJOB)
    rayjob["spec"]["entrypointt"] = "python3 main.py"
    rayjob["spec"]["suspend"] = "yes"
    rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParam"] = {}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    problems = validate_with_kubeconform(yaml.safe_dump_all([rayjob, widget]), schema_dir_locations(SCHEMAS))
    assert sorted((p.filename, p.kind, p.name, p.pointer or (), p.message) for p in problems) == [
        ("stdin", "RayJob", "verl-gsm8k", ("spec", "entrypointt"), "unknown field"),
        ("stdin", "RayJob", "verl-gsm8k", ("spec", "rayClusterSpec", "headGroupSpec", "rayStartParam"), "unknown field"),
        ("stdin", "RayJob", "verl-gsm8k", ("spec", "suspend"), "got string, want boolean"),
        ("stdin", "Widget", "w", (), "could not find schema for Widget"),
    ]
    assert [p.text(rayjob) for p in problems if p.message == "got string, want boolean"] == [
        "$.spec.suspend: got string, want boolean"]


def test_kubeconform_gets_files_and_expanded_default_location(fake_kubeconform, tmp_path):
    _, calls, _ = fake_kubeconform
    validate_with_kubeconform([tmp_path / "a.yaml", tmp_path / "b"], ["default"])
    argv = json.loads(calls.read_text())["argv"]
    assert argv == [
        "-strict", "-output", "json", "-n", "1",
        "-schema-location", "https://raw.githubusercontent.com/yannh/kubernetes-json-schema/master/"
        "{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json",
        str(tmp_path / "a.yaml"), str(tmp_path / "b"),
    ]


def test_kubeconform_output_that_is_not_a_report_is_an_error(fake_kubeconform):
    _, _, report = fake_kubeconform
    report.write_text("Usage: kubeconform [OPTION]... [FILE OR FOLDER]...\n")
    with pytest.raises(RlgenError, match=r"kubeconform failed \(exit 1\): kubeconform: invalid flag"):
        validate_with_kubeconform(CONFIGMAP, ["default"])


def test_without_kubeconform_on_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert kubeconform_binary() is None
    with pytest.raises(RlgenError, match="kubeconform is not on PATH"):
        validate_with_kubeconform(CONFIGMAP, ["default"])
