"""images/training/Dockerfile: its user step on the bases verl's images come from (one with a free
uid 1000, and an Ubuntu 24.04 one whose stock user `ubuntu` holds it); what it installs against
what the verl release requires; and the import that fails the build of a broken image."""
from __future__ import annotations

import os
import re
import shlex
import shutil
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


def _steps(dockerfile: str) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments left out."""
    lines = dockerfile.replace("\\\n", " ").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def _requires(version: str) -> dict[str, str]:
    """Package (lower case) -> specifier, as verl ``version``'s wheel declares it (Requires-Dist),
    its own and its ``verl-core`` extra's (0.9's TransferQueue)."""
    from email.parser import Parser

    from packaging.requirements import Requirement
    from support.verl_config import verl_root

    metadata = Parser().parsestr((verl_root(version) / f"verl-{version}.dist-info" / "METADATA").read_text())
    out = {}
    for line in metadata.get_all("Requires-Dist"):
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": "verl-core"}):
            out.setdefault(req.name.lower(), str(req.specifier))
    return out


def _installed(dockerfile: str) -> dict[str, str]:
    """Package (lower case) -> specifier of each quoted requirement a RUN step pip-installs."""
    from packaging.requirements import Requirement

    out = {}
    for step in _steps(dockerfile):
        if step.startswith("RUN ") and "pip install" in step:
            for word in shlex.split(step):
                if re.match(r"[A-Za-z0-9][\w.-]*(\[[\w,-]+\])?[<>=!~]", word) and "$" not in word:
                    req = Requirement(word)
                    out[req.name.lower()] = str(req.specifier)
    return out


#: What verl's dependency images of each release hold that the release's wheel may refuse
#: (docker/Dockerfile.stable.{vllm,sglang} of verl's release branch, docs/upstream.md): the 0.9
#: images install verl v0.7.1's dependencies, numpy<2 among them, transformers 5.3.0 and
#: TransferQueue 0.1.8; the 0.7.1 images, verl v0.7.0's, whose requirements are 0.7.1's.
IMAGE_HOLDS = {"0.7.1": {}, "0.9.1": {"numpy": "1.26.4", "transformers": "5.3.0", "transferqueue": "0.1.8"}}


@pytest.mark.parametrize("version", sorted(IMAGE_HOLDS))
def test_the_image_meets_what_its_verl_release_requires(generate, version):
    from packaging.specifiers import SpecifierSet

    dockerfile = (generate("--set", f"rlgen.verl={version}") / "images" / "training" / "Dockerfile").read_text()
    requires, installed = _requires(version), _installed(dockerfile)
    refused = {name for name, held in IMAGE_HOLDS[version].items() if held not in SpecifierSet(requires[name])}
    # Every requirement the image would fail is installed, exactly as the wheel declares it.
    assert {name: installed.get(name) for name in refused} == {name: requires[name] for name in refused}
    # No package the wheel declares is installed under another specifier.
    assert {n: s for n, s in installed.items() if n in requires and s != requires[n]} == {}


def test_verl_goes_where_the_rayjob_and_its_config_look(generate):
    """The RayJob's working_dir holds verl's package, whose config the run's hydra.searchpath
    (file://verl/trainer/config, relative to it) reads: what `pip install --target` of the
    release's wheel gives (.verl/<version> of this checkout is installed so, and the trainer
    config tests compose against it)."""
    from rlgen.tools import yamlio

    repo = generate()
    rayjob = yamlio.read_plain((repo / "base" / "training" / "rayjob.yaml").read_text())
    working_dir = yamlio.read_plain(rayjob["spec"]["runtimeEnvYAML"])["working_dir"]
    (install,) = [s for s in _steps((repo / "images" / "training" / "Dockerfile").read_text())
                  if s.startswith("RUN ") and '"verl==${VERL_VERSION}"' in s]
    assert f"--no-deps --target {working_dir} " in install
    assert "file://verl/trainer/config" in (repo / "runs" / "baseline" / "run.yaml").read_text()


STUB_VERL = {
    "verl/__init__.py": "",
    "verl/trainer/__init__.py": "",
    "verl/trainer/main_ppo.py": "",
    "verl/trainer/ppo/__init__.py": "",
    "verl/trainer/ppo/v1/__init__.py": "",
    "verl/tools/__init__.py": "",
    "verl/tools/base_tool.py": "class BaseTool:\n    def __init__(self, config, tool_schema):\n        pass\n",
    "verl/tools/schemas.py": "class ToolResponse:\n    pass\n\n\nclass OpenAIFunctionToolSchema:\n    pass\n",
}


@pytest.mark.parametrize("version", ["0.7.1", "0.9.1"])
def test_a_broken_image_fails_its_build(generate, tmp_path, version):
    """The Dockerfile's last step imports what the trainer runs, as the job's user, with the
    image's PYTHONPATH: run here against a stand-in verl, it passes, and fails once a module the
    trainer needs (or rlgen's tools) is missing."""
    repo = generate("--set", f"rlgen.verl={version}")
    steps = _steps((repo / "images" / "training" / "Dockerfile").read_text())
    (pythonpath,) = [s.split("=", 1)[1] for s in steps if s.startswith("ENV PYTHONPATH=")]
    assert steps[-1].startswith("RUN python3 -c ") and steps.index("USER 1000") < len(steps) - 1
    check = steps[-1].removeprefix("RUN ")
    verl, tools = tmp_path / "verl-site", tmp_path / "tools"
    for path, text in STUB_VERL.items():
        (verl / path).parent.mkdir(parents=True, exist_ok=True)
        (verl / path).write_text(text)
    shutil.copytree(repo / "images" / "training" / "rlgen_verl_tools", tools / "rlgen_verl_tools")
    # The image's paths, here: rlgen's tools as generated, the stand-in verl.
    where = {"/opt/rlgen": str(tools), "/home/verl": str(verl)}
    path = ":".join(where.get(p, p) for p in pythonpath.split("${", 1)[0].split(":"))

    def build() -> int:
        return subprocess.run(["sh", "-ec", check], env={**os.environ, "PYTHONPATH": path}, cwd=tmp_path,
                              capture_output=True, text=True).returncode

    assert build() == 0
    (verl / "verl" / "trainer" / "main_ppo.py").unlink()
    assert build() != 0
    (verl / "verl" / "trainer" / "main_ppo.py").write_text("")
    (tools / "rlgen_verl_tools" / "rewards.py").write_text("from verl.tools.reward_tool import RewardTool\n")
    assert build() != 0
    shutil.copy(repo / "images" / "training" / "rlgen_verl_tools" / "rewards.py", tools / "rlgen_verl_tools")
    assert build() == 0
    if version == "0.9.1":
        # 0.9's main_ppo loads its V1 trainer (and TransferQueue) only once it runs.
        (verl / "verl" / "trainer" / "ppo" / "v1" / "__init__.py").write_text("import transfer_queue\n")
        assert build() != 0
