"""make demo installs what generating a repository needs, not the test extras, says what it is
installing, and ends with the next step (read from make's dry run of every step)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from support.repos import REPO
from support.toolchain import missing


@pytest.fixture(scope="module")
def steps() -> str:
    if shutil.which("make") is None:
        missing("make is not installed")
    result = subprocess.run(["make", "-n", "-B", "demo"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_demo_installs_rlgen_alone(steps):
    installs = [line for line in steps.splitlines() if "pip install" in line]
    assert installs and all("[test]" not in line and "verl" not in line for line in installs), installs
    assert any(line.rstrip().endswith("-e .") for line in installs)


def test_demo_says_what_it_installs_and_what_comes_next(steps):
    assert "Installing rlgen and its dependencies" in steps
    assert "Next: read demo/README.md" in steps and "rlgen run new" in steps


def test_the_next_step_works_from_any_shell(steps):
    # Absolute paths: the step is typed in a fresh shell, wherever it stands.
    export = next(line for line in steps.splitlines() if "export PATH=" in line)
    assert f'{REPO}/.toolchain/bin:{REPO}/.venv/bin:' in export and f"cd {REPO}/demo" in export


def test_the_demo_builds_what_the_generated_readme_uses(steps):
    build = next(line for line in steps.splitlines() if "toolchain/build.py" in line)
    assert set(build.split()[2:]) == {"kustomize", "kubeconform", "sops", "age"}


def test_the_demo_gives_every_answer_rlgen_new_needs(steps, tmp_path):
    """The demo's rlgen new, as make runs it, off a terminal: nothing it needs is left to a
    default (the registry, the Git URL, the install source, the bucket and its region)."""
    import shlex

    from support.repos import INSTALL, ok, run_rlgen

    line = next(line for line in steps.replace("\\\n", " ").splitlines() if " new demo " in line)
    # rlgen.install is scripts/demo_install.py's answer (tests/package/test_dist.py installs it).
    assert line.startswith('install="$(python3 scripts/demo_install.py \'\')" && ')
    args = shlex.split(line.split("rlgen new demo", 1)[1].replace("$install", INSTALL))
    ok(run_rlgen("new", str(tmp_path / "demo"), *args))
    assert "--no-input" in args and any(a.startswith("ak-storage.bucket=") for a in args)
    assert f"rlgen.install={INSTALL}" in args
