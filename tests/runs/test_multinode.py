"""Runs of many GPU nodes: the size in run.yaml shapes the RayJob, verl's batch rules guard it,
and the network and gang-scheduling options reach every GPU pod. Real git, kustomize, Hydra."""
from __future__ import annotations

import json
import os

import pytest
from rlgen.naming import dns1035_label_error
from rlgen.verl import batch_rules
from ruamel.yaml import YAML
from support.repos import (
    REQUIRED,
    build,
    commit_all,
    git,
    ok,
    one_error_line,
    pinned,
    rlgen_in,
    run_rlgen,
    schema_dir,
)
from support.verl_config import compose_run, mounted_configs, unknown_keys, verl_defaults

SAFE = YAML(typ="safe")


def rendered(repo, run: str) -> tuple[dict, dict]:
    objects = build(repo / "runs" / run)
    return (next(o for o in objects if o["kind"] == "RayJob"), next(o for o in objects if o["kind"] == "ConfigMap"))


def pods(rayjob: dict) -> list[tuple[dict, int]]:
    """(pod template, pods) for the head and each worker group."""
    cluster = rayjob["spec"]["rayClusterSpec"]
    out = [(cluster["headGroupSpec"]["template"], 1)]
    out += [(g["template"], g["replicas"] * g.get("numOfHosts", 1)) for g in cluster.get("workerGroupSpecs", [])]
    return out


def gpus(template: dict) -> int:
    return sum(int(c["resources"]["limits"].get("nvidia.com/gpu", 0)) for c in template["spec"]["containers"])


def validate(repo):
    env = {**os.environ, "RLGEN_SCHEMA_DIR": str(schema_dir())}
    result = run_rlgen("validate", str(repo), "--output", "json", env=env)
    return result.returncode, json.loads(result.stdout)["problems"]


def state(repo) -> tuple:
    files = {p.relative_to(repo).as_posix(): p.read_bytes()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}
    return files, git(repo, "branch", "-a"), git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")


def test_a_four_node_run_requests_32_gpus_and_validates(repo):
    baseline = (repo / "runs" / "baseline" / "kustomization.yaml").read_bytes()
    ok(rlgen_in(repo, "run", "new", "big", "--set", "trainer.nnodes=4"))
    rayjob, configmap = rendered(repo, "big")
    assert sum(gpus(t) * n for t, n in pods(rayjob)) == 32
    group = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (4, 4, 4)
    assert gpus(rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]) == 0
    assert SAFE.load(configmap["data"]["run.yaml"])["trainer"]["nnodes"] == 4
    name = rayjob["metadata"]["name"]
    assert name == pinned(repo, "big") and len(name) <= 47 and dns1035_label_error(name, 47) is None
    assert validate(repo) == (0, [])
    # Another run's RayJob keeps its name: its files are untouched.
    assert (repo / "runs" / "baseline" / "kustomization.yaml").read_bytes() == baseline


def test_every_pod_shares_image_volumes_shm_and_security_and_the_workers_go_to_the_pool(repo):
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=2"))
    templates = [t["spec"] for t, _ in pods(rendered(repo, "big")[0])]
    assert len(templates) == 2
    assert templates[0]["volumes"] == templates[1]["volumes"]
    # Only the GPU workers go to the pool: they tolerate its taint and select ACK's label of it.
    assert "tolerations" not in templates[0] and "nodeSelector" not in templates[0]
    assert templates[1]["tolerations"] == [{"key": "node-role.alibabacloud.com/lingjun", "operator": "Exists",
                                            "effect": "NoSchedule"}]
    assert templates[1]["nodeSelector"] == {"alibabacloud.com/lingjun-worker": "true"}
    head, worker = (t["containers"][0] for t in templates)
    for field in ("image", "securityContext", "volumeMounts", "env"):
        assert head[field] == worker[field]
    assert {"name": "shm", "mountPath": "/dev/shm"} in worker["volumeMounts"]


def test_a_world_that_breaks_a_verl_batch_rule_is_refused(repo):
    before = state(repo)
    line = one_error_line(rlgen_in(repo, "run", "new", "bad", "--set", "trainer.nnodes=3",
                                   "--set", "data.train_batch_size=100"))
    assert "data.train_batch_size x actor_rollout_ref.rollout.n = 100 x 16 = 1600 is not divisible by 24 GPUs" in line
    assert state(repo) == before
    line = one_error_line(rlgen_in(repo, "run", "set", "baseline", "actor_rollout_ref.rollout.tensor_model_parallel_size=16"))
    assert "tensor_model_parallel_size x data_parallel_size x pipeline_model_parallel_size = 16 x 1 x 1" in line
    assert state(repo) == before


def test_a_multi_node_config_composes_with_the_pinned_verl(repo, tmp_path):
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=4",
                "--set", "trainer.n_gpus_per_node=4"))
    configs = tmp_path / "configs"
    configs.mkdir()
    cfg = compose_run(*mounted_configs(repo, "big", configs))
    assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (4, 4)
    from omegaconf import OmegaConf

    assert unknown_keys(OmegaConf.to_container(cfg), verl_defaults()) == []
    rayjob = rendered(repo, "big")[0]
    assert sum(gpus(t) * n for t, n in pods(rayjob)) == 16


def test_validate_reports_a_hand_edited_size(repo):
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=4"))
    path = repo / "runs" / "big" / "run.yaml"
    path.write_text(path.read_text().replace("nnodes: 4", "nnodes: 2"))
    commit_all(repo, "hand edit: the RayJob keeps 4 nodes")
    code, problems = validate(repo)
    assert code == 1
    assert [p["message"] for p in problems if p["obj"].startswith("RayJob/rl-training/big-")] == [
        "the RayJob's pods request 32 GPUs but the trainer expects n_gpus_per_node x nnodes = 8 x 2 = 16"]


def test_resize_renames_the_run_and_diff_says_so(repo):
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=4"))
    old = pinned(repo, "big")
    assert "unchanged" in ok(rlgen_in(repo, "run", "set", "big", "trainer.nnodes=4", "-o", "table"))
    git(repo, "branch", "before-resize")
    ok(rlgen_in(repo, "run", "set", "big", "trainer.nnodes=2"))
    assert pinned(repo, "big") != old
    out = ok(rlgen_in(repo, "diff", "--base", "before-resize", "--head", "HEAD", "-o", "table"))
    assert "resized: 4 x 8 -> 2 x 8 GPU nodes x GPUs (32 -> 16 GPUs)" in out
    markdown = ok(rlgen_in(repo, "diff", "--base", "before-resize", "--head", "HEAD", "-o", "markdown"))
    assert "resized: 4 x 8 → 2 x 8" in markdown


def test_run_list_shows_each_runs_size(repo):
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=16"))
    lines = ok(rlgen_in(repo, "run", "list", "-o", "table")).splitlines()
    assert lines[0].split() == ["RUN", "RAYJOB", "SIZE", "CKPT/SAVE", "CHANGED", "KEYS"]
    assert lines[1].split()[2] == "1x8" and lines[2].split()[2] == "16x8"


@pytest.mark.parametrize("network, resource, host_network, nccl", [
    ("rdma", "rdma/hca", True, {"NCCL_IB_HCA": "mlx5", "NCCL_IB_GID_INDEX": "3"}),
    ("erdma", "aliyun/erdma", None, {"NCCL_IB_HCA": "erdma", "NCCL_SOCKET_IFNAME": "eth0"}),
])
def test_the_network_option_reaches_every_gpu_pod(generate, tmp_path, network, resource, host_network, nccl):
    repo = generate("--set", f"rlgen.network={network}", "--set", "rlgen.nnodes=2")
    rayjob = rendered(repo, "baseline")[0]
    (head, _), (worker, replicas) = pods(rayjob)
    assert replicas == 2
    container = worker["spec"]["containers"][0]
    assert container["resources"]["limits"][resource] == "1"
    assert worker["spec"].get("hostNetwork") is host_network
    if host_network:
        assert worker["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert nccl.items() <= env.items()
    # The head runs no NCCL: no device, no host network.
    assert resource not in head["spec"]["containers"][0]["resources"]["limits"]
    assert "hostNetwork" not in head["spec"]
    assert validate(repo) == (0, [])


def test_tcp_is_the_default_and_adds_nothing(generate):
    worker = pods(rendered(generate(), "baseline")[0])[1][0]
    assert "hostNetwork" not in worker["spec"]
    assert not [e for e in worker["spec"]["containers"][0]["env"] if e["name"].startswith("NCCL_")]


def test_volcano_gang_scheduling_names_queue_and_priority(generate):
    repo = generate("--set", "rlgen.gang_scheduling=volcano", "--set", "rlgen.queue=team-a",
                    "--set", "rlgen.priority_class=high")
    labels = rendered(repo, "baseline")[0]["metadata"]["labels"]
    assert labels == {"volcano.sh/queue-name": "team-a", "ray.io/priority-class-name": "high"}
    assert "--batch-scheduler=volcano" in (repo / "base" / "training" / "rayjob.yaml").read_text()


def test_coscheduling_labels_every_pod_with_its_own_pod_group(generate, tmp_path):
    import shutil

    repo = shutil.copytree(generate("--set", "rlgen.gang_scheduling=coscheduling"), tmp_path / "repo", symlinks=True)
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=4"))
    for run, members in (("baseline", "2"), ("big", "5")):
        rayjob = rendered(repo, run)[0]
        for template, _ in pods(rayjob):
            assert template["metadata"]["labels"] == {
                "pod-group.scheduling.sigs.k8s.io/name": rayjob["metadata"]["name"],
                "pod-group.scheduling.sigs.k8s.io/min-available": members}
    assert validate(repo) == (0, [])


@pytest.mark.parametrize("changes, expected", [
    ({}, []),
    # verl's worker normalization: 64 x 5 / 16 = 20 per GPU, a multiple of 4 but not of 8.
    ({"trainer": {"nnodes": 2}, "actor_rollout_ref": {"rollout": {"n": 5}, "actor": {"ppo_micro_batch_size_per_gpu": 8}}},
     ["actor_rollout_ref.actor.ppo_mini_batch_size x actor_rollout_ref.rollout.n / (GPUs / ulysses_sequence_parallel_size) "
      "= 64 x 5 / (16 / 1) = 20 per GPU is not a multiple of actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu 8 "
      "(verl actor worker normalization)"]),
    ({"trainer": {"nnodes": 2}, "actor_rollout_ref": {"rollout": {"n": 5}, "actor": {"ppo_micro_batch_size_per_gpu": 4}}}, []),
    ({"trainer": {"nnodes": 64}, "actor_rollout_ref": {"rollout": {"n": 1}}},
     ["data.train_batch_size x actor_rollout_ref.rollout.n = 256 x 1 = 256 is not divisible by 512 GPUs "
      "(trainer.nnodes x trainer.n_gpus_per_node = 64 x 8); verl validate_config: real_train_batch_size must be "
      "divisible by the world size",
      "actor_rollout_ref.actor.ppo_mini_batch_size x actor_rollout_ref.rollout.n / (GPUs / ulysses_sequence_parallel_size) "
      "= 64 x 1 / (512 / 1) is 0 per GPU (verl actor worker: ppo_mini_batch_size should be larger than 0 after "
      "normalization)"]),
    # A replica spanning nodes must span whole nodes.
    ({"trainer": {"nnodes": 2}, "actor_rollout_ref": {"rollout": {"tensor_model_parallel_size": 12}}},
     ["a rollout replica of actor_rollout_ref.rollout.tensor_model_parallel_size x data_parallel_size x "
      "pipeline_model_parallel_size = 12 x 1 x 1 = 12 GPUs does not divide the 16 GPUs of trainer.nnodes x "
      "trainer.n_gpus_per_node = 2 x 8 (verl worker: rollout world_size is not divisible by infer_world_size)"]),
    ({"trainer": {"nnodes": 3}, "actor_rollout_ref": {"rollout": {"tensor_model_parallel_size": 12, "n": 3}}},
     ["a rollout replica of actor_rollout_ref.rollout.tensor_model_parallel_size x data_parallel_size x "
      "pipeline_model_parallel_size = 12 x 1 x 1 = 12 GPUs spans nodes but is no multiple of "
      "trainer.n_gpus_per_node 8 (verl rollout replica: world_size must be divisible by gpus_per_node)"]),
    ({"actor_rollout_ref": {"actor": {"ppo_micro_batch_size": 8}}},
     ["actor_rollout_ref.actor.ppo_micro_batch_size and actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu are both "
      "set: remove the deprecated actor_rollout_ref.actor.ppo_micro_batch_size (verl refuses both)"]),
    # The deprecated global micro batch: verl divides it among the GPUs.
    ({"trainer": {"nnodes": 2}, "actor_rollout_ref": {"actor": {"ppo_micro_batch_size": 8, "ppo_micro_batch_size_per_gpu": None}}},
     ["actor_rollout_ref.actor.ppo_micro_batch_size x ulysses_sequence_parallel_size = 8 x 1 is smaller than the "
      "16 GPUs (verl actor config: ppo_micro_batch_size * ulysses_sequence_parallel_size must be >= n_gpus)"]),
    # Dynamic batch sizes skip verl's divisibility checks, not the normalization.
    ({"trainer": {"nnodes": 3}, "data": {"train_batch_size": 100}, "actor_rollout_ref": {"actor": {"use_dynamic_bsz": True}}}, []),
])
def test_verl_batch_rules(changes, expected):
    """verl 0.7.1's rules (its FSDP worker's normalization); 0.9's split is tested in
    tests/verl/test_trainer_config.py."""
    from rlgen import sources
    from rlgen.verl import releases
    from rlgen.verl.trainer_config import deep_merge

    config = deep_merge(sources.load("base/training/trainer.yaml"), changes)
    assert batch_rules.problems(config, releases.get("0.7.1")) == expected


def test_the_readme_explains_sizing_rdma_gang_scheduling_and_pending_gpus(generate):
    text = (generate() / "README.md").read_text()
    section = text.split("## Sizing a run")[1].split("\n## ")[0]
    for needed in ("trainer.nnodes", "1 x 8", "rlgen validate", "ack-rdma-device-plugin", "rdma/hca",
                   "aliyun/erdma", "--batch-scheduler=volcano", "pod-group.scheduling.sigs.k8s.io", "Pending",
                   "Gang scheduling is off"):
        assert needed in section, needed


def test_the_entrypoint_waits_for_the_runs_gpus(repo, tmp_path):
    """The wait script reads the size verl will compose: base config, then the run's file."""
    import runpy
    import sys
    import types

    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=4"))
    rayjob, configmap = rendered(repo, "big")
    assert rayjob["spec"]["entrypoint"].startswith("python3 /var/configs/wait_for_gpus.py && ")
    for key, text in configmap["data"].items():
        (tmp_path / key).write_text(text)
    fake_ray = types.SimpleNamespace(init=lambda: None, shutdown=lambda: None)
    sys.modules["ray"] = fake_ray
    try:
        script = runpy.run_path(str(tmp_path / "wait_for_gpus.py"))
    finally:
        del sys.modules["ray"]
    assert script["size"]() == 32


def test_a_run_may_name_its_own_volcano_queue_and_keeps_it(generate, tmp_path):
    import shutil

    repo = shutil.copytree(generate("--set", "rlgen.gang_scheduling=volcano"), tmp_path / "repo", symlinks=True)
    ok(rlgen_in(repo, "run", "new", "team-b", "--no-branch", "--queue", "team-b", "--priority-class", "low"))
    labels = {"volcano.sh/queue-name": "team-b", "ray.io/priority-class-name": "low"}
    assert rendered(repo, "team-b")[0]["metadata"]["labels"] == labels
    assert rendered(repo, "baseline")[0]["metadata"]["labels"] == {"volcano.sh/queue-name": "default"}
    ok(rlgen_in(repo, "run", "set", "team-b", "trainer.total_epochs=2"))
    assert rendered(repo, "team-b")[0]["metadata"]["labels"] == labels
    assert validate(repo) == (0, [])


def test_a_queue_without_volcano_is_refused(repo):
    before = state(repo)
    assert "need rlgen.gang_scheduling=volcano" in one_error_line(rlgen_in(repo, "run", "new", "x", "--queue", "a"))
    assert state(repo) == before


def test_rlgen_new_refuses_a_repository_size_verl_would_refuse(tmp_path):
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), "--no-input", *REQUIRED, "--set", "rlgen.nnodes=3"))
    assert "= 4096 is not divisible by 24 GPUs" in line
    assert not (tmp_path / "r").exists()


def test_validate_reports_a_pod_group_that_waits_for_the_wrong_number_of_pods(generate, tmp_path):
    import shutil

    repo = shutil.copytree(generate("--set", "rlgen.gang_scheduling=coscheduling"), tmp_path / "repo", symlinks=True)
    path = repo / "base" / "training" / "rayjob.yaml"
    path.write_text(path.read_text().replace("min-available: '2'", "min-available: '3'", 1))
    code, problems = validate(repo)
    assert code == 1
    assert "pod-group min-available 3 but the RayJob has 2 pods (head and GPU workers)" in [p["message"] for p in problems]


def test_the_entrypoint_stops_when_a_gpu_node_cannot_pin_memory_for_rdma(generate, tmp_path):
    """Capabilities added to the non-root GPU pods would never take effect, so the pods carry
    none, and the wait script names each RDMA node whose memlock limit is not unlimited."""
    import resource
    import runpy
    import sys
    import types

    repo = generate("--set", "rlgen.network=rdma", "--set", "rlgen.nnodes=2")
    (_, _), (worker, _) = pods(rendered(repo, "baseline")[0])
    assert worker["spec"]["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    (tmp_path / "wait_for_gpus.py").write_text((repo / "base" / "training" / "wait_for_gpus.py").read_text())
    sys.modules["ray"] = types.SimpleNamespace(init=lambda: None, shutdown=lambda: None)
    try:
        script = runpy.run_path(str(tmp_path / "wait_for_gpus.py"))
    finally:
        del sys.modules["ray"]
    unlimited = resource.RLIM_INFINITY
    assert script["memlock_problems"]([("gpu-0", "mlx5", unlimited), ("gpu-1", "", 65536)]) == []
    (problem,) = script["memlock_problems"]([("gpu-0", "mlx5", unlimited), ("gpu-1", "mlx5", 65536)])
    assert problem.startswith("gpu-1: memlock limit 65536 bytes, RDMA needs unlimited")
