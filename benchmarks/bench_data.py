"""``rlgen data prepare`` on a GSM8K-sized data set (7,473 + 1,319 rows, saved with
``save_to_disk``) beside the original document's script (tutorial_preprocess.py), both as
whole processes, imports included: once with the document's ``num_proc=8`` and once with one
process per core."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import timing
from timing import Cmd, measure

HERE = Path(__file__).resolve().parent
TRAIN_ROWS, TEST_ROWS = 7473, 1319


def make_source(work: Path) -> Path:
    sys.path.insert(0, str(HERE.parent / "tests" / "support"))
    from datafix import gsm8k_columns, save

    splits = {"train": gsm8k_columns(TRAIN_ROWS), "test": gsm8k_columns(TEST_ROWS, start=TRAIN_ROWS)}
    return save("gsm8k", splits, work / "gsm8k", "disk")


def rows() -> list[timing.Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-data-"))
    env = {"HF_HOME": str(work / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    os.environ.update(env)
    try:
        source = make_source(work)
        copy, out = work / "copy", work / "out"

        def fresh():
            # A fresh copy each run: map() caches its results beside the saved data set.
            shutil.rmtree(copy, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(source, copy)

        # The data stack is the extra rlgen[data]: this environment's rlgen, which has it.
        rlgen = Cmd("prepare", timing.rlgen("data", "prepare", "--dataset", "gsm8k", "--source", str(copy),
                                            "--out", str(out), python=sys.executable),
                    env=env, setup=fresh)
        out_rows = []
        cores = str(os.cpu_count() or 1)
        for procs, label in (("8", "the original document's script (`num_proc=8`)"),
                             (cores, f"the same script, `num_proc={cores}` (one per core)")):
            script = Cmd(label, [sys.executable, str(HERE / "tutorial_preprocess.py")], setup=fresh,
                         env={**env, "INPUT_PATH": str(copy), "OUTPUT_PATH": str(out), "NUM_PROC": procs})
            out_rows.append(measure("`rlgen data prepare`, GSM8K size", rlgen, script, 0.4, runs=min(timing.RUNS, 5)))
        return out_rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    timing.main(rows)
