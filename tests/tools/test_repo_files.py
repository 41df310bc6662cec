"""The one reader of a repository's files reads its regular files and refuses, before reading a
byte, what is not one of them: a link out of the repository, a device, a FIFO, a folder, a file
past the limit; and a file that grows as it is read stops at the limit."""
from __future__ import annotations

import os
import threading

import pytest
from rlgen.errors import RlgenError
from rlgen.tools import kustomize_reads, repo_files


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "base").mkdir(parents=True)
    (root / "rlgen.yaml").write_text("plugins: {}\n")
    (root / "base" / "a.yaml").write_text("a: 1\n")
    return root


def _refused(path, repo=None) -> str:
    with pytest.raises(RlgenError) as refused:
        repo_files.read_bytes(path, repo)
    return str(refused.value)


def test_a_regular_file_and_a_link_inside_are_read(repo):
    (repo / "base" / "b.yaml").symlink_to("a.yaml")
    assert repo_files.read_text(repo / "base" / "b.yaml") == "a: 1\n"
    assert repo_files.read_bytes(repo / "base" / "a.yaml", repo) == b"a: 1\n"


def test_a_link_out_of_the_repository_is_refused_naming_it(repo):
    (repo / "base" / "zero.yaml").symlink_to("/dev/zero")
    (repo.parent / "outside.yaml").write_text("secret: 1\n")
    (repo / "base" / "out.yaml").symlink_to(repo.parent / "outside.yaml")
    assert _refused(repo / "base" / "zero.yaml") == \
        "base/zero.yaml: a symbolic link to /dev/zero, outside the repository: rlgen reads only the repository's own files"
    assert _refused(repo / "base" / "out.yaml", repo).startswith("base/out.yaml: a symbolic link to ")


def test_a_fifo_a_device_and_a_folder_are_refused_without_waiting(repo):
    os.mkfifo(repo / "base" / "pipe.yaml")
    # Read in a thread: a reader that opened the FIFO for reading would wait here for a writer.
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(_refused(repo / "base" / "pipe.yaml")), daemon=True)
    reader.start()
    reader.join(10)
    assert found == ["base/pipe.yaml: a FIFO, not a regular file: rlgen reads only files"]
    assert _refused(repo / "base") == "base: a folder, not a file"
    # Without a repository around it only the kind of file is checked: /dev/null is a device.
    assert _refused("/dev/null").startswith("/dev/null: a device, not a regular file")


def test_a_file_past_the_limit_is_refused(repo, monkeypatch):
    monkeypatch.setattr(repo_files, "MAX_FILE_BYTES", 10)
    (repo / "base" / "big.yaml").write_text("x" * 11)
    assert _refused(repo / "base" / "big.yaml") == "base/big.yaml: 11 bytes, more than the 10 rlgen reads of a file"
    with pytest.raises(RlgenError, match="base/big.yaml: 11 bytes"):
        repo_files.check(repo / "base" / "big.yaml")


def test_a_file_that_grows_while_read_stops_at_the_limit(repo, monkeypatch):
    # /proc files say they are empty and are not: the limit holds on what is read, not the size told.
    monkeypatch.setattr(repo_files, "MAX_FILE_BYTES", 10)
    status = "/proc/self/status"
    assert os.stat(status).st_size == 0
    assert "more than the 10 bytes" in _refused(status)


def test_text_that_is_not_utf8_is_refused_with_its_line(repo):
    (repo / "base" / "latin1.yaml").write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(RlgenError) as refused:
        repo_files.read_text(repo / "base" / "latin1.yaml")
    assert str(refused.value).startswith("base/latin1.yaml: line 2: not UTF-8 text (byte 11, 0xe9)")


def test_a_missing_file_is_missing(repo):
    with pytest.raises(FileNotFoundError):
        repo_files.read_bytes(repo / "base" / "gone.yaml")


def test_what_a_build_would_read_is_checked_before_kustomize_runs(repo):
    base = repo / "base"
    (base / "kustomization.yaml").write_text("resources:\n  - a.yaml\n  - ../runs\n")
    (repo / "runs").mkdir()
    (repo / "runs" / "kustomization.yaml").write_text("resources:\n  - pipe.yaml\n")
    kustomize_reads.check_build(base, set())  # runs/pipe.yaml does not exist: left to kustomize
    os.mkfifo(repo / "runs" / "pipe.yaml")
    with pytest.raises(RlgenError, match="^runs/pipe.yaml: a FIFO"):
        kustomize_reads.check_build(base, set())
    (repo / "runs" / "pipe.yaml").unlink()
    (repo / "runs" / "kustomization.yaml").unlink()
    (repo / "runs" / "kustomization.yaml").symlink_to("/dev/zero")
    with pytest.raises(RlgenError, match="^runs/kustomization.yaml: a symbolic link to /dev/zero"):
        kustomize_reads.check_build(base, set())
