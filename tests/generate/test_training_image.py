"""images/training/Dockerfile's user step on the bases verl's images come from: one with a free
uid 1000, and an Ubuntu 24.04 one whose stock user `ubuntu` holds it."""
from __future__ import annotations

import os
import subprocess

import pytest


def _user_step(dockerfile: str) -> str:
    lines = dockerfile.replace("\\\n", " ").splitlines()
    (step,) = [line for line in lines if line.startswith("RUN ") and "useradd" in line]
    return step.removeprefix("RUN ")


STUBS = {
    # getent prints the entry of uid/gid 1000 when the base has one (BASE_USER set).
    "getent": '[ -n "$BASE_USER" ] && echo "$BASE_USER:x:1000:1000::/home/$BASE_USER:/bin/bash"',
    "userdel": 'echo "userdel $*" >> "$LOG"; unset BASE_USER',
    "groupdel": 'echo "groupdel $*" >> "$LOG"',
    "useradd": 'echo "useradd $*" >> "$LOG"',
    "chown": 'echo "chown $*" >> "$LOG"',
}


@pytest.mark.parametrize("base_user, expected", [
    ("", ["useradd --create-home --uid 1000 --user-group ray", "chown -R 1000:1000 /home/verl"]),
    ("ubuntu", ["userdel --remove ubuntu", "groupdel ubuntu", "useradd --create-home --uid 1000 --user-group ray",
                "chown -R 1000:1000 /home/verl"]),
], ids=["free-uid", "ubuntu-24.04"])
def test_user_step_frees_uid_1000(generate, tmp_path, base_user, expected):
    step = _user_step((generate() / "images" / "training" / "Dockerfile").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log), "BASE_USER": base_user}
    result = subprocess.run(["sh", "-ec", step], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert log.read_text().splitlines() == expected
