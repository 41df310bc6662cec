"""Which checkpoint a run's RayJob loads, as each verl release decides it: the generated
repository's own ``resume.py`` (the pod's start script) run on what the run's rendered RayJob
and ConfigMap give it, then verl's ``find_latest_ckpt_path`` and its trainer's resume rule
(``_load_checkpoint``: auto loads the newest ``global_step_N`` of ``default_local_dir``,
resume_path loads ``resume_from_path``) over folders laid out as verl writes them, with the FSDP
checkpoint manager's own file names (``model_world_size_{W}_rank_{r}.pt``: one file per rank).

verl is loaded from ``.verl/<version>`` without its package ``__init__`` files (they import
torch and ray); of torch, its checkpoint manager's module needs only
``torch.distributed.is_initialized`` and the names of its annotations.
"""
from __future__ import annotations

import ast
import json
import os
import runpy
import shutil
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
from rlgen.verl import releases
from support.repos import build, git, ok, one_error_line, pinned, rlgen_in
from support.verl_config import verl_root

MOUNT = "/var/checkpoints"
LR = "actor_rollout_ref.actor.optim.lr"


@pytest.fixture(params=releases.SUPPORTED)
def verl(request, generate, tmp_path):
    """(verl's checkpoint_manager module, file-name templates of its FSDP manager, a repository)."""
    version = request.param
    root = verl_root(version)
    # numpy, which verl's module imports, loads once per process: it stays after the test.
    __import__("numpy")
    saved_modules = dict(sys.modules)
    for name in [n for n in sys.modules if n.split(".")[0] in ("verl", "torch", "transformers")]:
        del sys.modules[name]
    for package in ("verl", "verl.utils", "verl.utils.checkpoint"):
        module = types.ModuleType(package)
        module.__path__ = [str(root / package.replace(".", "/"))]
        sys.modules[package] = module
    torch = types.ModuleType("torch")
    torch.distributed = SimpleNamespace(is_initialized=lambda: False)
    # Only its annotations name these.
    torch.optim = SimpleNamespace(Optimizer=object, lr_scheduler=SimpleNamespace(LRScheduler=object))
    sys.modules.update({"torch": torch, "torch.distributed": torch.distributed})
    sys.modules["transformers"] = SimpleNamespace(PreTrainedTokenizer=object, ProcessorMixin=object)
    sys.modules["verl.trainer"] = types.ModuleType("verl.trainer")
    sys.modules["verl.trainer.config"] = SimpleNamespace(CheckpointConfig=object)
    sys.modules["verl.utils.device"] = SimpleNamespace(get_device_name=None, get_torch_device=None,
                                                       is_device_available=None)
    try:
        manager = __import__("verl.utils.checkpoint.checkpoint_manager", fromlist=["x"])
        fsdp = root / "verl" / "utils" / "checkpoint" / "fsdp_checkpoint_manager.py"
        repo = shutil.copytree(generate("--set", f"rlgen.verl={version}"), tmp_path / "repo", symlinks=True)
        yield manager, shard_names(fsdp), repo
    finally:
        sys.modules.clear()
        sys.modules.update(saved_modules)


def shard_names(source: Path) -> list[str]:
    """The f-strings of verl's FSDP checkpoint manager that name a rank's files."""
    found = {ast.unparse(node) for node in ast.walk(ast.parse(source.read_text()))
             if isinstance(node, ast.JoinedStr) and "_world_size_" in ast.unparse(node)}
    assert {n.split("_world_size_")[0].lstrip("f'\"") for n in found} == {"model", "optim", "extra_state"}, found
    return sorted(found)


def files_of(names: list[str], world: int) -> set[str]:
    return {eval(n, {"self": SimpleNamespace(world_size=world, rank=r)}) for n in names for r in range(world)}


def save(manager, names, folder: Path, step: int, world: int) -> None:
    """What a RayJob of ``world`` GPUs leaves after its save at ``step``: each rank's shards under
    ``global_step_N/actor``, the dataloader's state, then the tracker file verl writes last."""
    actor = folder / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True)
    for name in files_of(names, world):
        (actor / name).write_bytes(b"")
    (folder / f"global_step_{step}" / "data.pt").write_bytes(b"")
    Path(manager.get_checkpoint_tracker_filename(str(folder))).write_text(str(step))


def rendered(repo: Path, run: str) -> tuple[dict, dict]:
    objects = build(repo / "runs" / run)
    job = next(o for o in objects if o["kind"] == "RayJob")
    configmap = next(o for o in objects if o["kind"] == "ConfigMap")
    return job, configmap


def start(manager, repo: Path, run: str, volume: Path) -> tuple[int, int, Path | None]:
    """A RayJob of ``run`` starting on ``volume`` (the checkpoints volume): the step verl resumes
    from (0: from scratch), the world size, and the folder it saves to. ``resume.py`` runs as the
    pod runs it, on the ConfigMap's files and the head's environment; verl's rule picks the step."""
    job, configmap = rendered(repo, run)
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in head.get("env") or []}
    mounted = volume.parent / "configs"  # the ConfigMap as the pod mounts it
    mounted.mkdir(exist_ok=True)
    for key, text in configmap["data"].items():
        (mounted / key).write_text(text)
    script = runpy.run_path(str(mounted / "resume.py"))
    trainer = script["trainer_config"]()
    local = {k: str(volume / os.path.relpath(v, MOUNT)) if k in ("default_local_dir", "resume_from_path") else v
             for k, v in trainer.items()}
    args = dict(a.split("=", 1) for a in script["overrides"](local, env["RLGEN_RAYJOB"]))
    world = int(trainer.get("nnodes", 1)) * int(trainer.get("n_gpus_per_node", 8))
    own = Path(args["trainer.default_local_dir"])
    if args["trainer.resume_mode"] == "auto":
        step_folder = manager.find_latest_ckpt_path(str(own))
        if step_folder is None:
            return 0, world, own
    else:
        step_folder = args["trainer.resume_from_path"]
    return int(step_folder.split("global_step_")[-1]), world, own


def loads(names, volume: Path, step_folder: Path, world: int) -> bool:
    """Whether every rank of ``world`` finds the files verl's load_checkpoint opens."""
    return all((step_folder / "actor" / n).is_file() for n in files_of(names, world))


def test_a_retry_resumes_and_every_new_rayjob_starts_from_step_0(verl, tmp_path):
    manager, names, repo = verl
    volume = tmp_path / "oss"
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", f"{LR}=3e-6"))
    step, world, first = start(manager, repo, "big", volume)
    assert step == 0 and world == 8
    save(manager, names, first, 20, world)
    # A retry of the same RayJob (KubeRay's backoffLimit): the same folder, the newest step, all shards.
    step, world, again = start(manager, repo, "big", volume)
    assert (step, again) == (20, first) and loads(names, volume, first / "global_step_20", world)

    # The size changed: a new RayJob, a new folder, step 0; the old shards would not have fit.
    ok(rlgen_in(repo, "run", "set", "big", "trainer.nnodes=4"))
    step, world, resized = start(manager, repo, "big", volume)
    assert (step, world) == (0, 32) and resized != first and resized.parent == first.parent
    assert not loads(names, volume, first / "global_step_20", 32)
    assert (first / "global_step_20").is_dir()  # rlgen deletes no checkpoint

    # Another key of a finished run: a new RayJob starts anew too.
    save(manager, names, resized, 5, 32)
    ok(rlgen_in(repo, "run", "set", "big", f"{LR}=1e-6"))
    step, _, later = start(manager, repo, "big", volume)
    assert step == 0 and later not in (first, resized)

    # The run removed and made again as it was: another root, never the old run's checkpoints.
    ok(rlgen_in(repo, "run", "rm", "big", "--no-branch"))
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", f"{LR}=3e-6"))
    step, _, reused = start(manager, repo, "big", volume)
    assert step == 0 and reused.parent != first.parent and reused.parent.parent == volume / "big"


def test_a_second_sweep_of_one_name_starts_from_step_0(verl, tmp_path):
    manager, names, repo = verl
    volume = tmp_path / "oss"
    sweep = ("run", "sweep", "lr", "--no-branch", "--grid", f"{LR}=1e-6,3e-6")
    ok(rlgen_in(repo, *sweep))
    for run in ("lr-1", "lr-2"):
        step, world, folder = start(manager, repo, run, volume)
        save(manager, names, folder, 100, world)
    ok(rlgen_in(repo, "run", "rm", "--sweep", "lr", "--no-branch"))
    ok(rlgen_in(repo, *sweep))
    assert [start(manager, repo, run, volume)[0] for run in ("lr-1", "lr-2")] == [0, 0]


def test_a_sweep_resumed_from_a_run_starts_each_point_at_its_step(verl, tmp_path):
    """A learning-rate sweep over a warmed-up run: each point continues from the run's newest
    checkpoint, in a folder of its own; a point of another world size is refused before anything is written."""
    manager, names, repo = verl
    volume = tmp_path / "oss"
    ok(rlgen_in(repo, "run", "new", "warm", "--no-branch"))
    _, world, source = start(manager, repo, "warm", volume)
    save(manager, names, source, 30, world)
    before = git(repo, "rev-parse", "HEAD")
    line = one_error_line(rlgen_in(repo, "run", "sweep", "big", "--no-branch", "--grid", "trainer.nnodes=1,2",
                                   "--resume-from", "warm"))
    assert "--resume-from warm" in line and "world size" in line, line
    assert git(repo, "rev-parse", "HEAD") == before and git(repo, "status", "--porcelain") == ""

    ok(rlgen_in(repo, "run", "sweep", "lr", "--no-branch", "--grid", f"{LR}=1e-6,3e-6", "--resume-from", "warm"))
    assert "continues from the newest checkpoint of run warm" in git(repo, "log", "-1", "--format=%B")
    folders = []
    for run in ("lr-1", "lr-2"):
        step, world, own = start(manager, repo, run, volume)
        assert step == 30 and own != source and loads(names, volume, source / "global_step_30", world)
        folders.append(own)
    assert folders[0] != folders[1]


def test_resume_from_continues_only_where_world_size_and_model_match(verl, tmp_path):
    manager, names, repo = verl
    volume = tmp_path / "oss"
    ok(rlgen_in(repo, "run", "new", "base", "--no-branch"))
    _, world, source = start(manager, repo, "base", volume)
    save(manager, names, source, 40, world)

    before = git(repo, "rev-parse", "HEAD"), pinned(repo, "base")
    for args, refusal in ((("run", "set", "base", "trainer.nnodes=2", "--resume-from", "base"), "world size is 16 here, 8"),
                          (("run", "new", "other", "--no-branch", "--set", "actor_rollout_ref.model.path=/var/models/Qwen2.5-7B",
                            "--resume-from", "base"), "actor_rollout_ref.model.path")):
        line = one_error_line(rlgen_in(repo, *args))
        assert "--resume-from base" in line and refusal in line, line
        assert (git(repo, "rev-parse", "HEAD"), pinned(repo, "base")) == before
        assert git(repo, "status", "--porcelain") == ""

    # Same world size and model: the new RayJob continues from the source's newest step...
    out = ok(rlgen_in(repo, "run", "set", "base", f"{LR}=2e-6", "--resume-from", "base", "-o", "table"))
    assert "continues from" in out
    diff = json.loads(ok(rlgen_in(repo, "diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "json")))
    assert diff["restarts"] == f"base continues from {MOUNT}/{source.relative_to(volume)} (--resume-from)"
    step, world, own = start(manager, repo, "base", volume)
    assert step == 40 and own != source and loads(names, volume, source / "global_step_40", world)
    # ...and once it saved, its own retry resumes from its own folder.
    save(manager, names, own, 60, world)
    assert start(manager, repo, "base", volume)[0] == 60
    # A later change without the option starts from step 0 again, and says so.
    out = ok(rlgen_in(repo, "run", "set", "base", f"{LR}=4e-6"))
    assert "Restarts from step 0" in out and "no longer continues" in out
    assert start(manager, repo, "base", volume)[0] == 0
