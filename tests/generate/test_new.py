"""rlgen new: the generated repository, end to end with real kustomize and real git."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
from ruamel.yaml import YAML
from rlgen_plugins._sandbox_common import SANDBOX_IMAGE
from support.repos import (
    CORE_ANSWERS,
    POOL_ANSWERS,
    GIT_URL,
    REGISTRY,
    REQUIRED,
    all_objects,
    build,
    kustomize_roots,
    one_error_line,
    repo_files,
    run_rlgen,
)


def test_defaults_and_explicit_plugin_give_identical_repositories(generate):
    implicit = generate()
    explicit = generate("--plugin", "opensource-sandbox")
    assert repo_files(implicit) == repo_files(explicit)


def test_generation_is_byte_identical_across_runs(tmp_path, generate):
    again = tmp_path / "again"
    assert run_rlgen("new", str(again), *REQUIRED, "--no-input").returncode == 0
    assert repo_files(again) == repo_files(generate())


def test_every_root_builds_and_every_object_validates(generate, schemas):
    repo = generate()
    objects = all_objects(repo)
    kinds = {o["kind"] for o in objects}
    assert {"RayJob", "SandboxSet", "Service", "PersistentVolume", "PersistentVolumeClaim", "Job",
            "ServiceAccount", "Namespace", "ConfigMap", "GitRepository", "Kustomization"} <= kinds
    problems = [p for o in objects for p in schemas(o)]
    assert problems == []


def _no_identity(home: Path) -> dict:
    """An environment where git knows no name or email (no configuration, no variables)."""
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        env.pop(var, None)
    return env


def test_no_git_identity_is_refused_with_gits_advice_and_nothing_made(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    target = tmp_path / "repo"
    result = run_rlgen("new", str(target), *REQUIRED, "--no-input", env=_no_identity(home))
    line = one_error_line(result)
    assert 'git config --global user.email "you@example.com"' in line and "user.name" in line
    assert not target.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_first_commit_on_main_carries_the_users_identity(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    config = home / "gitconfig"
    config.write_text("[user]\n\tname = Ada Researcher\n\temail = ada@rl-team.cn\n")
    env = {**_no_identity(home), "GIT_CONFIG_GLOBAL": str(config)}
    target = tmp_path / "repo"
    result = run_rlgen("new", str(target), *REQUIRED, "--no-input", env=env)
    assert result.returncode == 0, result.stderr
    git = lambda *a: subprocess.run(["git", *a], cwd=target, capture_output=True, text=True, env=env).stdout
    assert git("branch", "--show-current").strip() == "main"
    assert git("rev-list", "--count", "HEAD").strip() == "1"
    assert git("status", "--porcelain") == ""
    assert git("log", "-1", "--format=%an <%ae> / %cn <%ce>").strip() == \
        "Ada Researcher <ada@rl-team.cn> / Ada Researcher <ada@rl-team.cn>"


def test_run_gets_a_hashed_rayjob_name_and_its_own_configmap(generate):
    objects = build(generate() / "overlays/production/runs")
    rayjob = next(o for o in objects if o["kind"] == "RayJob")
    configmap = next(o for o in objects if o["kind"] == "ConfigMap")
    assert rayjob["metadata"]["name"].startswith("baseline-")
    assert len(rayjob["metadata"]["name"]) <= 47
    volumes = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["volumes"]
    assert {"name": "configs", "configMap": {"name": configmap["metadata"]["name"]}} in volumes
    assert configmap["metadata"]["name"].startswith("baseline-trainer-config-")
    assert rayjob["metadata"]["namespace"] == configmap["metadata"]["namespace"] == "rl-training"


def test_shared_names_agree_across_objects(generate):
    repo = generate()
    platform = build(repo / "overlays" / "production" / "platform")
    runs = build(repo / "overlays/production/runs")
    pvcs = {o["metadata"]["name"] for o in platform if o["kind"] == "PersistentVolumeClaim"}
    rayjob = next(o for o in runs if o["kind"] == "RayJob")
    pod = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
    assert claims == pvcs
    # The MCP URL names the rendered Service.
    configmap = next(o for o in runs if o["kind"] == "ConfigMap")
    servers = json.loads(configmap["data"]["mcp_server.json"])
    url = servers["mcpServers"]["sandbox"]["url"]
    service = next(o for o in platform if o["kind"] == "Service")
    assert f"//{service['metadata']['name']}.{service['metadata']['namespace']}.svc" in url
    assert f":{service['spec']['ports'][0]['port']}/" in url
    # The dataset Job uploads to the folder the trainer reads.
    trainer = YAML(typ="safe").load(configmap["data"]["trainer.yaml"])
    job = next(o for o in platform if o["kind"] == "Job")
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert trainer["data"]["train_files"] == f"/var/datasets/{env['DATASET']}/train.parquet"
    assert env["OSS_PREFIX"] == f"datasets/{env['DATASET']}/"


def test_no_secret_values_anywhere(generate):
    repo = generate()
    objects = all_objects(repo)
    assert not [o for o in objects if o["kind"] == "Secret"]
    readme = (repo / "README.md").read_text()
    for secret in YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["external"]["secrets"]:
        assert f"kubectl create secret generic {secret}" in readme
    history = subprocess.run(["git", "log", "-p", "--all"], cwd=repo, capture_output=True, text=True).stdout
    assert "stringData" not in history
    # Shapes of real Hugging Face tokens and Alibaba Cloud AccessKey ids.
    assert not re.search(r"hf_[A-Za-z0-9]{20,}|LTAI[A-Za-z0-9]{12,}", history)


def test_images_are_pinned(generate):
    for obj in all_objects(generate()):
        text = json.dumps(obj)
        assert ":latest\"" not in text and "image\": \"training\"" not in text


def test_mcp_server_json_is_strict_json(generate):
    text = (generate() / "base" / "training" / "mcp_server.json").read_text()
    assert json.loads(text)["mcpServers"]


def test_readme_and_workflow_come_from_the_template(generate):
    repo = generate()
    assert "# RL training on ACK" in (repo / "README.md").read_text()
    workflow = YAML(typ="safe").load((repo / ".github" / "workflows" / "validate.yaml").read_text())
    assert "pull_request" in workflow["on"]


def test_every_kustomization_root_is_listed(generate):
    roots = {p.relative_to(generate()).as_posix() for p in kustomize_roots(generate())}
    assert {"base/platform", "base/training", "overlays/production/platform", "overlays/production/runs", "runs/baseline"} <= roots
    # No cluster syncs staging: no overlay of it to review and validate for nothing.
    assert not any(root.startswith("overlays/staging") for root in roots)




@pytest.mark.parametrize("args, expected", [
    (["--plugin", "no-such-plugin"], "unknown plugin 'no-such-plugin'"),
    (["--plugin", "vllm", "--plugin", "gsm8k", "--plugin", "flux", "--plugin", "vlm"], "unknown plugin 'vlm'"),
    (["--set", "vllm.tensor_paralel_size=2"], "did you mean 'tensor_parallel_size'"),
    (["--set", "vllm.tensor_parallel_size=two"], "'two' is not a valid int"),
    (["--set", "vllm.tensor_parallel_size=3"], "does not divide 8 GPUs per node"),
    (["--set", "rlgen.namespace=Bad_Name"], "not a DNS-1123 label"),
    (["--set", "rlgen.run=" + "r" * 45], "RayJob name over 47 characters"),
    (["--set", "novalue"], "PLUGIN.OPTION=VALUE"),
    (["--set", "rlgen.verl=0.8.0"], "'0.8.0' is not one of 0.7.1, 0.9.1"),
    (["--set", "rlgen.verl_version=0.7.1"], "has no option 'verl_version'"),
    (["--set", "rlgen.gpus_per_nod=4"],
     "has no option 'gpus_per_nod' (did you mean 'gpus_per_node'?): rlgen plugins lists every option"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, expected):
    target = tmp_path / "repo"
    line = one_error_line(run_rlgen("new", str(target), *REQUIRED, *args, "--no-input"))
    assert expected in line
    assert list(tmp_path.iterdir()) == []


def test_two_plugins_for_one_slot_name_both(tmp_path):
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, "--plugin", "vllm", "--plugin", "sglang",
                                    "--no-input"))
    assert "'vllm' and 'sglang' both fill slot 'rollout'" in line
    assert list(tmp_path.iterdir()) == []


def test_non_empty_target_is_refused_untouched(tmp_path):
    target = tmp_path / "repo"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    line = one_error_line(run_rlgen("new", str(target), *REQUIRED, "--no-input"))
    assert "not empty" in line
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["repo"]


def test_missing_kustomize_binary_is_a_clear_error(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    env = {**os.environ, "PATH": str(bin_dir)}
    line = one_error_line(run_rlgen("new", str(tmp_path / "repo"), *REQUIRED, "--no-input", env=env))
    assert "no kustomize binary" in line
    assert [p.name for p in tmp_path.iterdir()] == ["bin"]


def test_required_option_is_prompted_for_or_refused():
    from rlgen.contributions import Option, PluginInfo
    from rlgen.errors import RlgenError
    from rlgen.plugin_host.discovery import Installed, discover
    from rlgen.plugin_host.selection import select

    info = PluginInfo("needs-domain", "sandbox", "test", (Option("domain", "E2B domain", required=True),))
    installed = {**discover(), "needs-domain": Installed(object(), info, "1")}
    core = {"rlgen": {"registry": REGISTRY, "git_url": GIT_URL, "git_host": "github", **POOL_ANSWERS}, "ak-storage": CORE_ANSWERS["ak-storage"]}
    with pytest.raises(RlgenError, match="a required answer is missing") as missing:
        select(installed, ["needs-domain"], core, ask=None)
    assert missing.value.items == ("--set needs-domain.domain=VALUE (E2B domain)",)
    asked = []
    typed = {"needs-domain.domain": "a.example.com"}

    def ask(plugin, opt):
        # A user at the prompt: types the domain and rlgen's install, keeps every other default.
        asked.append(f"{plugin}.{opt.name}")
        return typed.get(asked[-1], "rlgen==0.1.0" if opt.name == "install" else opt.default)

    selection = select(installed, ["needs-domain"], core, ask=ask)
    assert "needs-domain.domain" in asked and len(asked) == len(set(asked)), asked
    assert selection.answers["needs-domain"] == {"domain": "a.example.com"}


def test_missing_required_option_is_prompted_on_a_terminal(tmp_path):
    """On a real pseudo-terminal rlgen asks for the marketplace domain and records it."""
    import pty
    import sys
    import time

    target = tmp_path / "repo"
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-m", "rlgen", "new", str(target), *REQUIRED,
                                  "--plugin", "marketplace-sandbox"])
    import select

    output, answered, prompts = b"", False, 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
        if output.rstrip(b" ").endswith(b":") and output.count(b"\n") + 1 > prompts:
            # A question: the marketplace domain is the answer under test; the endpoint, the
            # sandbox image and the KubeRay namespace, asked too, keep their defaults.
            prompts = output.count(b"\n") + 1
            last = output.rsplit(b"\n", 1)[-1]
            if b"marketplace-sandbox.domain" in last:
                os.write(fd, b"sandbox.example.com\n")
                answered = True
            else:
                os.write(fd, b"\n")
    _, status = os.waitpid(pid, 0)
    assert answered, output.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, output.decode(errors="replace")
    answers = YAML(typ="safe").load((target / "rlgen.yaml").read_text())
    # The operator's namespace, asked with its default offered, is recorded as answered.
    assert answers["options"]["marketplace-sandbox"] == {"domain": "sandbox.example.com",
                                                         "kuberay_namespace": "kuberay-system",
                                                         "sandbox_image": SANDBOX_IMAGE}


def test_dataset_job_runs_commands_this_rlgen_has(generate):
    """The Job's script calls `rlgen data ...` in the data image: every flag it passes must
    exist, or the Job fails in the cluster long after the merge."""
    import shlex

    repo = generate()
    job = next(o for o in build(repo / "overlays" / "production" / "platform") if o["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    dockerfile = (repo / "images" / "data" / "Dockerfile").read_text()
    assert container["image"].rpartition(":")[0] in dockerfile
    calls = [shlex.split(line) for line in container["command"][-1].splitlines() if line.startswith("rlgen ")]
    assert [c[:3] for c in calls] == [["rlgen", "data", "prepare"], ["rlgen", "data", "upload"]]
    for call in calls:
        help_text = run_rlgen(*call[1:3], "--help").stdout
        for flag in [a for a in call if a.startswith("--")]:
            assert flag in help_text, f"{' '.join(call[:3])} has no {flag}"


def test_training_image_gets_every_plugins_packages(generate):
    """The rollout plugin names the base image; the sandbox needs fastmcp, geometry3k mathruler."""
    text = (generate("--plugin", "geometry3k", "--plugin", "sglang") / "images" / "training" / "Dockerfile").read_text()
    assert "FROM verlai/verl:sgl0512.latest\n" in text
    assert '"fastmcp>=2.3,<3"' in text and '"mathruler==0.1.0"' in text
    assert "mathruler" not in (generate() / "images" / "training" / "Dockerfile").read_text()


def test_staging_keeps_a_smaller_sandbox_pool(generate):
    def pool(env):
        objects = build(generate("--set", f"rlgen.environment={env}") / "overlays" / env / "platform")
        return next(o for o in objects if o["kind"] == "SandboxSet")["spec"]["replicas"]

    assert (pool("production"), pool("staging")) == (3, 1)


def test_the_readme_starts_with_the_first_sync_and_marks_what_syncs(repo):
    readme = (repo / "README.md").read_text()
    first_sync = readme.split("## First sync\n\n", 1)[1].split("\n## ", 1)[0]
    # Numbered steps, in order, with nothing skipped.
    numbers = re.findall(r"^### (\d+)\. ", first_sync, re.M)
    assert numbers == [str(i) for i in range(1, len(numbers) + 1)] and len(numbers) >= 5, numbers
    # Every step's link lands on a heading of this README.
    headings = {line.lstrip("#").strip() for line in readme.splitlines() if line.startswith("## ")}
    anchors = {re.sub(r"[^a-z0-9 _-]", "", h.lower()).strip().replace(" ", "-") for h in headings}
    for target in re.findall(r"\]\(#([^)]+)\)", first_sync):
        assert target in anchors, target
    assert "(#sync-flux)" in first_sync
    # The first sync comes before anything else the reader must scroll past.
    assert readme.index("## First sync") < readme.index("## What syncs where")
    tree = next(block for block in readme.split("```") if "[never synced]" in block)
    assert re.search(r"rbac/ +\[never synced\]", tree) and re.search(r"runs/ +\[synced\]", tree)
