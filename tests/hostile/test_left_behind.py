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
