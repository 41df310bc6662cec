"""Input that once ended in exit 70 (an rlgen bug, a crash file) and is the user's or the
machine's: each now one line, exit 2 (or, for data rows, rows dropped and counted), no crash
file, nothing written: dataset rows whose question or answer is null, a number or a list; a
--limit beyond 64 bits; an --out where no file can be made (/proc, /sys, below a file); rlgen
e2e --install-tools there; rlgen new into a read-only mount point."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.hostile import record
from support.repos import REQUIRED


def _rlgen(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    tmp = cwd / "tmp"
    tmp.mkdir(exist_ok=True)
    result = subprocess.run([sys.executable, "-m", "rlgen", *args], cwd=cwd, capture_output=True, text=True,
                            env={**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
                            timeout=300)
    return result, sorted(p.name for p in tmp.iterdir())


def _source(root: Path, rows: list[dict]) -> Path:
    src = root / "src"
    src.mkdir()
    (src / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (src / "test.jsonl").write_text(json.dumps({"question": "2+2?", "answer": "#### 4"}) + "\n")
    return src


@pytest.mark.parametrize("bad", [None, 7, ["#### 1"], {"a": 1}], ids=["null", "number", "list", "mapping"])
@pytest.mark.parametrize("column", ["question", "answer"])
def test_rows_of_the_wrong_type_are_dropped_not_a_crash(column, bad, tmp_path, record_property):
    row = {"question": "3+3?", "answer": "#### 6", column: bad}
    src = _source(tmp_path, [{"question": "1+1?", "answer": "#### 2"}, row])
    result, left = _rlgen(tmp_path, "data", "prepare", "--dataset", "gsm8k", "--source", str(src), "--out", "out",
                          "-o", "json")
    record(record_property, expected=0, result=result, leftovers=left)
    assert result.returncode == 0, result.stderr
    train = json.loads(result.stdout)["splits"][0]
    assert (train["rows_in"], train["rows_out"], sum(train["dropped"].values())) == (2, 1, 1)
    assert column in next(iter(train["dropped"]))
    assert not left


@pytest.mark.parametrize("args,says", [
    (("data", "prepare", "--dataset", "gsm8k", "--source", "src", "--out", "out", "--limit", str(2**64)), "--limit"),
    (("data", "prepare", "--dataset", "gsm8k", "--source", "src", "--out", "/proc/rlgen-out"), "/proc"),
    (("data", "prepare", "--dataset", "gsm8k", "--source", "src", "--out", "/sys/rlgen-out"), "/sys"),
    (("data", "prepare", "--dataset", "gsm8k", "--source", "src", "--out", "a-file/out"), "a-file"),
    (("data", "model", "--model", "Qwen/Qwen2.5-0.5B", "--out", "/proc/rlgen-model"), "/proc"),
    (("render", "--out", "/proc/rlgen-render"), "/proc"),
    (("render", "--out", "/sys/rlgen-render"), "/sys"),
    (("render", "--out", "a-file/out"), "a-file"),
    (("e2e", "--install-tools", "/proc/rlgen-tools"), "/proc"),
])
def test_an_out_no_file_can_be_made_in_is_one_line(args, says, generate, tmp_path, record_property):
    repo = Path(shutil.copytree(generate(), tmp_path / "repo", symlinks=True))
    _source(repo, [{"question": "1+1?", "answer": "#### 2"}])
    (repo / "a-file").write_text("not a folder\n")
    result, left = _rlgen(repo, *args)
    record(record_property, expected=2, result=result, leftovers=[n for n in left if n.startswith("rlgen-crash")])
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in result.stderr, result.stderr
    assert not [n for n in left if n.startswith("rlgen-crash")]
    assert not (repo / "out").exists()


def _mount(where: Path, *options: str) -> None:
    where.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", *options, "tmpfs", str(where)], capture_output=True, text=True)
    if made.returncode != 0:
        # Making a mount point takes privileges the machine may not give; the case is the mount's.
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")


@pytest.mark.parametrize("options", [("-o", "ro"), ()], ids=["read-only", "writable"])
def test_new_into_an_empty_mount_point(options, tmp_path, record_property):
    target = tmp_path / "mounted"
    _mount(target, *options)
    try:
        result, left = _rlgen(tmp_path, "new", str(target), *REQUIRED, "--no-input")
        record(record_property, expected=2 if options else 0, result=result, leftovers=left)
        assert not left
        if options:
            assert result.returncode == 2 and "cannot write in this folder" in result.stderr, result.stderr
            assert len(result.stderr.strip().splitlines()) == 1
        else:
            # Filled in place: a mount point cannot be replaced by a rename.
            assert result.returncode == 0, result.stderr
            assert (target / "rlgen.yaml").is_file() and (target / ".git").is_dir()
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".rlgen-tmp")]
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)
