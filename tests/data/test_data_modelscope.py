"""Mainland China without the Hugging Face Hub: ``rlgen data prepare --source modelscope:...``
through the real ``modelscope`` client against a ModelScope on 127.0.0.1
(support/hub_server.py), and the dataset and model Jobs of a cn-shanghai repository run as the
cluster runs them (their own shell script and environment, rendered by kustomize) against that
ModelScope and the OSS test server, with the Hugging Face Hub out of reach."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rlgen.data import visible_files
from support.datafix import gsm8k_columns
from support.hub_server import HubServer
from support.oss_server import OssTestServer
from support.repos import build, one_error_line, run_rlgen

MODEL = "Qwen/Tiny-Instruct"
MODEL_FILES = {"config.json": b'{"architectures": ["Qwen2ForCausalLM"]}', "model.safetensors": os.urandom(64 * 1024)}
CHINA = ("--set", "rlgen.region=cn-shanghai", "--set", "rlgen.upstream_mirror=https://git.rl-team.cn/mirrors",
         "--set", "flux.image_registry=registry.cn-shanghai.aliyuncs.com/rl-mirrors/fluxcd",
         "--set", f"rlgen.model={MODEL}")


def parquet(columns: dict) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out)
    return out.getvalue()


#: modelscope/gsm8k laid out as the Hub lays out openai/gsm8k: one folder per config.
GSM8K = {
    "README.md": b"# gsm8k\n",
    "main/train-00000-of-00001.parquet": parquet(gsm8k_columns(30)),
    "main/test-00000-of-00001.parquet": parquet(gsm8k_columns(6, start=300)),
    "socratic/train-00000-of-00001.parquet": parquet(gsm8k_columns(3, start=900)),
    "socratic/test-00000-of-00001.parquet": parquet(gsm8k_columns(2, start=950)),
}


@pytest.fixture
def hub():
    server = HubServer(MODEL, MODEL_FILES, {"modelscope/gsm8k": GSM8K}).start()
    yield server
    server.stop()


def offline_hf(tmp_path) -> dict:
    """The environment of a mainland pod: ModelScope at the stand-in, the Hugging Face Hub unreachable."""
    env = {**os.environ, "MODELSCOPE_ENDPOINT": "", "MODELSCOPE_CACHE": str(tmp_path / "ms-cache"),
           "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    env.pop("HF_TOKEN", None)
    return env


def test_prepare_reads_the_modelscope_copy_with_the_plugins_config_and_resumes(hub, tmp_path):
    env = {**offline_hf(tmp_path), "MODELSCOPE_ENDPOINT": hub.endpoint}
    out = tmp_path / "prepared"
    args = ("data", "prepare", "--dataset", "gsm8k", "--source", "modelscope:modelscope/gsm8k", "--out", str(out))
    first = run_rlgen(*args, "-o", "json", env=env)
    assert first.returncode == 0, first.stderr
    splits = {s["split"]: s["rows_out"] for s in json.loads(first.stdout)["splits"]}
    assert splits == {"train": 30, "test": 6}  # the "main" config, not socratic's rows
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"] == "modelscope:modelscope/gsm8k" and manifest["config"] == "main"
    assert pq.read_table(out / "train.parquet").num_rows == 30
    assert "modelscope/gsm8k:main/train-00000-of-00001.parquet" in hub.fetched()
    # The download stays in a hidden folder, which upload skips: only the prepared files are data.
    assert [p.name for p in visible_files(out)] == ["manifest.json", "test.parquet", "train.parquet"]

    hub.log.clear()
    assert run_rlgen(*args, env=env).returncode == 0
    assert hub.fetched() == []  # every file was complete


def test_a_modelscope_source_is_checked_and_a_missing_one_is_one_line(hub, tmp_path):
    env = {**offline_hf(tmp_path), "MODELSCOPE_ENDPOINT": hub.endpoint}
    line = one_error_line(run_rlgen("data", "prepare", "--dataset", "gsm8k", "--source", "modelscope:gsm8k",
                                    "--out", str(tmp_path / "a"), env=env))
    assert "modelscope:OWNER/NAME" in line
    line = one_error_line(run_rlgen("data", "prepare", "--dataset", "gsm8k", "--source", "modelscope:nobody/none",
                                    "--out", str(tmp_path / "b"), env=env))
    assert "cannot download data set 'nobody/none' from modelscope" in line


def job_script_env(job: dict, scratch, extra: dict) -> tuple[str, dict]:
    """A Job's shell script, its /scratch moved to ``scratch``, and its literal environment with
    ``extra`` over it (what the cluster gives from Secrets, and where the stand-ins listen)."""
    container = job["spec"]["template"]["spec"]["containers"][0]
    script = container["command"][-1].replace("/scratch/", f"{scratch}/")
    env = {e["name"]: e["value"].replace("/scratch/", f"{scratch}/") for e in container["env"] if "value" in e}
    return script, {**env, **extra}


def test_the_mainland_jobs_download_from_modelscope_and_upload_to_the_bucket(generate, hub, tmp_path):
    repo = generate(*CHINA)
    jobs = {o["metadata"]["labels"]["app.kubernetes.io/name"]: o
            for o in build(repo / "overlays" / "production" / "platform") if o["kind"] == "Job"}
    oss = OssTestServer().start()
    try:
        bucket = f"rl-{uuid.uuid4().hex[:12]}"
        oss.create_bucket(bucket)
        for app in ("dataset-pipeline", "model-pipeline"):
            scratch = tmp_path / app
            scratch.mkdir()
            # rlgen on PATH, as in the data image; the bucket and keys the storage plugin's Secret gives.
            extra = {**offline_hf(tmp_path), "MODELSCOPE_ENDPOINT": hub.endpoint, "OSS_BUCKET": bucket,
                     "OSS_ENDPOINT": oss.endpoint, "OSS_ACCESS_KEY_ID": "test-key-id",
                     "OSS_ACCESS_KEY_SECRET": "test-secret",
                     "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
            script, env = job_script_env(jobs[app], scratch, extra)
            done = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, (app, done.stdout, done.stderr)
        stored = oss.objects(bucket)
    finally:
        oss.stop()
    assert {k for k in stored if k.startswith("datasets/gsm8k/")} == {
        "datasets/gsm8k/train.parquet", "datasets/gsm8k/test.parquet", "datasets/gsm8k/manifest.json"}
    assert {k: v for k, v in stored.items() if k.startswith("models/")} == {
        f"models/Tiny-Instruct/{name}": data for name, data in MODEL_FILES.items()}
    assert pq.read_table(io.BytesIO(stored["datasets/gsm8k/train.parquet"])).num_rows == 30
    # Every byte came from ModelScope: nothing asked the Hugging Face Hub, which is offline here.
    assert sorted(hub.fetched()) == sorted([*MODEL_FILES, *(f"modelscope/gsm8k:{p}" for p in GSM8K)])
