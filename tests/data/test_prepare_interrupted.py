"""rlgen data prepare killed at random points: a manifest, when there is one, always describes
the files beside it; the next run leaves no partial file behind."""
from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time

from support.datafix import gsm8k_columns, hf_offline, save  # noqa: F401 (hf_offline: a fixture)


def consistent(out) -> bool:
    manifest = out / "manifest.json"
    if not manifest.exists():
        return True
    splits = json.loads(manifest.read_text())["splits"]
    return all(hashlib.sha256((out / s["file"]).read_bytes()).hexdigest() == s["sha256"] for s in splits.values())


def test_a_killed_prepare_never_leaves_a_manifest_that_lies(tmp_path, hf_offline):  # noqa: F811
    source = save("gsm8k", {"train": gsm8k_columns(40000), "test": gsm8k_columns(4000, start=90000)},
                  tmp_path / "src", "parquet")
    out = tmp_path / "out"
    args = [sys.executable, "-m", "rlgen", "data", "prepare", "--dataset", "gsm8k", "--source", str(source),
            "--out", str(out)]
    env = {**os.environ, "HF_HOME": str(hf_offline), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    # A first complete run, so later kills land on a folder that already has a manifest.
    assert subprocess.run(args, env=env, capture_output=True).returncode == 0
    rng = random.Random(12)
    for round_ in range(4):
        process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.5, 4.0))
        process.send_signal(signal.SIGKILL if round_ % 2 == 0 else signal.SIGTERM)
        stderr = process.communicate(timeout=120)[1]
        assert "Traceback" not in stderr
        assert consistent(out), f"round {round_}: the manifest does not match its files"
    final = subprocess.run(args, env=env, capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    assert consistent(out) and (out / "manifest.json").exists()
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "test.parquet", "train.parquet"]
