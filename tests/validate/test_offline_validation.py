"""``rlgen validate`` needs no network and no environment variable: rlgen's own schemas first,
the repository's schemas/ next, the remote catalogs last; ``--offline`` never downloads.
Every run here has its proxies pointed at a closed port, so a download attempt would fail.
These runs check schemas with rlgen's own validator (kubeconform off PATH); that kubeconform
finds the same is tests/validate/test_kubeconform_parity.py."""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys

import pytest
from rlgen.schemas.shipped import CATALOG
from rlgen.tools import yamlio
from support.engines import without_kubeconform
from support.repos import run_rlgen

UNREACHABLE = "http://127.0.0.1:9"
ARGO = ("--plugin", "argo")


def offline_env() -> dict:
    env = without_kubeconform({k: v for k, v in os.environ.items() if k != "RLGEN_SCHEMA_DIR"})
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env[name] = UNREACHABLE
    env.pop("no_proxy", None)
    env.pop("NO_PROXY", None)
    return env


def validate(repo, *args, env=None):
    result = run_rlgen("validate", str(repo), "--output", "json", *args, env=env or offline_env())
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def plant(path, kind, field="specc"):
    """Add an unknown field under spec of every ``kind`` object in ``path``."""
    docs = yamlio.load_all(path.read_text())
    for doc in docs:
        if doc["kind"] == kind:
            doc["spec"][field] = True
    path.write_text(yamlio.dump_all(docs))


@pytest.mark.parametrize("args", [(), ARGO], ids=["flux", "argo"])
@pytest.mark.parametrize("offline", [False, True], ids=["default", "offline"])
def test_generated_repository_validates_with_no_network(generate, args, offline):
    code, report = validate(generate(*args), *(["--offline"] if offline else []))
    assert (code, report["problems"]) == (0, [])
    assert report["engine"] == "jsonschema"
    assert {s["source"] for s in report["schemas"]} == {"rlgen catalog"}
    assert {"RayJob", "SandboxSet", "Job", "ConfigMap"} <= {s["kind"] for s in report["schemas"]}


@pytest.mark.parametrize("args, file, kind", [
    ((), "clusters/production/runs.yaml", "Kustomization"),
    (ARGO, "clusters/production/runs.yaml", "Application"),
    ((), "base/training/rayjob.yaml", "RayJob"),
])
def test_planted_unknown_field_is_caught_offline(generate, tmp_path, args, file, kind):
    repo = shutil.copytree(generate(*args), tmp_path / "repo", symlinks=True)
    plant(repo / file, kind)
    code, report = validate(repo, "--offline")
    assert code == 1
    # An edit of the training base also leaves every run's RayJob name stale (tests/validate/test_hand_edits.py).
    messages = [p["message"] for p in report["problems"]
                if p["obj"].startswith(f"{kind}/") and "edited after its RayJob was named" not in p["message"]]
    assert messages and set(messages) == {"$.spec.specc: unknown field"}, report["problems"]
    if kind == "RayJob":  # named by the file a user edits, not the root it renders in
        assert {p["source"] for p in report["problems"]} == {"runs/baseline/run.yaml"}
    (source,) = [s for s in report["schemas"] if s["kind"] == kind]
    assert source["source"] == "rlgen catalog" and source["location"].startswith("crds/")


WIDGET_SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "additionalProperties": False,
                                                             "properties": {"size": {"type": "integer"}}}}}


def add_widget(repo, spec):
    (repo / "base" / "platform" / "widget.yaml").write_text(yamlio.dump(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}))
    kustomization = repo / "base" / "platform" / "kustomization.yaml"
    doc = yamlio.load(kustomization.read_text())
    doc["resources"].append("widget.yaml")
    kustomization.write_text(yamlio.dump(doc))


def test_a_kind_of_the_users_own_is_read_from_the_repositorys_schemas(repo):
    add_widget(repo, {"size": "big"})
    (repo / "schemas" / "example.com").mkdir()
    (repo / "schemas" / "example.com" / "widget_v1.json").write_text(json.dumps(WIDGET_SCHEMA))
    code, report = validate(repo, "--offline")
    assert code == 1
    assert {p["message"] for p in report["problems"]} == {"$.spec.size: 'big' is not of type 'integer'"}
    (widget,) = [s for s in report["schemas"] if s["kind"] == "Widget"]
    assert widget == {"apiVersion": "example.com/v1", "kind": "Widget", "source": "repository schemas/",
                      "location": "schemas/example.com/widget_v1.json"}


def test_offline_a_kind_without_schema_is_a_problem_not_a_download(repo):
    add_widget(repo, {"size": 1})
    code, report = validate(repo, "--offline")
    assert code == 1
    # One problem in each overlay that renders base/platform.
    (problem, *same) = report["problems"]
    assert all(p["obj"] == problem["obj"] and p["message"] == problem["message"] for p in same)
    assert problem["obj"] == "Widget/w"
    assert problem["message"].startswith("no schema for kind Widget (apiVersion example.com/v1); tried: ")
    assert problem["message"].endswith(
        "https://raw.githubusercontent.com/datreeio/CRDs-catalog/main/example.com/widget_v1.json (not cached, offline)")
    (widget,) = [s for s in report["schemas"] if s["kind"] == "Widget"]
    assert widget["source"] == "none"


def test_without_offline_a_missing_schema_is_looked_for_remotely(repo):
    add_widget(repo, {"size": 1})
    code, report = validate(repo)
    assert code == 1
    problem = report["problems"][0]
    # The closed proxy port: the download was tried and failed, and says so.
    assert "failed downloading schema at https://raw.githubusercontent.com/yannh/" in problem["message"]


def test_schema_dir_override_comes_first(repo, tmp_path):
    override = tmp_path / "override"
    (override / "crds" / "example.com").mkdir(parents=True)
    (override / "crds" / "example.com" / "widget_v1.json").write_text(json.dumps(WIDGET_SCHEMA))
    add_widget(repo, {"size": 1})
    code, report = validate(repo, "--offline", env={**offline_env(), "RLGEN_SCHEMA_DIR": str(override)})
    assert (code, report["problems"]) == (0, [])
    (widget,) = [s for s in report["schemas"] if s["kind"] == "Widget"]
    assert widget["source"] == "$RLGEN_SCHEMA_DIR"


def test_generated_repository_carries_the_schemas_of_its_custom_kinds(generate):
    for args, expected in [
        ((), ["agents.kruise.io/sandboxset_v1alpha1.json", "kustomize.toolkit.fluxcd.io/kustomization_v1.json",
              "notification.toolkit.fluxcd.io/receiver_v1.json", "ray.io/rayjob_v1.json",
              "source.toolkit.fluxcd.io/gitrepository_v1.json"]),
        (ARGO + ("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.example.com"),
         ["agents.kruise.io/sandboxset_v1alpha1.json", "alibabacloud.com/albconfig_v1.json",
          "argoproj.io/application_v1alpha1.json", "argoproj.io/appproject_v1alpha1.json", "ray.io/rayjob_v1.json"]),
    ]:
        schemas = generate(*args) / "schemas"
        names = sorted(p.relative_to(schemas).as_posix() for p in schemas.rglob("*.json"))
        assert names == expected
        for name in names:
            assert (schemas / name).read_bytes() == (CATALOG / "crds" / name).read_bytes()


@pytest.fixture
def fake_kubeconform(tmp_path):
    """A ``kubeconform`` that records its arguments, reads the documents rlgen streams on stdin
    and, as ``-verbose`` does, reports each in order: one unknown field in every RayJob."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.json"
    script = bin_dir / "kubeconform"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys, yaml\n"
        f"json.dump(sys.argv[1:], open({str(calls)!r}, 'w'))\n"
        "docs = [yaml.safe_load(d) for d in sys.stdin.read().split('\\n---\\n') if d.strip()]\n"
        "invalid = {'status': 'statusInvalid',\n"
        "           'validationErrors': [{'path': '/spec', 'msg': \"additional properties 'x' not allowed\"}]}\n"
        "res = [{'filename': 'stdin', 'kind': d['kind'], 'name': d['metadata']['name'],\n"
        "        **(invalid if d['kind'] == 'RayJob' else {'status': 'statusValid'})} for d in docs]\n"
        "print(json.dumps({'resources': res}))\n"
        "sys.exit(1 if any(r['status'] == 'statusInvalid' for r in res) else 0)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = {**offline_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return env, calls


def test_kubeconform_on_path_checks_the_schemas_with_the_same_locations(generate, fake_kubeconform):
    env, calls = fake_kubeconform
    code, report = validate(generate(), "--offline", env=env)
    argv = json.loads(calls.read_text())
    locations = [argv[i + 1] for i, a in enumerate(argv) if a == "-schema-location"]
    assert argv[:3] == ["-strict", "-output", "json"]
    # Offline, kubeconform gets the local locations only: rlgen's catalog, then schemas/.
    assert locations[:2] == [f"{CATALOG}/k8s/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
                             f"{CATALOG}/crds/{{{{ .Group }}}}/{{{{ .ResourceKind }}}}_{{{{ .ResourceAPIVersion }}}}.json"]
    assert len(locations) == 3 and locations[2].endswith("/schemas/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json")
    assert not any(a.startswith("http") for a in argv)
    # One process for every object, read from stdin, each reported in order (-verbose).
    assert argv[-2:] == ["-verbose", "-"]
    assert code == 1 and report["engine"] == "kubeconform"
    (problem,) = report["problems"]
    assert problem["source"] == "runs/baseline/run.yaml" and problem["obj"].startswith("RayJob/rl-training/baseline-")
    assert problem["message"] == "$.spec.x: unknown field"


@pytest.mark.parametrize("engine", ["kubeconform", "jsonschema"])
def test_a_generated_repository_asks_no_remote_catalog(generate, engine):
    """Every kind a generated repository renders has a local schema: validate sends no request
    (a proxy that records every request it gets stands for the network)."""
    import http.server
    import threading

    asked = []

    class Proxy(http.server.BaseHTTPRequestHandler):
        def _record(self):
            asked.append(f"{self.command} {self.path}")
            self.send_error(404)

        do_GET = do_CONNECT = _record

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("RLGEN_SCHEMA_DIR", "no_proxy", "NO_PROXY")}
        if engine == "jsonschema":
            env = without_kubeconform(env)
        proxy = f"http://127.0.0.1:{server.server_address[1]}"
        env.update({name: proxy for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")})
        code, report = validate(generate(), env=env)
    finally:
        server.shutdown()
    assert (code, report["problems"], report["engine"]) == (0, [], engine)
    assert asked == []
