"""The rules about what the sync engine applies: stage order against the Namespaces stages
create, reserved example domains, the tool class for the sandbox tool, Secret values in Git,
and the MCP warning that never changes the exit code."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from rlgen.tools import yamlio
from support.repos import run_rlgen, schema_dir

ARGO = ("--plugin", "argo")


def validate(repo):
    env = {**os.environ, "RLGEN_SCHEMA_DIR": str(schema_dir())}
    return run_rlgen("validate", str(repo), "--output", "json", env=env)


def problems(repo) -> list[dict]:
    result = validate(repo)
    assert result.returncode == 1, result.stdout + result.stderr
    return json.loads(result.stdout)["problems"]


def edit_docs(path, change):
    docs = yamlio.load_all(path.read_text())
    for doc in docs:
        change(doc)
    path.write_text(yamlio.dump_all(docs))


def copy_of(generate, tmp_path, *args):
    import shutil

    return shutil.copytree(generate(*args), tmp_path / "repo", symlinks=True)


def test_manager_without_depending_on_the_operator_is_a_problem(repo):
    def drop(doc):
        if doc["metadata"]["name"] == "sandbox-manager":
            doc["spec"].pop("dependsOn")
    edit_docs(repo / "infrastructure" / "upstream" / "openkruise-agents.yaml", drop)
    expected = "namespace sandbox-system, which stage sandbox-operator creates"
    found = problems(repo)
    assert any(p["obj"] == "Kustomization/flux-system/sandbox-manager" and expected in p["message"] for p in found)


def test_argo_manager_in_the_operators_wave_is_a_problem(generate, tmp_path):
    repo = copy_of(generate, tmp_path, *ARGO)

    def same_wave(doc):
        if doc["metadata"]["name"] == "sandbox-manager":
            doc["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = "0"
    edit_docs(repo / "infrastructure" / "upstream" / "openkruise-agents.yaml", same_wave)
    found = problems(repo)
    assert any(p["obj"] == "Application/argocd/sandbox-manager" and "sandbox-operator" in p["message"] for p in found)


def test_example_domain_image_and_git_url_are_problems(repo):
    def controller(doc):
        if doc["kind"] == "Kustomization" and doc["metadata"]["name"] == "sandbox-operator":
            doc["spec"]["images"][0]["newName"] = "registry.example.net/agents/controller"
        if doc["kind"] == "GitRepository":
            doc["spec"]["url"] = "https://git.example.org/agents"
    edit_docs(repo / "infrastructure" / "upstream" / "openkruise-agents.yaml", controller)
    messages = [p["message"] for p in problems(repo)]
    assert any("image 'registry.example.net/agents/controller' is on a reserved example domain" in m for m in messages)
    assert any("Git URL 'https://git.example.org/agents' is on a reserved example domain" in m for m in messages)


def test_argo_example_git_url_is_a_problem(generate, tmp_path):
    repo = copy_of(generate, tmp_path, *ARGO)
    root = repo / "clusters" / "production" / "root.yaml"
    root.write_text(root.read_text().replace("ssh://git@git.rl.test/platform/rl-repo.git",
                                             "ssh://git@example.com/platform/rl-repo.git"))
    found = problems(repo)
    assert {p["obj"] for p in found if "reserved example domain" in p["message"]} >= {
        "Application/argocd/root", "AppProject/argocd/rlgen"}


MCP_SEARCH_TOOL = """\
tools:
  - class_name: verl.tools.mcp_search_tool.MCPSearchTool
    config: {type: mcp}
    mcp: {mcp_servers_config_path: /var/run/mcp/mcp_server.json, tool_selected_list: [run_code_once]}
"""


def test_search_tool_for_a_code_tool_is_a_problem(generate, tmp_path):
    repo = shutil.copytree(generate("--set", "rlgen.verl=0.7.1"), tmp_path / "repo", symlinks=True)
    (repo / "base" / "training" / "tool_config.yaml").write_text(MCP_SEARCH_TOOL)
    messages = [p["message"] for p in problems(repo)]
    assert any("run_code_once output never reaches the model: use verl.tools.mcp_base_tool.MCPBaseTool" in m
               for m in messages), messages
    assert any("has no config.rate_limit" in m for m in messages)


def test_an_mcp_tool_is_a_problem_on_verl_0_9(repo):
    (repo / "base" / "training" / "tool_config.yaml").write_text(MCP_SEARCH_TOOL)
    messages = [p["message"] for p in problems(repo)]
    assert any("config.type 'mcp', but verl 0.9.1 loads only native tools" in m for m in messages), messages


def test_secret_with_values_in_git_is_a_problem(repo):
    platform = repo / "base" / "platform"
    (platform / "leak.yaml").write_text(yamlio.dump({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "oss-credentials"},
        "stringData": {"akId": "x"}}))
    kust = yamlio.load((platform / "kustomization.yaml").read_text())
    kust["resources"].append("leak.yaml")
    (platform / "kustomization.yaml").write_text(yamlio.dump(kust))
    found = problems(repo)
    assert any(p["obj"] == "Secret/oss-credentials" and "committed to Git" in p["message"] for p in found)


def test_mcp_warning_is_shown_and_keeps_exit_0(generate):
    result = validate(generate())
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["problems"] == []
    assert any("cannot be verified offline" in w["message"] for w in report["warnings"])
    assert "warning: runs/baseline/run.yaml: ConfigMap/rl-training/" in result.stderr


@pytest.mark.parametrize("variant", [(), ("--plugin", "marketplace-sandbox", "--set",
                                         "marketplace-sandbox.domain=sandbox.rl-team.cn")], ids=["opensource", "marketplace"])
def test_the_mcp_warning_is_acknowledged_once_in_rlgen_yaml_and_then_not_repeated(variant, generate, tmp_path):
    """It was printed on every validate of every variant, and nothing could answer it."""
    from support.repos import git, rlgen_in

    repo = copy_of(generate, tmp_path, *variant)
    sandbox = yamlio.load((repo / "rlgen.yaml").read_text())["plugins"]["sandbox"]
    first = validate(repo)
    warned = [w["message"] for w in json.loads(first.stdout)["warnings"] if "openkruise/agents#165" in w["message"]]
    assert warned and all(f"rlgen update --set {sandbox}.mcp_checked=true" in m for m in warned), first.stdout
    readme = (repo / "README.md").read_text()
    assert f"rlgen update --set {sandbox}.mcp_checked=true" in " ".join(readme.split())

    update = rlgen_in(repo, "update", "--set", f"{sandbox}.mcp_checked=true")
    assert update.returncode == 0, update.stdout + update.stderr
    assert yamlio.load((repo / "rlgen.yaml").read_text())["options"][sandbox]["mcp_checked"] is True
    assert git(repo, "status", "--porcelain") == ""
    again = validate(repo)
    assert again.returncode == 0, again.stdout + again.stderr
    assert not [w for w in json.loads(again.stdout)["warnings"] if "openkruise/agents#165" in w["message"]]
    assert "openkruise/agents#165" not in again.stderr


def test_the_sandbox_image_is_upstreams_an_answer_recorded_and_its_comment_says_how_to_mirror(generate):
    """The default once lived in a registry named '...test-01...' that upstream never names."""
    repo = generate()
    answers = yamlio.load((repo / "rlgen.yaml").read_text())
    sandbox = answers["plugins"]["sandbox"]
    image = answers["options"][sandbox]["sandbox_image"]
    assert image == "registry-ap-southeast-1.ack.aliyuncs.com/acs/code-interpreter:v1.6"
    [path] = [p for p in repo.rglob("sandboxset.yaml") if ".git" not in p.parts]
    text = path.read_text()
    assert "test-01" not in text and image in text
    assert f"rlgen update --set {sandbox}.sandbox_image=" in text
    assert "openkruise/agents v0.3.0" in text


def test_argo_every_application_retries_without_limit(generate):
    from support.repos import plain_manifests

    apps = [d for d in plain_manifests(generate(*ARGO)) if d["kind"] == "Application"]
    assert {a["metadata"]["name"] for a in apps} >= {"root", "sandbox-operator", "sandbox-manager", "platform", "runs"}
    assert all(a["spec"]["syncPolicy"]["retry"]["limit"] == -1 for a in apps)


def test_argo_application_without_retry_is_a_problem(generate, tmp_path):
    repo = copy_of(generate, tmp_path, *ARGO)

    def no_retry(doc):
        if doc["metadata"]["name"] == "sandbox-manager":
            doc["spec"]["syncPolicy"].pop("retry")
    edit_docs(repo / "infrastructure" / "upstream" / "openkruise-agents.yaml", no_retry)
    found = problems(repo)
    assert any(p["obj"] == "Application/argocd/sandbox-manager" and "syncPolicy.retry.limit must be -1" in p["message"]
               for p in found)


def test_argo_runs_gating_the_root_is_a_problem(generate, tmp_path):
    repo = copy_of(generate, tmp_path, *ARGO)
    edit_docs(repo / "clusters" / "production" / "runs.yaml",
              lambda doc: doc["metadata"]["annotations"].pop("rlgen.io/health-gate"))
    found = problems(repo)
    assert [p["obj"] for p in found if "gates the root's sync" in p["message"]] == ["Application/argocd/runs"]


def test_argo_root_gating_its_own_sync_is_a_problem(generate, tmp_path):
    """Seen on the control plane: the root, mid-sync, waited on its own health for ever."""
    repo = copy_of(generate, tmp_path, *ARGO)

    def gate(doc):
        if doc["kind"] == "Application":
            doc["metadata"]["annotations"].pop("rlgen.io/health-gate")
    edit_docs(repo / "clusters" / "production" / "root.yaml", gate)
    found = problems(repo)
    assert [p["obj"] for p in found if "waits on itself" in p["message"]] == ["Application/argocd/root"]


SANDBOX = ("components", "opensource-sandbox", "platform")


def test_sandboxes_run_apart_from_the_trainer(generate):
    from support.repos import build

    objects = build(generate() / "overlays" / "production" / "platform")
    (sandbox_set,) = [o for o in objects if o["kind"] == "SandboxSet"]
    assert sandbox_set["metadata"]["namespace"] == "rl-training-sandboxes"
    assert sandbox_set["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NetworkPolicy"}
    isolated = policies["sandboxes-isolated"]["spec"]
    assert isolated["egress"] == [] and "Egress" in isolated["policyTypes"]
    assert isolated["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "sandbox-system"}}}]}]
    # Who reaches the Ray head, the dashboard included, an engine decides: test_network_reachability.py.
    assert "ray-dashboard-in-namespace" in policies
    # No Secret the sandboxes could read lives in their namespace.
    assert not [o for o in objects if o["kind"] == "Secret" and o["metadata"]["namespace"] == "rl-training-sandboxes"]


@pytest.mark.parametrize("change, expected", [
    (lambda d: d["metadata"].__setitem__("namespace", "rl-training") if d["kind"] == "SandboxSet" else None,
     "share namespace rl-training with the RayJobs"),
    (lambda d: d["spec"]["template"]["spec"].pop("automountServiceAccountToken") if d["kind"] == "SandboxSet" else None,
     "mounts a service-account token"),
], ids=["namespace", "token"])
def test_sandbox_hand_edits_are_problems(repo, change, expected):
    edit_docs(repo.joinpath(*SANDBOX, "sandboxset.yaml"), change)
    assert any(expected in p["message"] and p["obj"].startswith("SandboxSet/") for p in problems(repo))


def test_sandboxes_without_denied_egress_are_a_problem(repo):
    edit_docs(repo.joinpath(*SANDBOX, "sandboxes-network-policy.yaml"),
              lambda d: d["spec"].__setitem__("egress", [{}]))
    assert any("denies the sandboxes' egress" in p["message"] for p in problems(repo))


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_upstream_ingress_kept_is_a_problem(generate, tmp_path, sync):
    repo = copy_of(generate, tmp_path, "--plugin", sync)

    def keep_ingress(doc):
        if doc["metadata"]["name"] == "sandbox-manager" and doc["kind"] in ("Kustomization", "Application"):
            patches = doc["spec"]["patches"] if sync == "flux" else doc["spec"]["source"]["kustomize"]["patches"]
            patches[:] = [p for p in patches if p["target"]["kind"] != "Ingress"]
    edit_docs(repo / "infrastructure" / "upstream" / "openkruise-agents.yaml", keep_ingress)
    label = "Kustomization/flux-system/sandbox-manager" if sync == "flux" else "Application/argocd/sandbox-manager"
    assert any(p["obj"] == label and "placeholder hosts" in p["message"] for p in problems(repo))
