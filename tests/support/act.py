"""A generated workflow run by a real Actions runner, nektos/act (toolchain/act), on this machine.

``act -P ubuntu-24.04=-self-hosted`` runs each step in this machine's shell with the runner's
semantics: the default shell (``bash -e {0}``), expressions, ``if:``, step outputs through
``$GITHUB_OUTPUT``, ``$GITHUB_PATH``, ``env:``, secrets and variables; no Docker. Each hosted
action resolves to its stand-in in ``support/actions/`` (``--local-repository``, offline), by
the commit the workflow pins. What a job reaches outside the runner is local too: the Git host
(``rlgen.e2e.git_server``: the repository, its pull request's merge ref, and the push of an
update branch), the REST API (``support.github_host.RestApi`` through ``GITHUB_API_URL``) and
github.com's release downloads (``support.github_host.Releases``).

act keeps no step summary (each step's ``$GITHUB_STEP_SUMMARY`` file is emptied before the next
and deleted with the job): a ``BASH_ENV`` script appends each bash step's summary, as it stands
when the step's shell exits, to a file the test reads. The one change made to a workflow before
it runs: the sha256 of each release file, as the release server serves the pinned version built
from source (toolchain/), not upstream's archive; :func:`checksummed` asserts it is the only one.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from support.toolchain import BIN, PROJECT, tool

from rlgen import __version__

ACTIONS = Path(__file__).resolve().parent / "actions"
#: What the runner's label is on this machine: the host itself.
PLATFORM = "ubuntu-24.04=-self-hosted"
OWNER = "my-org"
#: The token of every job: the workflow's GITHUB_TOKEN and, for rlgen-update, RLGEN_UPDATE_TOKEN.
TOKEN = "ghs_rlgenActStandInToken0123456789abcdef"
#: rlgen.install of the repositories a job runs on: this checkout's version, which the job
#: installs from the wheel :func:`rlgen_wheel` builds (a job's rlgen is the one that generated).
THIS_RLGEN = ("--set", f"rlgen.install=rlgen=={__version__}")
SUMMARY_TRAP = """\
if [ -z "${RLGEN_ACT_SUMMARY_TRAP:-}" ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  export RLGEN_ACT_SUMMARY_TRAP=1
  trap 'cat "$GITHUB_STEP_SUMMARY" >> "$RLGEN_ACT_SUMMARIES" 2>/dev/null || true' EXIT
fi
"""


@dataclass
class Job:
    returncode: int
    log: str
    summary: str
    workspace: Path
    artifacts: Path

    @property
    def passed(self) -> bool:
        return self.returncode == 0 and "Job succeeded" in self.log

    def step_results(self) -> dict[str, str]:
        """Each step's name -> success, failure or skipped, as act reports it."""
        results = {}
        for line in self.log.splitlines():
            found = re.search(r"(✅|❌)\s+(Success|Failure) - (?:Main|Post) (.+?)(?: \[[^\]]*\])?$", line)
            if found:
                results[found[3].strip()] = "success" if found[2] == "Success" else "failure"
        return results


def uses(workflow: str) -> list[str]:
    """Every ``uses:`` of a workflow's text: ``owner/repo[/path]@ref``."""
    return re.findall(r"uses:\s*([\w.-]+/[\w./-]+@[\w.-]+)", workflow)


def local_repositories(workflow: str) -> list[str]:
    """act's ``--local-repository`` of each action the workflow uses: its stand-in folder."""
    flags = []
    for action in dict.fromkeys(uses(workflow)):
        name, ref = action.split("@")
        owner, repo = name.split("/")[:2]
        folder = ACTIONS / repo
        assert owner == "actions" and folder.is_dir(), f"no stand-in for {action} in {ACTIONS}"
        flags += ["--local-repository", f"{owner}/{repo}@{ref}={folder}"]
    return flags


def checksummed(workflow: str, served: dict[str, bytes]) -> str:
    """The workflow with each ``<TOOL>_SHA256`` set to the sha256 of the file served for it
    (``served``: tool name -> bytes), and nothing else changed."""
    out = workflow
    for name, data in served.items():
        out, count = re.subn(rf"^(\s*{name.upper()}_SHA256: )[0-9a-f]{{64}}$", rf"\g<1>{hashlib.sha256(data).hexdigest()}",
                             out, flags=re.MULTILINE)
        assert count == 1, f"{name.upper()}_SHA256 not set once in the workflow"
    assert out.splitlines().__len__() == workflow.splitlines().__len__()
    return out


def dotenv(values: dict[str, str]) -> str:
    """act's secret and variable files: one KEY="VALUE" a line, newlines and quotes escaped."""
    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return "".join(f"{key}={quoted(value)}\n" for key, value in values.items())


def act() -> str:
    return tool("act")


class Runner:
    """One self-hosted runner for a test session: its tool cache, action cache, the cache and
    artifact stores, and the local services its jobs reach."""

    def __init__(self, root: Path, git_server, api, releases, wheelhouse: Path):
        self.root = root
        self.git_server = git_server
        self.api = api
        self.releases = releases
        self.wheelhouse = wheelhouse
        self.cache = root / "actions-cache"
        self.action_cache = root / "act"
        self._runs = 0

    def publish(self, repo: Path, name: str) -> str:
        """Push every branch of ``repo`` to a new repository ``my-org/<name>`` of the Git server."""
        full = f"{OWNER}/{name}"
        url = self.git_server.create(full)
        subprocess.run(["git", "-C", str(repo), "push", "-q", "--force", url, "refs/heads/*:refs/heads/*"],
                       check=True, capture_output=True)
        return full

    def pull_request(self, repo: Path, full: str, base: str, head: str, number: int = 1) -> dict:
        """The merge ref GitHub makes for a pull request (``refs/pull/N/merge``) and its payload."""
        work = self.root / f"merge-{number}-{full.replace('/', '-')}"
        shutil.rmtree(work, ignore_errors=True)
        url = self.git_server.url(full)
        subprocess.run(["git", "clone", "-q", "--branch", base, url, str(work)], check=True, capture_output=True)
        git = ["git", "-C", str(work), "-c", "user.name=GitHub", "-c", "user.email=noreply@github.com"]
        subprocess.run([*git, "fetch", "-q", "origin", head], check=True, capture_output=True)
        subprocess.run([*git, "merge", "-q", "--no-ff", "-m", f"Merge {head} into {base}", "FETCH_HEAD"],
                       check=True, capture_output=True)
        sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run([*git, "push", "-q", "origin", f"HEAD:refs/pull/{number}/merge"], check=True, capture_output=True)
        return {"number": number, "sha": sha, "pull_request": {
            "number": number, "base": {"ref": base, "repo": {"full_name": full}},
            "head": {"ref": head, "repo": {"full_name": full}}}}

    def run(self, workflow: Path, event: str, full: str, payload: dict | None = None, *,
            secrets: dict[str, str] | None = None, variables: dict[str, str] | None = None,
            env: dict[str, str] | None = None, served: dict[str, bytes] | None = None) -> Job:
        """Run ``workflow`` for ``event`` on repository ``full`` of the Git server."""
        self._runs += 1
        run = self.root / f"run-{self._runs}"
        workspace, artifacts = run / "workspace", run / "artifacts"
        for folder in (workspace, artifacts, self.cache):
            folder.mkdir(parents=True, exist_ok=True)
        text = workflow.read_text()
        copy = run / workflow.name
        served = {k: v for k, v in (served or {}).items() if f"{k.upper()}_SHA256:" in text}
        copy.write_text(checksummed(text, served) if served else text)
        payload = dict(payload or {})
        payload.setdefault("repository", {"full_name": full, "default_branch": "main", "owner": {"login": OWNER}})
        (run / "event.json").write_text(json.dumps(payload))
        (run / "secrets").write_text(dotenv({"GITHUB_TOKEN": TOKEN, **(secrets or {})}))
        (run / "vars").write_text(dotenv(variables or {}))
        (run / "bash_env").write_text(SUMMARY_TRAP)
        summaries = run / "summary.md"
        summaries.touch()
        sha = ["--env", f"SHA_REF={payload['sha']}"] if "sha" in payload else []
        command = [act(), event, "-W", str(copy), "-e", str(run / "event.json"), "-P", PLATFORM,
                   "-C", str(workspace), "--action-offline-mode", "--no-skip-checkout", "--no-cache-server",
                   "--action-cache-path", str(self.action_cache), *local_repositories(text),
                   "--secret-file", str(run / "secrets"), "--var-file", str(run / "vars"), "--env-file", os.devnull,
                   "--env", f"GITHUB_SERVER_URL={self.git_server.base.rstrip('/')}", "--env", f"GITHUB_API_URL={self.api.url}",
                   "--env", f"GITHUB_REPOSITORY={full}", *sha]
        result = subprocess.run(command, cwd=workspace, capture_output=True, text=True, env=self.environment(run, env))
        (run / "act.log").write_text(result.stdout + result.stderr)
        return Job(result.returncode, result.stdout + result.stderr, summaries.read_text(), workspace, artifacts)

    def environment(self, run: Path, extra: dict[str, str] | None) -> dict[str, str]:
        """The runner's own environment: this machine's, without the project's toolchain on PATH
        (a runner has none of it), with the stores and services of the stand-ins."""
        path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                               if p and Path(p).resolve() != BIN.resolve() and Path(p) != Path(sys.executable).parent)
        links = " ".join(filter(None, [str(self.wheelhouse), os.environ.get("PIP_FIND_LINKS", "")]))
        return {**os.environ, "PATH": path, "BASH_ENV": str(run / "bash_env"), "RLGEN_ACT_SUMMARIES": str(run / "summary.md"),
                "RLGEN_ACT_CACHE": str(self.cache), "RLGEN_ACT_ARTIFACTS": str(run / "artifacts"),
                "PIP_FIND_LINKS": links, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                **(self.releases.env() if self.releases else {}), **(extra or {})}


def rlgen_wheel(folder: Path) -> Path:
    """The wheel of this working tree at the version this rlgen has (setuptools-scm's of the
    checkout, which :data:`THIS_RLGEN` pins), for ``pip install`` in a job: built once into
    ``folder`` under a lock."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    # A copy has no Git history to version it by.
    env = {**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION": __version__}
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not any(folder.glob("rlgen-*.whl")):
            # Built from a copy: a build writes its version into rlgen/_version.py, which the
            # tree's own editable install reads.
            source = shutil.copytree(PROJECT, folder / "source", symlinks=True, ignore=shutil.ignore_patterns(
                ".git", ".venv", ".toolchain", ".verl", "build", "dist", "demo", "*.egg-info", "__pycache__",
                "tests", "benchmarks", "_version.py"))
            subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), str(source)],
                           check=True, capture_output=True, env=env)
            shutil.rmtree(source)
    return folder
