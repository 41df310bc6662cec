"""Run the real CLI, render generated repositories with the real kustomize, read them back."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[2]
#: The answers every ``rlgen new`` needs: the team's registry and this repository's remote,
#: where images and CI install rlgen from (the tests run an editable install, which
#: ``rlgen new`` refuses to use as that source), and the storage plugin's bucket and region.
REGISTRY = "registry.rl.test/team"
#: The runs index ``rlgen run`` edits in a repository of the main environment's default.
INDEX = "overlays/production/runs/kustomization.yaml"
GIT_URL = "ssh://git@git.rl.test/platform/rl-repo.git"
INSTALL = "rlgen==0.1.0"
BUCKET = "rl-tests-data"
REGION = "cn-hangzhou"


def storage_answers(plugin: str = "ak-storage") -> tuple[str, ...]:
    """``--set`` of the bucket and region of the storage plugin ``plugin``."""
    return ("--set", f"{plugin}.bucket={BUCKET}", "--set", f"{plugin}.region={REGION}")


#: How GIT_URL's host signs its push webhooks: its name does not tell (rlgen.git_host).
GIT_HOST = "github"
REQUIRED = ("--set", f"rlgen.registry={REGISTRY}", "--set", f"rlgen.git_url={GIT_URL}",
            "--set", f"rlgen.install={INSTALL}", "--set", f"rlgen.git_host={GIT_HOST}", *storage_answers())
#: The same answers for ``select()`` called directly.
CORE_ANSWERS = {"rlgen": {"registry": REGISTRY, "git_url": GIT_URL, "install": INSTALL, "git_host": GIT_HOST},
                "ak-storage": {"bucket": BUCKET, "region": REGION}}


def required_for(*args: str) -> tuple[str, ...]:
    """REQUIRED for ``rlgen new ARGS``: the bucket and region go to the storage plugin ARGS pick;
    no git_host when ARGS give one, or a git_url on a host whose name tells it."""
    from rlgen.naming import known_git_host

    storage = next((name for flag, name in zip(args, args[1:]) if flag == "--plugin" and name.endswith("-storage")),
                   "ak-storage")
    core = REQUIRED[:6]
    if not any(a.startswith("rlgen.git_host=") or (a.startswith("rlgen.git_url=") and known_git_host(a[14:]))
               for a in args):
        core += REQUIRED[6:8]
    return (*core, *storage_answers(storage))


def run_rlgen(*args: str, cwd: Path | None = None, env: dict | None = None, input: str | None = None):
    return subprocess.run([sys.executable, "-m", "rlgen", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, input=input)


def ok(result) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def one_error_line(result, code: int = 2) -> str:
    """The single stderr line of a refused command (exit ``code``, no traceback)."""
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def kustomize_roots(repo: Path) -> list[Path]:
    from rlgen.tools.kustomize import roots

    return roots(repo)


def build(root: Path) -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(root)], capture_output=True, text=True)
    assert out.returncode == 0, f"kustomize failed on {root}: {out.stderr}"
    return [d for d in YAML(typ="safe").load_all(out.stdout) if d]


def repo_files(repo: Path) -> dict[str, bytes]:
    """The files of a generated repository, without git's folder and the render cache (ignored by
    the repository's .gitignore; another test may have validated the shared repository)."""
    skip = {".git", ".rlgen-cache"}
    return {p.relative_to(repo).as_posix(): p.read_bytes()
            for p in sorted(repo.rglob("*")) if p.is_file() and not skip & set(p.relative_to(repo).parts)}


def plain_manifests(repo: Path) -> list[dict]:
    """The sync engine's entry points: each cluster folder as the engine reads it (its
    kustomization, else its YAML files and the subfolders holding a kustomization, as
    kustomize-controller builds a folder without one)."""
    docs = []
    for cluster in sorted(p for p in (repo / "clusters").iterdir() if p.is_dir()):
        if (cluster / "kustomization.yaml").exists():
            docs += build(cluster)
            continue
        for path in sorted(cluster.glob("*.yaml")):
            docs += [d for d in YAML(typ="safe").load_all(path.read_text()) if d]
        for sub in sorted(p for p in cluster.iterdir() if (p / "kustomization.yaml").exists()):
            docs += build(sub)
    return docs


def all_objects(repo: Path) -> list[dict]:
    """Every object once: the entry points' own files, and every root outside ``clusters/``
    (a cluster folder's kustomization only adds the shared ``infrastructure/upstream``)."""
    objects = [d for path in sorted((repo / "clusters").rglob("*.yaml")) if path.name != "kustomization.yaml"
               for d in YAML(typ="safe").load_all(path.read_text()) if d]
    for root in kustomize_roots(repo):
        if root.relative_to(repo).parts[0] != "clusters":
            objects += build(root)
    return objects


def pinned(repo: Path, run: str) -> str:
    """The RayJob name pinned in ``runs/<run>/kustomization.yaml``."""
    return re.search(r'"value": "([^"]+)"', (repo / "runs" / run / "kustomization.yaml").read_text())[1]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", message)


def schema_dir() -> Path:
    """``RLGEN_SCHEMA_DIR`` when set (an override), else the catalog rlgen ships."""
    import os

    from rlgen.schemas.shipped import CATALOG

    env = os.environ.get("RLGEN_SCHEMA_DIR")
    return Path(env) if env else CATALOG


def rlgen_in(repo: Path, *args: str, **kwargs):
    """``rlgen ARGS`` run inside ``repo``."""
    return run_rlgen(*args, cwd=repo, **kwargs)


def index_entries(runs) -> str:
    """The lines of a runs index listing ``runs``."""
    return "".join(f"  - ../../../runs/{r}\n" for r in runs)


def listed(repo: Path) -> list[str]:
    """The runs the main environment's index lists, by name."""
    entries = YAML(typ="safe").load((repo / INDEX).read_text())["resources"] or []
    return [e.removeprefix("../../../runs/") for e in entries]
