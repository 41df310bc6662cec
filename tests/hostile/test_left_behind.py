"""Hostile timing, what a stopped command leaves behind, by class: a temporary folder whose
removal was cut short (a second signal, a kill in the middle of it) or whose creation was;
a prepared data folder whose commit was; a multipart upload whose file then changed name.
Each is put right by the next command of its kind, and never mistaken for someone else's."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from rlgen.tools import scratch

PREFIX = "rlgen-hostile-left-"


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _ours(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(PREFIX))


@pytest.mark.parametrize("cut_after", range(13))  # every point of a removal of its 13 files
def test_a_scratch_folder_whose_removal_was_cut_short_is_removed_by_the_next_command(cut_after, tmpdir_env,
                                                                                    monkeypatch):
    """A removal interrupted after some files (as a kill during it does) left a folder without
    its lock file, which the next command took for someone else's and kept for ever."""
    real_unlink, calls = os.unlink, []

    def cut(path, *args, **kwargs):
        calls.append(path)
        if len(calls) > cut_after:
            raise KeyboardInterrupt  # the process ends here
        return real_unlink(path, *args, **kwargs)

    with pytest.raises(KeyboardInterrupt):
        with scratch.held_folder(PREFIX, clean_up=lambda: None) as folder:
            for i in range(10):
                (folder / f"f{i}.yaml").write_text("x")
            (folder / "sub").mkdir()
            (folder / "sub" / "g.yaml").write_text("y")
            monkeypatch.setattr(os, "unlink", cut)
    monkeypatch.setattr(os, "unlink", real_unlink)
    assert _ours(tmpdir_env) == [folder.name]
    assert scratch.remove_abandoned(PREFIX) == []
    assert _ours(tmpdir_env) == []


@pytest.mark.parametrize("state", ["empty", "lock not yet named"])
def test_a_scratch_folder_killed_while_created_is_removed_once_old(state, tmpdir_env):
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    if state != "empty":
        (folder / (scratch.OWNER + ".new")).write_text("")
    # Young: perhaps a command creating it right now.
    assert scratch.remove_abandoned(PREFIX) == [folder]
    old = time.time() - scratch.CREATION_SECONDS - 5
    os.utime(folder, (old, old))
    assert scratch.remove_abandoned(PREFIX) == []
    assert not folder.exists()


def test_a_foreign_folder_with_files_is_never_removed(tmpdir_env):
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    (folder / "theirs.txt").write_text("keep")
    old = time.time() - 3600
    os.utime(folder, (old, old))
    assert scratch.remove_abandoned(PREFIX) == [folder]
    assert (folder / "theirs.txt").read_text() == "keep"


def _prepared(out: Path, files: dict[str, bytes]) -> None:
    """A folder as prepare leaves it: the files and a manifest that lists them with their hashes."""
    import hashlib
    import json

    splits = {}
    for name, data in files.items():
        (out / name).write_bytes(data)
        splits[name.split(".")[0]] = {"file": name, "sha256": hashlib.sha256(data).hexdigest()}
    (out / "manifest.json").write_text(json.dumps({"splits": splits}))


def _described(out: Path) -> bool:
    import hashlib
    import json

    manifest = out / "manifest.json"
    if not manifest.exists():
        return False
    splits = json.loads(manifest.read_text())["splits"]
    return all(hashlib.sha256((out / s["file"]).read_bytes()).hexdigest() == s["sha256"] for s in splits.values())


class _Killed(BaseException):
    """The process ends here: nothing after it runs, no ``finally`` that could tidy."""


@pytest.fixture(scope="module")
def gsm8k_source(tmp_path_factory):
    from support.datafix import gsm8k_columns, save

    root = tmp_path_factory.mktemp("src")
    return {n: save("gsm8k", {"train": gsm8k_columns(n), "test": gsm8k_columns(n // 4, start=9000)},
                    root / str(n), "parquet") for n in (40, 80)}


@pytest.mark.parametrize("killed_at", range(8))
def test_a_prepare_killed_at_any_step_of_its_write_leaves_a_manifest(killed_at, gsm8k_source, tmp_path,
                                                                      monkeypatch):
    """It unlinked the manifest first and wrote the new one last: a kill between left a
    prepared folder with no manifest until the next run. Now a manifest is always there, and
    describes the files beside it once the next prepare or upload looked at the folder."""
    from rlgen.data import prepare, staged

    out = tmp_path / "out"
    prepare.prepare("gsm8k", out, source=str(gsm8k_source[40]))
    steps = []
    real = {name: getattr(os, name) for name in ("replace", "fsync", "unlink")}

    def step(name):
        def call(*args, **kwargs):
            steps.append(name)
            if len(steps) > killed_at:
                raise _Killed
            return real[name](*args, **kwargs)
        return call

    for name in real:
        monkeypatch.setattr(os, name, step(name))
    try:
        prepare.prepare("gsm8k", out, source=str(gsm8k_source[80]))
    except _Killed:
        pass
    for name, function in real.items():
        monkeypatch.setattr(os, name, function)
    assert (out / "manifest.json").exists(), (steps, sorted(p.name for p in out.iterdir()))
    staged.recover(out, remove_undecided=False)  # what upload does first
    assert _described(out), steps
    staged.recover(out)  # what the next prepare does first
    assert _described(out) and sorted(p.name for p in out.iterdir()) == ["manifest.json", "test.parquet",
                                                                          "train.parquet"]


@pytest.fixture(scope="module")
def oss_server():
    pytest.importorskip("alibabacloud_oss_v2")
    from support.oss_server import OssTestServer

    server = OssTestServer().start()
    yield server
    server.stop()


def _start_multipart(server, bucket: str, key: str) -> None:
    """What a killed upload leaves: a multipart upload started with a part, never completed."""
    import alibabacloud_oss_v2 as oss
    from rlgen.oss.client import Deadline, make_client
    from rlgen.data.upload import Progress

    credentials = oss.credentials.StaticCredentialsProvider("test-key-id", "s3cr3t-left")
    client = make_client("cn-hangzhou", server.endpoint, credentials, 2, Progress(), Deadline(60))
    started = client.initiate_multipart_upload(oss.InitiateMultipartUploadRequest(bucket=bucket, key=key))
    client.upload_part(oss.UploadPartRequest(bucket=bucket, key=key, upload_id=started.upload_id, part_number=1,
                                             body=b"x" * 1024))


def test_an_upload_killed_then_its_file_renamed_leaves_no_multipart_upload_after_the_next(oss_server, tmp_path):
    """The next upload aborted only the multipart uploads of the keys it was sending: one of a
    file renamed (or removed) meanwhile stayed on the server for ever, billed."""
    import uuid

    from rlgen.data.upload import upload

    bucket = f"rl-{uuid.uuid4().hex[:12]}"
    oss_server.create_bucket(bucket)
    _start_multipart(oss_server, bucket, "ds/model-00001.safetensors")  # the file's old name
    _start_multipart(oss_server, bucket, "other/theirs.bin")  # another prefix: not this upload's
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "model-00001-of-00002.safetensors").write_bytes(os.urandom(4096))
    env = {"OSS_ACCESS_KEY_ID": "test-key-id", "OSS_ACCESS_KEY_SECRET": "s3cr3t-left"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        upload(folder, f"oss://{bucket}/ds", region="cn-hangzhou", endpoint=oss_server.endpoint, jobs=1)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert oss_server.incomplete_uploads(bucket) == ["other/theirs.bin"]
