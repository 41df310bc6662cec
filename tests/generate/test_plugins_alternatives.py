"""The alternative plugins (marketplace-sandbox, rrsa-storage, sglang, argo) through the real
CLI: what a user of the generated repository would notice, and the combinations refused."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
from ruamel.yaml import YAML
from support.repos import REGISTRY, all_objects, build, error_list, plain_manifests, required_for, run_rlgen, schema_dir

MARKETPLACE = ("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.example.com")
RRSA = ("--plugin", "rrsa-storage", "--set", "rrsa-storage.role_name=rl-oss-reader")
CERTIFICATE = ("--set", "marketplace-sandbox.certificate_id=1234567-cn-hangzhou")


@pytest.fixture(scope="session")
def validate():
    from rlgen.validate.schema import SchemaValidator, schema_dir_locations

    return SchemaValidator(schema_dir_locations(schema_dir())).validate




def of_kind(found: list[dict], kind: str) -> list[dict]:
    return [o for o in found if o["kind"] == kind]


def annotations(obj: dict) -> dict:
    return obj["metadata"].get("annotations") or {}


@pytest.mark.parametrize("args", [MARKETPLACE, RRSA], ids=["marketplace-sandbox", "rrsa-storage"])
def test_the_issue_commands_build_and_validate(generate, validate, args):
    repo = generate(*args)
    found = all_objects(repo)
    assert [p for o in found for p in validate(o)] == []
    assert of_kind(found, "RayJob") and of_kind(found, "SandboxSet")


@pytest.mark.parametrize("args", [
    MARKETPLACE + CERTIFICATE + ("--plugin", "argo", "--plugin", "sglang") + RRSA,
    MARKETPLACE + ("--set", "marketplace-sandbox.ingress_class=mse", "--plugin", "argo"),
    ("--plugin", "argo"),
], ids=["all-alternatives", "mse-argo", "argo"])
def test_other_combinations_build_and_validate(generate, validate, args):
    found = all_objects(generate(*args))
    assert [p for o in found for p in validate(o)] == []


# --- marketplace-sandbox -------------------------------------------------------------------

def test_alb_listeners_keep_http_and_add_https_with_the_certificate(generate):
    infra = build(generate(*MARKETPLACE, *CERTIFICATE) / "infrastructure")
    (albconfig,) = of_kind(infra, "AlbConfig")
    assert albconfig["metadata"]["name"] == "alb"
    assert albconfig["spec"]["listeners"] == [
        {"port": 80, "protocol": "HTTP"},
        {"port": 443, "protocol": "HTTPS",
         "certificates": [{"CertificateId": "1234567-cn-hangzhou", "IsDefault": True}]},
    ]


def test_https_listener_without_certificate_id_lists_none(generate):
    (albconfig,) = of_kind(build(generate(*MARKETPLACE) / "infrastructure"), "AlbConfig")
    assert albconfig["spec"]["listeners"][1] == {"port": 443, "protocol": "HTTPS"}


def test_ingress_annotation_is_a_partial_object_owned_by_server_side_apply(generate, validate):
    infra = build(generate(*MARKETPLACE) / "infrastructure")
    (ingress,) = of_kind(infra, "Ingress")
    assert ingress["metadata"]["name"] == "sandbox-manager"
    assert ingress["metadata"]["namespace"] == "sandbox-system"
    assert set(ingress) == {"apiVersion", "kind", "metadata"}, "only metadata: ACK owns the spec"
    ports = annotations(ingress)["alb.ingress.kubernetes.io/listen-ports"]
    assert ports == '[{"HTTP": 80}, {"HTTPS": 443}]'
    assert json.loads(ports) == [{"HTTP": 80}, {"HTTPS": 443}]
    assert validate(ingress) == []
    for obj in infra:
        notes = annotations(obj)
        assert notes["kustomize.toolkit.fluxcd.io/ssa"] == "Merge"
        assert notes["kustomize.toolkit.fluxcd.io/prune"] == "disabled"
        assert notes["argocd.argoproj.io/sync-options"] == "ServerSideApply=true,Prune=false,Delete=false"


def test_flux_syncs_the_infrastructure_before_the_platform(generate):
    found = plain_manifests(generate(*MARKETPLACE))
    docs = {d["metadata"]["name"]: d for d in of_kind(found, "Kustomization")}
    assert docs["infrastructure"]["spec"]["path"] == "./infrastructure"
    assert {"name": "infrastructure"} in docs["platform"]["spec"]["dependsOn"]
    assert not of_kind(found, "GitRepository"), "ACK installs the add-ons: no upstream sources"


def test_mcp_service_selects_the_addon_pods(generate):
    found = build(generate(*MARKETPLACE) / "overlays" / "production" / "platform")
    (service,) = [o for o in of_kind(found, "Service") if o["metadata"]["name"] == "mcp-sandbox"]
    assert service["metadata"]["namespace"] == "sandbox-system"
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "ack-sandbox-manager",
                                           "component": "sandbox-manager"}


def test_addon_values_are_reviewed_in_git_without_the_admin_key(generate):
    repo = generate(*MARKETPLACE)
    text = (repo / "infrastructure" / "ack-sandbox-manager-values.yaml").read_text()
    values = YAML(typ="safe").load(text)
    assert values["e2b"]["domain"] == "sandbox.example.com"
    assert values["ingress"]["className"] == "alb"
    assert values["sandboxManager"]["replicaCount"] == 3
    assert values["controller"]["resources"]["requests"] == {"cpu": "2", "memory": "4Gi"}
    assert values["proxy"]["resources"]["requests"] == {"cpu": "2", "memory": "4Gi"}
    assert "adminApiKey" not in values["e2b"]
    assert "ACK documents only className, domain and adminApiKey publicly" in text
    readme = (repo / "README.md").read_text()
    assert "kubectl create secret generic sandbox-admin-api-key -n sandbox-system" in readme
    assert not of_kind(all_objects(repo), "Secret")


def test_mse_needs_no_alb_objects(generate):
    repo = generate(*MARKETPLACE, "--set", "marketplace-sandbox.ingress_class=mse", "--plugin", "argo")
    assert not (repo / "infrastructure" / "kustomization.yaml").exists()
    values = YAML(typ="safe").load((repo / "infrastructure" / "ack-sandbox-manager-values.yaml").read_text())
    assert values["ingress"]["className"] == "mse"
    found = all_objects(repo)
    assert not of_kind(found, "AlbConfig") and not of_kind(found, "Ingress")
    assert "infrastructure" not in {a["metadata"]["name"] for a in of_kind(found, "Application")}


# --- rrsa-storage ---------------------------------------------------------------------------

def test_rrsa_volumes_and_dataset_job_hold_no_access_key(generate):
    repo = generate(*RRSA)
    assert not of_kind(all_objects(repo), "Secret")
    found = build(repo / "overlays" / "production" / "platform")
    volumes = of_kind(found, "PersistentVolume")
    assert len(volumes) == 3
    for pv in volumes:
        csi = pv["spec"]["csi"]
        assert "nodePublishSecretRef" not in csi
        assert csi["volumeAttributes"]["authType"] == "rrsa"
        assert csi["volumeAttributes"]["roleName"] == "rl-oss-reader"
    jobs = of_kind(found, "Job")
    assert len(jobs) == 2  # the dataset and model Jobs
    for job in jobs:
        env = job["spec"]["template"]["spec"]["containers"][0]["env"]
        assert {e["name"] for e in env} >= {"OSS_BUCKET", "OSS_REGION", "OSS_ENDPOINT"}
        assert not [e for e in env if e["name"].startswith("OSS_ACCESS_KEY")]
    assert YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["external"]["secrets"] == [
        "git-webhook-token", "hf-token", "sandbox-admin-api-key", "sandbox-api-key"]
    assert "oss-credentials" not in (repo / "README.md").read_text()


def test_rrsa_pod_identity_for_the_dataset_job(generate):
    repo = generate(*RRSA)
    found = build(repo / "overlays" / "production" / "platform")
    (account,) = of_kind(found, "ServiceAccount")
    (namespace,) = [n for n in of_kind(found, "Namespace") if n["metadata"]["name"] == "rl-training"]
    for job in of_kind(found, "Job"):  # the dataset and model Jobs
        assert job["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    assert annotations(account)["pod-identity.alibabacloud.com/role-name"] == "rl-oss-reader"
    assert namespace["metadata"]["labels"]["pod-identity.alibabacloud.com/injection"] == "on"
    assert annotations(namespace)["kustomize.toolkit.fluxcd.io/prune"] == "disabled", "base annotations kept"


def test_rrsa_readme_says_which_role_trusts_which_service_account(generate):
    readme = (generate(*RRSA, "--set", "rrsa-storage.pipeline_role_name=rl-dataset-writer") / "README.md").read_text()
    section = readme.split("## Storage: OSS with RRSA", 1)[1].split("\n## ", 1)[0]
    volume, pipeline = section.split("`rl-dataset-writer` (dataset Job)")
    assert "`rl-oss-reader` (volumes)" in volume
    assert '"oidc:sub": "system:serviceaccount:ack-csi-fuse:csi-fuse-ossfs"' in volume
    assert '"oidc:sub": "system:serviceaccount:rl-training:dataset-pipeline"' in pipeline
    account = build(generate(*RRSA, "--set", "rrsa-storage.pipeline_role_name=rl-dataset-writer")
                    / "overlays" / "production" / "platform")
    (sa,) = of_kind(account, "ServiceAccount")
    assert annotations(sa)["pod-identity.alibabacloud.com/role-name"] == "rl-dataset-writer"


# --- sglang ---------------------------------------------------------------------------------

def test_sglang_rollout_and_image(generate):
    repo = generate("--plugin", "sglang")
    trainer = YAML(typ="safe").load((repo / "base" / "training" / "trainer.yaml").read_text())
    rollout = trainer["actor_rollout_ref"]["rollout"]
    assert rollout["name"] == "sglang"
    assert rollout["tensor_model_parallel_size"] == 2
    assert "engine_kwargs" not in rollout, "verl's own default attention backend needs no override"
    (rayjob,) = of_kind(build(repo / "overlays/production/runs"), "RayJob")
    image = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]
    assert re.fullmatch(rf"{re.escape(REGISTRY)}/verl-training:0\.9\.1-sglang-[0-9a-f]{{12}}", image)
    assert "FROM verlai/verl:sgl0512.latest\n" in (repo / "images" / "training" / "Dockerfile").read_text()


def test_sglang_engine_kwargs_only_when_they_change_something(generate):
    repo = generate("--plugin", "sglang", "--set", "sglang.attention_backend=flashinfer",
                    "--set", "rlgen.verl=0.7.1")
    rollout = YAML(typ="safe").load((repo / "base" / "training" / "trainer.yaml").read_text())["actor_rollout_ref"]["rollout"]
    assert rollout["engine_kwargs"] == {"sglang": {"attention_backend": "flashinfer"}}
    assert "FROM verlai/verl:sgl059.latest\n" in (repo / "images" / "training" / "Dockerfile").read_text()


# --- argo -----------------------------------------------------------------------------------

def waves(repo) -> dict[str, int]:
    return {a["metadata"]["name"]: int(annotations(a)["argocd.argoproj.io/sync-wave"])
            for a in plain_manifests(repo) if a["kind"] in ("Application", "AppProject", "ConfigMap")}


@pytest.mark.parametrize("args", [(), MARKETPLACE], ids=["opensource-sandbox", "marketplace-sandbox"])
def test_argo_waves_follow_flux_dependencies(generate, args):
    flux = {k["metadata"]["name"]: [d["name"] for d in k["spec"].get("dependsOn", [])]
            for k in plain_manifests(generate(*args)) if k["kind"] == "Kustomization"}
    wave = waves(generate(*args, "--plugin", "argo"))
    assert set(flux) <= set(wave)
    for name, depends in flux.items():
        for dependency in depends:
            assert wave[dependency] < wave[name], f"{dependency} must sync before {name}"
    assert max(wave["root"], wave["argocd-cm"], wave["rlgen"]) < min(wave[n] for n in flux)
    assert wave["platform"] < wave["runs"]


def test_argo_applications(generate):
    repo = generate("--plugin", "argo")
    found = plain_manifests(repo)
    assert not [o for o in found if o["apiVersion"].endswith("fluxcd.io/v1")]
    apps = {a["metadata"]["name"]: a for a in of_kind(found, "Application")}
    for name, app in apps.items():
        assert app["metadata"]["namespace"] == "argocd"
        assert app["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}, name
    manager = apps["sandbox-manager"]["spec"]["source"]
    assert manager["repoURL"] == "https://github.com/openkruise/agents"
    assert manager["targetRevision"] == "v0.3.0"
    assert manager["path"] == "config/sandbox-manager"
    assert "envoyproxy/envoy=envoyproxy/envoy:v1.33.0" in manager["kustomize"]["images"]
    assert all(re.fullmatch(r"[^=\s]+=[^=\s]+:[^:=\s]+", i) for i in manager["kustomize"]["images"])
    assert apps["runs"]["spec"]["source"]["path"] == "overlays/production/runs"
    assert apps["root"]["spec"]["source"]["path"] == "clusters/production"
    (rayjob,) = of_kind(build(repo / "overlays/production/runs"), "RayJob")
    # Replace=true would be a kubectl replace that drops KubeRay's finalizer; names re-run instead.
    assert "argocd.argoproj.io/sync-options" not in annotations(rayjob)
    readme = (repo / "README.md").read_text()
    assert "Flux" not in readme and "Replace=true" not in readme
    assert "Flux" not in (repo / ".github" / "workflows" / "validate.yaml").read_text()


def test_argo_readme_installs_the_tested_release_server_side_before_the_root(generate):
    """Each step is one sh block a test can run as written: upstream's manifest of the pinned
    release, applied server-side (the CRDs are too large for a client-side apply), the CRDs
    established, then the root."""
    from rlgen_plugins.argo import ARGOCD_RELEASE

    readme = (generate("--plugin", "argo") / "README.md").read_text()
    section = readme.split("## Sync: Argo CD\n", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert ARGOCD_RELEASE == "v3.6.1" and f"Install Argo CD {ARGOCD_RELEASE}" in section
    assert blocks == [
        "kubectl create namespace argocd --dry-run=client -o yaml | kubectl apply -f -\n"
        "kubectl apply -n argocd --server-side --force-conflicts -f "
        "https://raw.githubusercontent.com/argoproj/argo-cd/v3.6.1/manifests/install.yaml\n"
        "kubectl wait --for=condition=Established --timeout=60s "
        "crd/applications.argoproj.io crd/appprojects.argoproj.io\n",
        "kubectl apply -n argocd -f clusters/production/root.yaml\n",
    ]


def test_argo_learns_the_health_of_rayjobs_and_applications(generate):
    (settings,) = [o for o in plain_manifests(generate("--plugin", "argo")) if o["kind"] == "ConfigMap"]
    assert (settings["metadata"]["name"], settings["metadata"]["namespace"]) == ("argocd-cm", "argocd")
    assert "Prune=false" in annotations(settings)["argocd.argoproj.io/sync-options"]
    rayjob = settings["data"]["resource.customizations.health.ray.io_RayJob"]
    for status in ("Healthy", "Degraded", "Progressing", "Suspended"):
        assert f'"{status}"' in rayjob
    assert "jobDeploymentStatus" in rayjob and "SUCCEEDED" in rayjob
    assert "obj.status.health" in settings["data"]["resource.customizations.health.argoproj.io_Application"]


LUA = shutil.which("lua5.4") or shutil.which("lua")


def _lua_value(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{json.dumps(k)}] = {_lua_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


# scripts/ci.sh installs lua5.4, so in CI a missing interpreter fails instead of skipping.
@pytest.mark.skipif(not LUA and not os.environ.get("CI"), reason="no Lua interpreter (apt-get install lua5.4)")
@pytest.mark.parametrize("status, health", [
    ({}, "Progressing"),
    ({"jobDeploymentStatus": ""}, "Progressing"),
    ({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, "Progressing"),
    ({"jobDeploymentStatus": "Retrying"}, "Progressing"),
    ({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, "Healthy"),
    ({"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED"}, "Degraded"),
    ({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "message": "OOM"}, "Degraded"),
    ({"jobDeploymentStatus": "ValidationFailed", "message": "name too long"}, "Degraded"),
    ({"jobDeploymentStatus": "Suspended"}, "Suspended"),
])
def test_rayjob_health_check_runs_in_lua(generate, status, health):
    (settings,) = [o for o in plain_manifests(generate("--plugin", "argo")) if o["kind"] == "ConfigMap"]
    check = settings["data"]["resource.customizations.health.ray.io_RayJob"]
    obj = _lua_value({"status": status} if status else {})
    script = f"obj = {obj}\nlocal function check()\n{check}\nend\nlocal hs = check()\nprint(hs.status)\nprint(hs.message)\n"
    result = subprocess.run([LUA, "-"], input=script, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    got, message = result.stdout.splitlines()
    assert got == health
    assert status.get("message", "") in message


def _application_health(repo, obj: dict) -> tuple[str, str]:
    (settings,) = [o for o in plain_manifests(repo) if o["kind"] == "ConfigMap"]
    check = settings["data"]["resource.customizations.health.argoproj.io_Application"]
    script = (f"obj = {_lua_value(obj)}\nlocal function check()\n{check}\nend\nlocal hs = check()\n"
              "print(hs.status)\nprint(hs.message)\n")
    result = subprocess.run([LUA, "-"], input=script, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    got, message = result.stdout.splitlines()
    return got, message


@pytest.mark.skipif(not LUA and not os.environ.get("CI"), reason="no Lua interpreter (apt-get install lua5.4)")
@pytest.mark.parametrize("sync, health", [("Synced", "Healthy"), ("OutOfSync", "Progressing"),
                                          ("Unknown", "Progressing"), (None, "Progressing")])
def test_a_stage_holds_up_the_next_wave_until_it_is_synced(generate, sync, health):
    """A stage whose manifests fail to build has no resources, so Argo CD calls it Healthy: the
    next wave must still wait for it to be synced."""
    status = {"health": {"status": "Healthy"}, **({"sync": {"status": sync}} if sync else {})}
    got, message = _application_health(generate("--plugin", "argo"), {"metadata": {}, "status": status})
    assert got == health
    assert sync == "Synced" or f"{sync or 'Unknown'}, not synced yet" in message


@pytest.mark.skipif(not LUA and not os.environ.get("CI"), reason="no Lua interpreter (apt-get install lua5.4)")
@pytest.mark.parametrize("annotations, health", [
    ({}, "Progressing"),
    ({"rlgen.io/health-gate": "false"}, "Healthy"),
    ({"rlgen.io/health-gate": "true"}, "Progressing"),
])
def test_only_the_runs_application_does_not_hold_up_the_root(generate, annotations, health):
    """The root's sync waits for each wave's Applications to be healthy; a run's RayJob is
    Progressing for days, so the runs Application reports Healthy to the root."""
    (settings,) = [o for o in plain_manifests(generate("--plugin", "argo")) if o["kind"] == "ConfigMap"]
    check = settings["data"]["resource.customizations.health.argoproj.io_Application"]
    obj = _lua_value({"metadata": {"annotations": annotations} if annotations else {},
                      # Argo CD 3.6 fills an Application's health message with the resources causing it.
                      "status": {"health": {"status": "Progressing",
                                            "message": "Caused by ray.io/RayJob:rl-training/gsm8k-ppo"}}})
    script = f"obj = {obj}\nlocal function check()\n{check}\nend\nlocal hs = check()\nprint(hs.status)\nprint(hs.message)\n"
    result = subprocess.run([LUA, "-"], input=script, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    got, message = result.stdout.splitlines()
    assert got == health
    if annotations.get("rlgen.io/health-gate") == "false":
        assert "Progressing" in message  # the real health stays visible
    runs = next(o for o in plain_manifests(generate("--plugin", "argo")) if o["metadata"]["name"] == "runs")
    assert runs["metadata"]["annotations"]["rlgen.io/health-gate"] == "false"


# --- combinations refused ------------------------------------------------------------------

@pytest.mark.parametrize("args, culprits", [
    (("--plugin", "sglang", "--set", "sglang.tensor_parallel_size=3"), ["sglang"]),
    (MARKETPLACE + ("--set", "marketplace-sandbox.ingress_class=mse") + CERTIFICATE, ["marketplace-sandbox"]),
    (MARKETPLACE + ("--set", "rlgen.verl=0.8.0"), ["rlgen.verl", "0.7.1", "0.9.1"]),
    (("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain="), ["marketplace-sandbox.domain"]),
    (("--plugin", "marketplace-sandbox"), ["marketplace-sandbox.domain"]),
    (("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=https://sb.example.com"),
     ["marketplace-sandbox.domain"]),
    (("--plugin", "rrsa-storage"), ["rrsa-storage.role_name"]),
    (("--plugin", "argo", "--plugin", "flux"), ["argo", "flux"]),
], ids=["tp", "mse-certificate", "verl-line", "empty-domain", "no-domain", "domain-url", "no-role", "two-syncs"])
def test_bad_combination_exits_2_with_one_error_and_writes_nothing(tmp_path, args, culprits):
    target = tmp_path / "repo"
    result = run_rlgen("new", str(target), *required_for(*args), *args, "--no-input")
    # One line, or the line of missing answers and its list, one answer a line.
    line, items = error_list(result)
    assert not items or line.startswith("rlgen: error: a required answer is missing"), result.stderr
    for name in culprits:
        assert name in " ".join([line, *items])
    assert list(tmp_path.iterdir()) == []
