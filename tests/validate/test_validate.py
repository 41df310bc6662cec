"""rlgen validate: clean on a generated repository; each semantic rule, broken on purpose,
gives exit code 1 and a problem naming the object."""
from __future__ import annotations

import json
import shutil

import pytest
from rlgen.tools import yamlio
from support.repos import run_rlgen


def validate(repo, *args):
    # No RLGEN_SCHEMA_DIR: rlgen's own schemas cover every generated kind.
    return run_rlgen("validate", str(repo), "--output", "json", "--offline", *args)


def edit(path, change):
    docs = yamlio.load_all(path.read_text())
    for doc in docs:
        change(doc)
    path.write_text(yamlio.dump_all(docs))


def head(doc):
    return doc["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]


def worker(doc):
    return doc["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]


def sidecar(doc):
    doc["spec"]["submissionMode"] = "SidecarMode"
    doc["spec"].pop("submitterPodTemplate", None)
    doc["spec"].pop("submitterConfig", None)


def set_trainer(repo, section, key, value):
    path = repo / "base" / "training" / "trainer.yaml"
    doc = yamlio.load(path.read_text())
    node = doc
    for part in section:
        node = node[part]
    node[key] = value
    path.write_text(yamlio.dump(doc))


def test_generated_repository_is_valid(generate):
    result = validate(generate())
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["problems"] == []


RAYJOB = ("base", "training", "rayjob.yaml")
BREAKS = {
    "submission mode": (RAYJOB, lambda d: d["spec"].__setitem__("submissionMode", "SideCarMode"), "submissionMode 'SideCarMode'"),
    "sidecar restart policy": (RAYJOB, lambda d: (sidecar(d), head(d).__setitem__("restartPolicy", "Always")), "restartPolicy Never"),
    "sidecar submitter": (RAYJOB, lambda d: (sidecar(d), d["spec"].__setitem__("submitterConfig", {"backoffLimit": 2})), "SidecarMode does not allow submitterConfig"),
    "sidecar dies on a log hiccup": (RAYJOB, sidecar, "drops on a transient disconnect"),
    "submitter without retries": (RAYJOB, lambda d: d["spec"]["submitterConfig"].__setitem__("backoffLimit", 0), "one dropped log stream"),
    "capabilities of a non-root container": (RAYJOB, lambda d: worker(d)["containers"][0]["securityContext"].__setitem__(
        "capabilities", {"add": ["IPC_LOCK"]}), "runs as non-root and adds IPC_LOCK"),
    "ttl without shutdown": (RAYJOB, lambda d: d["spec"].update(shutdownAfterJobFinishes=False, ttlSecondsAfterFinished=600),
                             "needs shutdownAfterJobFinishes"),
    "delete self": (RAYJOB, lambda d: d["spec"].__setitem__("deletionStrategy", {"deletionRules": [
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED"}}]}), "DeleteSelf"),
    "gpu count": (RAYJOB, lambda d: worker(d)["containers"][0]["resources"]["limits"].__setitem__("nvidia.com/gpu", "4"), "request 4 GPUs"),
    "gpu head": (RAYJOB, lambda d: head(d)["containers"][0]["resources"].__setitem__("limits", {"nvidia.com/gpu": "8"}), "request 16 GPUs"),
    "autoscaled workers": (RAYJOB, lambda d: d["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].__setitem__("maxReplicas", 4), "differ: a verl run has a fixed number of GPU nodes"),
    "cpus per gpu": (RAYJOB, lambda d: worker(d)["containers"][0]["resources"]["limits"].__setitem__("cpu", "16"), "give Ray 16 CPUs for 8 GPUs"),
    "missing pvc": (RAYJOB, lambda d: head(d)["volumes"][1]["persistentVolumeClaim"].__setitem__("claimName", "rl-modles"), "PersistentVolumeClaim 'rl-modles'"),
    "latest image": (RAYJOB, lambda d: head(d)["containers"][0].__setitem__("image", "busybox:latest"), "not pinned"),
}


@pytest.mark.parametrize("case", BREAKS, ids=list(BREAKS))
def test_each_rayjob_rule(repo, case):
    parts, change, expected = BREAKS[case]
    edit(repo.joinpath(*parts), change)
    result = validate(repo)
    assert result.returncode == 1, result.stdout + result.stderr
    problems = json.loads(result.stdout)["problems"]
    assert any(expected in p["message"] and p["obj"].startswith("RayJob/rl-training/baseline-") for p in problems), problems


@pytest.mark.parametrize("edits, expected", [
    ([(("actor_rollout_ref", "rollout"), "tensor_model_parallel_size", 3)], "does not divide"),
    ([(("actor_rollout_ref", "rollout"), "n", 3), (("data",), "train_batch_size", 65)], "is not divisible by 8 GPUs"),
    ([(("data",), "train_batch_size", 32)], "smaller than actor_rollout_ref.actor.ppo_mini_batch_size"),
    ([(("trainer",), "n_gpus_per_node", 4)], "trainer expects"),
])
def test_trainer_rules(repo, edits, expected):
    for section, key, value in edits:
        set_trainer(repo, section, key, value)
    result = validate(repo)
    assert result.returncode == 1
    assert any(expected in p["message"] and p["obj"].startswith("RayJob/") for p in json.loads(result.stdout)["problems"])


def test_tool_agent_rows_without_tools(repo):
    """gsm8k rows name tool_agent; a trainer config without tools gives them none to call."""
    set_trainer(repo, ("actor_rollout_ref", "rollout", "multi_turn"), "tool_config_path", None)
    result = validate(repo)
    assert result.returncode == 1
    assert any("gsm8k rows run tool_agent (its rows' agent_name)" in p["message"] and p["obj"].startswith("ConfigMap/")
               for p in json.loads(result.stdout)["problems"])


def test_tool_answers_longer_than_verl_passes(repo):
    """verl cuts every tool answer longer than multi_turn.max_tool_response_length characters: a run
    that lowers it, or a tool config that lets a tool answer more, is out of step."""
    limit = "actor_rollout_ref.rollout.multi_turn.max_tool_response_length"
    assert run_rlgen("run", "set", "baseline", f"{limit}=256", cwd=repo).returncode == 0
    result = validate(repo)
    assert result.returncode == 1, result.stdout + result.stderr
    problems = json.loads(result.stdout)["problems"]
    assert [p["source"] for p in problems if "tool run_code_once answers up to 4000 characters" in p["message"]
            and f"{limit} is 256" in p["message"]] == ["runs/baseline/run.yaml"], problems
    assert run_rlgen("run", "set", "baseline", f"{limit}=4000", cwd=repo).returncode == 0
    assert validate(repo).returncode == 0
    tools = repo / "base" / "training" / "tool_config.yaml"
    doc = yamlio.load(tools.read_text())
    doc["tools"][0]["config"]["max_output_chars"] = 8000
    tools.write_text(yamlio.dump(doc))
    problems = json.loads(validate(repo).stdout)["problems"]
    assert any("answers up to 8000 characters" in p["message"] and f"{limit} is 4000" in p["message"]
               for p in problems), problems


def test_json_config_and_mcp_url(repo):
    (repo / "base" / "training" / "mcp_server.json").write_text('{"mcpServers": {"sandbox": {"url": "http://x"}}} # no')
    problems = json.loads(validate(repo).stdout)["problems"]
    assert any("mcp_server.json is not valid JSON" in p["message"] and p["obj"].startswith("ConfigMap/") for p in problems)
    (repo / "base" / "training" / "mcp_server.json").write_text(
        json.dumps({"mcpServers": {"sandbox": {"url": "http://mcp-sandbox.sandbox-system.svc.cluster.local:9000/mcp"}}}))
    problems = json.loads(validate(repo).stdout)["problems"]
    assert any("port 9000" in p["message"] for p in problems)


def test_secret_reference_must_be_rendered_or_external(repo):
    answers = yamlio.load((repo / "rlgen.yaml").read_text())
    answers["external"]["secrets"].remove("oss-credentials")
    (repo / "rlgen.yaml").write_text(yamlio.dump(answers))
    problems = json.loads(validate(repo).stdout)["problems"]
    assert any("Secret 'oss-credentials'" in p["message"] and p["obj"].startswith("Job/") for p in problems)


def test_schema_errors_name_the_field(repo):
    edit(repo.joinpath(*RAYJOB), lambda d: d["spec"].__setitem__("entrypointt", "x"))
    result = validate(repo)
    assert result.returncode == 1
    assert any("entrypointt" in p["message"] for p in json.loads(result.stdout)["problems"])


def test_flux_substitution_rule(repo):
    flux = repo / "clusters" / "production" / "runs.yaml"
    edit(flux, lambda d: d["spec"].__setitem__("postBuild", {"substitute": {"cluster": "prod"}}))
    (repo / "runs" / "baseline" / "run.yaml").write_text(
        (repo / "runs" / "baseline" / "run.yaml").read_text() + "data:\n  train_files: ${DATA}/train.parquet\n")
    problems = json.loads(validate(repo).stdout)["problems"]
    assert any("${DATA}" in p["message"] for p in problems)


def test_rayjob_name_rule(repo):
    kust = repo / "runs" / "baseline" / "kustomization.yaml"
    kust.write_text(kust.read_text().replace('"value": "baseline-', '"value": "Baseline-x-' + "y" * 40 + "-"))
    problems = json.loads(validate(repo).stdout)["problems"]
    assert any("RayJob name" in p["message"] and p["obj"].startswith("RayJob/rl-training/Baseline-x")
               for p in problems), problems


def test_alb_listen_ports_need_an_albconfig_listener(generate, tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(generate("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.example.com"),
                    copy)
    assert validate(copy).returncode == 0
    albconfig = next(p for p in (copy / "components" / "marketplace-sandbox" / "infrastructure").glob("*.yaml")
                     if "kind: AlbConfig" in p.read_text())
    edit(albconfig, lambda d: d["spec"].__setitem__("listeners", [l for l in d["spec"]["listeners"] if l["port"] != 443]))
    result = validate(copy)
    assert result.returncode == 1
    assert any("HTTPS:443 has no AlbConfig listener" in p["message"] and p["obj"].startswith("Ingress/")
               for p in json.loads(result.stdout)["problems"])


def test_service_account_and_configmap_references(repo):
    job = repo / "base" / "platform" / "dataset-job.yaml"
    edit(job, lambda d: d["spec"]["template"]["spec"].__setitem__("serviceAccountName", "dataset-pipline"))
    edit(repo.joinpath(*RAYJOB), lambda d: head(d)["volumes"][0]["configMap"].__setitem__("name", "trainer-confg"))
    problems = json.loads(validate(repo).stdout)["problems"]
    assert any("ServiceAccount 'dataset-pipline'" in p["message"] and p["obj"].startswith("Job/") for p in problems)
    assert any("ConfigMap 'trainer-confg'" in p["message"] and p["obj"].startswith("RayJob/")
               for p in problems), problems
