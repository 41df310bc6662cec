"""rlgen data model: the real huggingface_hub client against a Hub on 127.0.0.1
(support/hub_server.py), then rlgen data upload to the OSS test server: what a user (or the
model Job) sees, including a second run that fetches and sends nothing again."""
from __future__ import annotations

import os
import uuid

import pytest
from support.datafix import invoke
from support.hub_server import HubServer
from support.oss_server import OssTestServer
from support.repos import one_error_line, run_rlgen
from support.terminal import on_terminal

REPO_ID = "Qwen/Tiny-Instruct"
FILES = {
    "config.json": b'{"architectures": ["Qwen2ForCausalLM"]}',
    "model.safetensors": os.urandom(512 * 1024),
    "tokenizer/tokenizer.json": b'{"version": "1.0"}',
}
KEYS = {"OSS_ACCESS_KEY_ID": "test-key-id", "OSS_ACCESS_KEY_SECRET": "test-secret",
        "ALIBABA_CLOUD_ROLE_ARN": None, "OSS_ENDPOINT": None, "OSS_REGION": None}


@pytest.fixture
def hub():
    server = HubServer(REPO_ID, FILES).start()
    yield server
    server.stop()


def model(hub, tmp_path, out, *args):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "0",
           "MODELSCOPE_ENDPOINT": hub.endpoint, "MODELSCOPE_CACHE": str(tmp_path / "ms-cache")}
    env.pop("HF_TOKEN", None)
    return run_rlgen("data", "model", "--model", REPO_ID, "--out", str(out), *args, env=env)


def model_files(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and not p.relative_to(folder).as_posix().startswith(".")}


def test_downloads_every_file_and_resumes_only_what_is_missing(hub, tmp_path):
    out = tmp_path / "model"
    result = model(hub, tmp_path, out, "-o", "table")
    assert result.returncode == 0, result.stderr
    assert f"{REPO_ID} from huggingface: 3 files" in result.stdout
    assert model_files(out) == FILES
    assert sorted(hub.fetched()) == sorted(FILES)

    hub.log.clear()
    assert model(hub, tmp_path, out).returncode == 0
    assert hub.fetched() == []  # everything was complete

    (out / "model.safetensors").unlink()  # a pod that died mid-download
    hub.log.clear()
    assert model(hub, tmp_path, out).returncode == 0
    assert hub.fetched() == ["model.safetensors"]
    assert model_files(out) == FILES


def test_modelscope_downloads_and_resumes_the_same_way(hub, tmp_path):
    out = tmp_path / "model"
    result = model(hub, tmp_path, out, "--source", "modelscope", "-o", "table")
    assert result.returncode == 0, result.stderr
    assert f"{REPO_ID} from modelscope: 3 files" in result.stdout
    assert model_files(out) == FILES and sorted(hub.fetched()) == sorted(FILES)
    (out / "config.json").unlink()
    hub.log.clear()
    assert model(hub, tmp_path, out, "--source", "modelscope").returncode == 0
    assert hub.fetched() == ["config.json"] and model_files(out) == FILES


def test_upload_sends_the_model_files_only_and_skips_them_the_second_time(hub, tmp_path):
    out = tmp_path / "model"
    assert model(hub, tmp_path, out).returncode == 0
    assert any(p.name.endswith(".metadata") for p in (out / ".cache").rglob("*"))  # the hub's resume state
    oss = OssTestServer().start()
    try:
        bucket = f"rl-{uuid.uuid4().hex[:12]}"
        oss.create_bucket(bucket)
        url = f"oss://{bucket}/models/Tiny-Instruct"
        args = ("upload", out, url, "--endpoint", oss.endpoint, "--region", "cn-hangzhou", "-o", "table")
        first = invoke(*args, env=KEYS)
        assert first.exit_code == 0, (first.output, first.exception)
        stored = {k.removeprefix("models/Tiny-Instruct/"): v for k, v in oss.objects(bucket).items()}
        assert stored == FILES
        second = invoke(*args, env=KEYS)
        assert second.exit_code == 0 and "uploaded 0 files" in second.output and "skipped 3 unchanged" in second.output
    finally:
        oss.stop()


def test_unknown_model_is_one_line(hub, tmp_path):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home")}
    line = one_error_line(run_rlgen("data", "model", "--model", "Qwen/Nope", "--out", str(tmp_path / "m"), env=env))
    assert "cannot download model 'Qwen/Nope' from huggingface" in line
    line = one_error_line(run_rlgen("data", "model", "--model", "Qwen", "--out", str(tmp_path / "m"), env=env))
    assert "'Qwen' is not an owner/name repository id" in line


@pytest.mark.parametrize("source", ["huggingface", "modelscope"])
def test_a_terminal_sees_the_download_progress_and_a_log_sees_none(hub, tmp_path, source):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "0",
           "MODELSCOPE_ENDPOINT": hub.endpoint, "MODELSCOPE_CACHE": str(tmp_path / "ms-cache")}
    env.pop("HF_TOKEN", None)
    code, stdout, screen = on_terminal("data", "model", "--source", source, "--model", REPO_ID,
                                       "--out", str(tmp_path / "tty"), "-o", "table", env=env)
    assert code == 0, screen.decode(errors="replace")
    assert f"{REPO_ID} from {source}: ".encode() in screen and b" files" in screen
    assert stdout.startswith(f"{REPO_ID} from {source}: 3 files")
    assert b"it/s]" not in screen and b"Downloading [" not in screen  # the hubs' own tqdm bars stay off

    logged = model(hub, tmp_path, tmp_path / "log", "--source", source, "-o", "table")
    assert logged.returncode == 0 and logged.stdout.startswith(f"{REPO_ID} from {source}: 3 files")
    assert f"from {source}: " not in logged.stderr and "\x1b[" not in logged.stderr


def test_model_json_names_the_folder_and_its_files(hub, tmp_path):
    import json

    result = model(hub, tmp_path, tmp_path / "model", "-o", "json")
    doc = json.loads(result.stdout)
    assert doc == {"model": REPO_ID, "source": "huggingface", "revision": None, "folder": str(tmp_path / "model"),
                   "files": 3, "bytes": sum(len(b) for b in FILES.values())}
