"""The open-source sandbox against upstream's real sandbox-manager root (vendored at the pinned
tag): the generated patch, rendered with real kustomize, gives args the pinned manager accepts,
the admin key from a Secret, and the MCP port the Service targets."""
from __future__ import annotations

import shutil

import pytest
from rlgen.naming import context_hash
from rlgen.tools import yamlio
from support.repos import REPO, REGISTRY, build, plain_manifests

from rlgen_plugins._openkruise_pins import MANAGER_FLAGS, value

VENDORED = REPO / "upstream" / "openkruise-agents-v0.3.0" / "config" / "sandbox-manager"


def upstream_entries(repo, name: str) -> tuple[list[dict], list[dict]]:
    """(kustomize images, patches) the sync engine applies to upstream root ``name``."""
    (doc,) = [d for d in plain_manifests(repo) if d["metadata"]["name"] == name and d["kind"] != "GitRepository"]
    if doc["kind"] == "Kustomization":
        return doc["spec"].get("images", []), doc["spec"].get("patches", [])
    kustomize = doc["spec"]["source"].get("kustomize", {})
    images = []
    for item in kustomize.get("images", []):
        old, _, new = item.partition("=")
        new_name, _, tag = new.rpartition(":")
        images.append({"name": old, "newName": new_name, "newTag": tag})
    return images, kustomize.get("patches", [])


def render_manager(repo, tmp_path, root=VENDORED) -> list[dict]:
    """What the engine gets: upstream's root, then the entry point's images and patches."""
    images, patches = upstream_entries(repo, "sandbox-manager")
    work = tmp_path / "engine"
    shutil.copytree(root, work / "upstream")
    (work / "kustomization.yaml").write_text(yamlio.dump(
        {"resources": ["upstream"], "images": images, "patches": patches}))
    return build(work)


def manager_container(objects):
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    return deployment["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_rendered_manager_args_are_all_flags_of_the_pinned_image(generate, tmp_path, sync):
    repo = generate("--plugin", sync)
    objects = render_manager(repo, tmp_path)
    container = manager_container(objects)
    flags = [a.lstrip("-").split("=", 1)[0] for a in container["args"]]
    assert set(flags) <= MANAGER_FLAGS, set(flags) - MANAGER_FLAGS
    assert "--mcp-enabled=true" in container["args"]
    assert f"--mcp-port={value('mcp_port')}" in container["args"]
    # The tag rlgen gives the manager: its pin, then the hash of images/sandbox-manager (build.sh's list).
    digest = context_hash({"b/build.sh": (repo / "images/sandbox-manager/build.sh").read_bytes()}, "b")[:12]
    assert container["image"] == f"{REGISTRY}/sandbox-manager:{value('manager_tag')}-{digest}"
    assert f'"images/sandbox-manager {container["image"]}"' in (repo / "images/build.sh").read_text()
    # The published key is gone; the key comes from a Secret through $(VAR) expansion.
    assert "some-api-key" not in yamlio.dump_all(objects)
    assert "--e2b-admin-key=$(E2B_ADMIN_KEY)" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["E2B_ADMIN_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "sandbox-admin-api-key", "key": "adminApiKey"}
    mcp_port = int(value("mcp_port"))
    assert mcp_port in {p["containerPort"] for p in container["ports"]}
    (service,) = [o for o in build(repo / "overlays" / "production" / "platform")
                  if o["kind"] == "Service" and o["metadata"]["name"] == "mcp-sandbox"]
    assert service["spec"]["ports"][0]["targetPort"] == mcp_port
    assert service["spec"]["selector"].items() <= objects_pod_labels(objects).items()


def objects_pod_labels(objects) -> dict:
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    return deployment["spec"]["template"]["metadata"]["labels"]


def test_patch_stops_when_upstream_moves_the_admin_key_arg(generate, tmp_path):
    """An upstream release that adds an arg before the key (and moves its own patch along)
    must fail the build rather than have the key patch overwrite another flag."""
    moved = tmp_path / "moved"
    shutil.copytree(VENDORED, moved)
    deployment = moved / "deployment.yaml"
    deployment.write_text(deployment.read_text().replace(
        "            - --zap-log-level=7\n", "            - --zap-log-level=7\n            - --port=8080\n"))
    patch = moved / "configuration_patch.yaml"
    patch.write_text(patch.read_text().replace("args/7", "args/8").replace("args/6", "args/7"))
    with pytest.raises(AssertionError, match="kustomize failed"):
        render_manager(generate(), tmp_path, moved)


def test_vendored_files_match_their_recorded_checksums():
    import hashlib

    provenance = (VENDORED.parents[1] / "PROVENANCE.md").read_text()
    assert value("tag") in provenance and "a4e640d23293a90f7b0053a7f4ad8cf5b16a4888" in provenance
    for path in VENDORED.iterdir():
        assert f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}" in provenance


def test_manager_waits_for_the_operator_that_creates_its_namespace(generate):
    flux = {d["metadata"]["name"]: d for d in plain_manifests(generate()) if d["kind"] == "Kustomization"}
    assert flux["sandbox-manager"]["spec"]["dependsOn"] == [{"name": "sandbox-operator"}]
    argo = {d["metadata"]["name"]: int(d["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
            for d in plain_manifests(generate("--plugin", "argo")) if d["kind"] == "Application"}
    assert argo["sandbox-operator"] < argo["sandbox-manager"] < argo["platform"] < argo["runs"]


def test_controller_is_upstreams_published_image(generate):
    images, _ = upstream_entries(generate(), "sandbox-operator")
    assert images == [{"name": "agent-sandbox-controller", "newName": "openkruise/agent-sandbox-controller",
                       "newTag": value("tag")}]
    readme = (generate() / "README.md").read_text()
    script = (generate() / "images" / "sandbox-manager" / "build.sh").read_text()
    assert "sh images/sandbox-manager/build.sh" in readme
    assert "make docker-build-manager" in script and "make docker-build " not in script
    assert "random key" not in readme and "random admin" not in readme


def test_trainer_uses_rlgens_sandbox_tool_and_a_key_from_a_secret(generate):
    repo = generate()
    tools = [t for t in yamlio.load((repo / "base" / "training" / "tool_config.yaml").read_text())["tools"]
             if "mcp_servers_config_path" in t["config"]]
    assert [t["class_name"] for t in tools] == ["rlgen_verl_tools.sandbox.SandboxCodeTool"]
    assert tools[0]["config"]["timeout"] > 0 and tools[0]["config"]["remote_tool"] == "run_code_once"
    assert "E2B-API-KEY" not in (repo / "base" / "training" / "mcp_server.json").read_text()
    (job,) = [o for o in build(repo / "overlays/production/runs") if o["kind"] == "RayJob"]
    pod = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    assert init["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "sandbox-api-key", "key": "apiKey"}
    assert init["image"] == pod["containers"][0]["image"]
    written = init["command"][-1]
    assert tools[0]["config"]["mcp_servers_config_path"] == written
    assert any(m["mountPath"] == written.rsplit("/", 1)[0] for m in pod["containers"][0]["volumeMounts"])
    assert "sandbox-api-key" in yamlio.load((repo / "rlgen.yaml").read_text())["external"]["secrets"]


def test_the_credentials_script_adds_the_header(generate, tmp_path):
    """The init container's script itself, run on the generated mcp_server.json."""
    import subprocess
    import sys

    repo = generate()
    (job,) = [o for o in build(repo / "overlays/production/runs") if o["kind"] == "RayJob"]
    command = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["initContainers"][0]["command"]
    source, target = tmp_path / "in.json", tmp_path / "out.json"
    source.write_bytes((repo / "base" / "training" / "mcp_server.json").read_bytes())
    subprocess.run([sys.executable, "-c", command[2], str(source), str(target)], check=True,
                   env={"MCP_API_KEY": "k-123"})
    import json
    server = json.loads(target.read_text())["mcpServers"]["sandbox"]
    assert server["headers"] == {"E2B-API-KEY": "k-123"} and server["transport"] == "http"
    assert oct(target.stat().st_mode & 0o777) == "0o600"


def test_head_pod_is_hardened_and_sandboxes_are_bounded(generate):
    repo = generate()
    (job,) = [o for o in build(repo / "overlays/production/runs") if o["kind"] == "RayJob"]
    pod = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "argocd.argoproj.io/sync-options" not in job["metadata"].get("annotations", {})
    (sbs,) = [o for o in build(repo / "overlays" / "production" / "platform") if o["kind"] == "SandboxSet"]
    spec = sbs["spec"]["template"]["spec"]
    for container in spec["containers"] + spec["initContainers"]:
        assert container["resources"]["requests"] and container["resources"]["limits"], container["name"]
    sized = generate("--set", "opensource-sandbox.sandbox_memory=4Gi")
    (sbs,) = [o for o in build(sized / "overlays" / "production" / "platform") if o["kind"] == "SandboxSet"]
    assert sbs["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "4Gi"


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_upstream_placeholder_ingress_is_not_applied(generate, tmp_path, sync):
    """Upstream's root has an nginx Ingress for replace.with.your.domain; the engine's patch
    deletes it, and nothing else goes with it."""
    plain = build(VENDORED)
    assert any(o["kind"] == "Ingress" for o in plain)
    objects = render_manager(generate("--plugin", sync), tmp_path)
    assert not any(o["kind"] == "Ingress" for o in objects)
    assert "replace.with.your.domain" not in yamlio.dump_all(objects)
    assert {(o["kind"], o["metadata"]["name"]) for o in objects} == {
        (o["kind"], o["metadata"]["name"]) for o in plain if o["kind"] != "Ingress"}


def test_manager_build_logs_key_ids_not_keys(generate, tmp_path):
    """The build script's edit of the key store, run on lines shaped like upstream's: no key
    value is logged afterwards, and a source the edit no longer matches stops the build."""
    import subprocess

    script = (generate() / "images" / "sandbox-manager" / "build.sh").read_text()
    edit = next(line for line in script.splitlines() if line.startswith("sed -i "))
    guard = next(line for line in script.splitlines() if line.startswith("if grep -n "))
    source = tmp_path / "pkg" / "servers" / "e2b" / "keys" / "secret.go"
    source.parent.mkdir(parents=True)
    source.write_text('\t\t\tlog.Info("create admin key success", "key", adminKey.Key)\n'
                      '\tlog.Info("api-key generated", "key", apiKey)\n')
    check = f"{edit}\n{guard}\n  exit 1\nfi\n"
    assert subprocess.run(["sh", "-c", check], cwd=tmp_path).returncode == 0
    assert '"key"' not in source.read_text() and source.read_text().count('"id"') == 2
    source.write_text('\tlog.Info("api-key generated", "key",  apiKey)\n\tlog.Info("x", "key", apiKey)\n')
    assert subprocess.run(["sh", "-c", check], cwd=tmp_path, capture_output=True).returncode == 1


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_the_operators_crds_and_namespace_outlive_its_removal(generate, tmp_path, sync):
    """A swap to the ACK add-ons removes the operator's root: the sync engine must not delete
    the CRDs (every SandboxSet with them) or the Namespace on the way."""
    repo = generate("--plugin", sync)
    images, patches = upstream_entries(repo, "sandbox-operator")
    work = tmp_path / "engine"
    (work / "upstream").mkdir(parents=True)
    crds = sorted((REPO / "upstream" / "crds").glob("agents.kruise.io_*.yaml"))
    for crd in crds:
        shutil.copy(crd, work / "upstream" / crd.name)
    (work / "upstream" / "namespace.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: sandbox-system\n")
    (work / "upstream" / "kustomization.yaml").write_text(yamlio.dump(
        {"resources": ["namespace.yaml", *(c.name for c in crds)]}))
    (work / "kustomization.yaml").write_text(yamlio.dump({"resources": ["upstream"], "patches": patches}))
    objects = build(work)
    assert {o["kind"] for o in objects} == {"Namespace", "CustomResourceDefinition"} and len(objects) == len(crds) + 1
    for o in objects:
        annotations = o["metadata"]["annotations"]
        assert annotations["kustomize.toolkit.fluxcd.io/prune"] == "disabled", o["metadata"]["name"]
        assert annotations["argocd.argoproj.io/sync-options"] == "Prune=false,Delete=false"
