"""The rules about what the sync engine applies: stage order against the Namespaces stages
create, reserved example domains, the tool class for the sandbox tool, Secret values in Git,
and the MCP warning that never changes the exit code."""
from __future__ import annotations

import json
import os

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
    edit_docs(repo / "clusters" / "production" / "infrastructure.yaml", drop)
    expected = "namespace sandbox-system, which stage sandbox-operator creates"
    found = problems(repo)
    assert any(p["obj"] == "Kustomization/flux-system/sandbox-manager" and expected in p["message"] for p in found)


def test_argo_manager_in_the_operators_wave_is_a_problem(generate, tmp_path):
    repo = copy_of(generate, tmp_path, *ARGO)

    def same_wave(doc):
        if doc["metadata"]["name"] == "sandbox-manager":
            doc["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = "0"
    edit_docs(repo / "clusters" / "production" / "infrastructure.yaml", same_wave)
    found = problems(repo)
    assert any(p["obj"] == "Application/argocd/sandbox-manager" and "sandbox-operator" in p["message"] for p in found)


def test_example_domain_image_and_git_url_are_problems(repo):
    def controller(doc):
        if doc["kind"] == "Kustomization" and doc["metadata"]["name"] == "sandbox-operator":
            doc["spec"]["images"][0]["newName"] = "registry.example.net/agents/controller"
        if doc["kind"] == "GitRepository":
            doc["spec"]["url"] = "https://git.example.org/agents"
    edit_docs(repo / "clusters" / "production" / "infrastructure.yaml", controller)
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


def test_search_tool_for_a_code_tool_is_a_problem(repo):
    path = repo / "base" / "training" / "tool_config.yaml"
    path.write_text(path.read_text().replace("verl.tools.mcp_base_tool.MCPBaseTool",
                                             "verl.tools.mcp_search_tool.MCPSearchTool")
                    .replace("      rate_limit: 120\n", ""))
    messages = [p["message"] for p in problems(repo)]
    assert any("run_code_once output never reaches the model: use verl.tools.mcp_base_tool.MCPBaseTool" in m
               for m in messages), messages
    assert any("has no config.rate_limit" in m for m in messages)


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
    assert "warning: runs: ConfigMap/rl-training/" in result.stderr
