"""rlgen installs as the README says: make dist builds the sdist and the wheel of a tagged commit,
versioned by the tag and accepted by twine; the README's command installs that wheel in a fresh
environment, where rlgen generates a repository; a generated repository's CI install step
installs rlgen from a package index serving it (a local PEP 503 index here); and make demo's
answer, this checkout's commit at its origin (a local Git server here), installs too."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from support.checkout import GIT, commit_of_this_checkout, fresh_venv, pip_step
from support.git_server import GitServer
from support.repos import GIT_HOST, GIT_URL, POOL, REGISTRY, REPO, REQUIRED, error_list, one_error_line, storage_answers
from support.toolchain import missing

TAG, VERSION = "v9.8.7", "9.8.7"
# One build of the sdist and the wheel, shared by the tests that install it.
pytestmark = pytest.mark.xdist_group("dist")


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``make dist`` in a tagged commit of this project, with the test environment as its .venv."""
    if subprocess.run(["which", "make"], capture_output=True).returncode:
        missing("make is not installed")
    src, _ = commit_of_this_checkout(tmp_path_factory.mktemp("dist"), tag=TAG)
    venv = Path(sys.prefix)
    made = subprocess.run(["make", "dist", f"VENV={venv}", "-o", f"{venv}/.installed"], cwd=src,
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "PASSED" in made.stdout and "FAILED" not in made.stdout, made.stdout  # twine check --strict
    return src / "dist"


def test_make_dist_builds_the_tags_version(dist):
    assert sorted(p.name for p in dist.iterdir()) == [f"rlgen-{VERSION}-py3-none-any.whl", f"rlgen-{VERSION}.tar.gz"]


def _release_step(name: str) -> str:
    release = YAML(typ="safe").load((REPO / ".github" / "workflows" / "release.yaml").read_text())
    return next(s["run"] for s in release["jobs"]["build"]["steps"] if s.get("name") == name)


@pytest.mark.parametrize(("tag", "passes"), [(TAG, True), ("v9.8.8", False)])
def test_the_release_workflow_publishes_only_the_version_its_tag_built(dist, tag, passes):
    """The release job's check, run as the runner runs it, on what make dist built from v9.8.7."""
    env = {**os.environ, "TAG": tag, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-e", "-c", _release_step("Tag is the version, the wheel is complete")],
                          cwd=dist.parent, env=env, capture_output=True, text=True)
    assert (done.returncode == 0) == passes, done.stdout + done.stderr
    if not passes:
        assert done.stdout.startswith(f"::error::tag {tag} built "), done.stdout


def _readme_line(marker: str) -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Install\n"):].split("\n## ", 1)[0]
    return next(line for line in section.splitlines() if marker in line)


def _rlgen_env(home: Path) -> dict:
    # A fresh HOME is the fresh machine; pip's cache stays the user's, as it would be theirs.
    cache = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
    return {**env, "HOME": str(home), "PIP_CACHE_DIR": cache, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def test_the_readme_command_installs_the_wheel_in_a_fresh_environment(dist, tmp_path):
    """The README's command, as typed in the checkout, on a machine with nothing installed: rlgen
    and its dependencies, the plugins, the kustomize sources and templates a repository needs."""
    home = tmp_path / "home"
    home.mkdir()
    env = _rlgen_env(home)
    installed = subprocess.run(["sh", "-c", _readme_line("pip install dist/rlgen-")], cwd=dist.parent, env=env,
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    rlgen = home / ".venvs" / "rlgen" / "bin" / "rlgen"
    assert subprocess.run([str(rlgen), "--version"], capture_output=True, text=True).stdout.split()[-1] == VERSION

    made = subprocess.run([str(rlgen), "new", str(tmp_path / "repo"), *REQUIRED, "--no-input"], env=env,
                          capture_output=True, text=True, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "repo" / "base" / "training" / "rayjob.yaml").is_file()
    # Installed from a wheel file, which no runner can reach: rlgen asks where CI installs it from.
    refused = subprocess.run([str(rlgen), "new", str(tmp_path / "again"), "--no-input", "--set",
                              f"rlgen.registry={REGISTRY}", "--set", f"rlgen.git_url={GIT_URL}", *POOL,
                              "--set", f"rlgen.git_host={GIT_HOST}", *storage_answers()], env=env, capture_output=True, text=True, cwd=tmp_path)
    _, (item,) = error_list(refused)
    assert item.startswith("--set rlgen.install=VALUE (") and "a local file" in item


def _install_step(repo: Path) -> str:
    doc = YAML(typ="safe").load((repo / ".github" / "workflows" / "validate.yaml").read_text())
    (step,) = [s["run"] for job in doc["jobs"].values() for s in job["steps"] if s.get("name") == "Install rlgen"]
    return step.strip()


def _simple_index(dist: Path, root: Path) -> Path:
    """A PEP 503 index of the wheel: /simple/rlgen/ links it with its sha256."""
    (wheel,) = dist.glob("*.whl")
    project = root / "simple" / "rlgen"
    project.mkdir(parents=True)
    (root / wheel.name).write_bytes(wheel.read_bytes())
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (project / "index.html").write_text(f'<!DOCTYPE html><html><body><a href="../../{wheel.name}#sha256={digest}">'
                                        f"{wheel.name}</a></body></html>\n")
    return root


def _serve(folder: Path) -> ThreadingHTTPServer:
    handler = partial(SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _generate(tmp_path: Path, install: str) -> Path:
    repo = tmp_path / "repo"
    result = subprocess.run([sys.executable, "-m", "rlgen", "new", str(repo), *REQUIRED, "--set",
                             f"rlgen.install={install}", "--no-input"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return repo


def _run_step(tmp_path: Path, step: str) -> Path:
    venv = fresh_venv(tmp_path, "ci")
    done = subprocess.run(["sh", "-c", pip_step(venv, step)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


def test_the_ci_install_step_installs_rlgen_from_a_package_index(dist, tmp_path):
    server = _serve(_simple_index(dist, tmp_path / "index"))
    try:
        index = f"http://127.0.0.1:{server.server_address[1]}/simple/"
        repo = _generate(tmp_path, f"rlgen=={VERSION} --index-url {index}")
        step = _install_step(repo)
        assert step == f"pip install rlgen=={VERSION} --index-url {index}"
        venv = _run_step(tmp_path, step)
    finally:
        server.shutdown()
        server.server_close()
    version = subprocess.run([str(venv / "bin" / "rlgen"), "--version"], capture_output=True, text=True)
    assert version.stdout.split()[-1] == VERSION, version.stdout + version.stderr


def test_make_demo_answers_this_checkouts_commit_at_its_origin(tmp_path):
    """make demo's rlgen.install: the commit at the checkout's origin, which pip clones and builds
    in the demo's CI install step, versioned by its tag."""
    src, commit = commit_of_this_checkout(tmp_path, tag=TAG)
    git = [*GIT, "-C", str(src)]
    with GitServer(tmp_path / "git") as server:
        url = server.create("platform/rlgen.git")
        subprocess.run([*git, "remote", "add", "origin", url], check=True)
        subprocess.run([*git, "push", "-q", "origin", "main", TAG], check=True, capture_output=True)
        subprocess.run([*git, "fetch", "-q", "origin"], check=True)
        answer = subprocess.run([sys.executable, str(src / "scripts" / "demo_install.py"), ""], capture_output=True,
                                text=True)
        assert answer.returncode == 0 and answer.stderr == "", answer.stderr
        assert answer.stdout.strip() == f"rlgen @ git+{url}@{commit}"
        demo_line = _demo_new_line(src)
        assert '--set "rlgen.install=$install"' in demo_line
        repo = _generate(tmp_path, answer.stdout.strip())
        venv = _run_step(tmp_path, _install_step(repo))
    version = subprocess.run([str(venv / "bin" / "rlgen"), "--version"], capture_output=True, text=True)
    assert version.stdout.split()[-1] == VERSION, version.stdout + version.stderr


def _demo_new_line(checkout: Path) -> str:
    steps = subprocess.run(["make", "-n", "-B", "demo"], cwd=checkout, capture_output=True, text=True).stdout
    return next(line for line in steps.replace("\\\n", " ").splitlines() if " new demo " in line)


@pytest.mark.parametrize(("origin", "says"), [
    (None, "it has no origin"),
    ("/srv/git/rlgen.git", "its origin /srv/git/rlgen.git is a local repository"),
])
def test_make_demo_without_an_origin_a_runner_can_fetch_pins_the_release_and_says_what_to_pass(tmp_path, origin, says):
    src, _ = commit_of_this_checkout(tmp_path)
    if origin:
        subprocess.run([*GIT, "-C", str(src), "remote", "add", "origin", origin], check=True)
    answer = subprocess.run([sys.executable, str(src / "scripts" / "demo_install.py"), ""], capture_output=True,
                            text=True)
    # The demo still runs (a clone with nothing beside it gets its repository); the warning says
    # what its CI installs and how to change it.
    line = one_error_line(answer, code=0)
    assert says in line and "make demo DEMO_INSTALL=" in line
    assert re.fullmatch(r"rlgen==\d+\.\d+\.\d+", answer.stdout.strip()), answer.stdout


def test_make_demo_turns_an_scp_like_origin_into_a_url_pip_clones(tmp_path):
    src, commit = commit_of_this_checkout(tmp_path)
    subprocess.run([*GIT, "-C", str(src), "remote", "add", "origin", "git@git.rl.test:platform/rlgen.git"], check=True)
    answer = subprocess.run([sys.executable, str(src / "scripts" / "demo_install.py"), ""], capture_output=True,
                            text=True)
    assert answer.stdout.strip() == f"rlgen @ git+ssh://git@git.rl.test/platform/rlgen.git@{commit}"
    # Not pushed: said, not refused (the runner cannot clone it until it is).
    assert re.search(r"commit \w{12} is on no branch of origin yet", answer.stderr), answer.stderr
