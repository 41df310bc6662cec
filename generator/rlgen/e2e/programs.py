"""What ``rlgen e2e`` runs and reads: programs from PATH, and the upstream sources (CRDs, kwok's
pod stages) of the releases rlgen pins, from Go's module cache.

The versions are those of rlgen's toolchain (``toolchain/*/go.mod``, shipped in the package as
``rlgen/e2e/toolchain``): the operators that run are the ones whose CRDs are installed, and
``rlgen e2e --install-tools`` builds exactly those programs, every dependency checked against
go.sum.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.tools import toolchain_pins

TOOLCHAIN = toolchain_pins.FOLDER
#: Go module -> the toolchain folder whose go.mod pins its release.
FOLDERS = {"sigs.k8s.io/kwok": "kwok", "github.com/ray-project/kuberay/ray-operator": "kuberay",
           "github.com/fluxcd/source-controller": "flux", "github.com/fluxcd/kustomize-controller": "flux",
           "github.com/fluxcd/notification-controller": "flux", "github.com/argoproj/argo-cd/v3": "argocd",
           "sigs.k8s.io/kueue": "kueue", "github.com/external-secrets/external-secrets": "external-secrets"}
#: The toolchain folders whose programs rlgen e2e runs (kubectl, openssl, git and go are the
#: runner's own): the control plane's, kustomize (rlgen renders the repository with it), sops
#: and age, which stand in for a SOPS repository's values (rlgen.e2e.sops_stand_in); and the
#: sync engine's, by the engine the repository syncs with (rlgen.repo.sync_engines): Flux's
#: controllers and CLI (``flux bootstrap``), or Argo CD's controller and repo-server.
TOOL_FOLDERS = ("etcd", "kubernetes", "kwok", "kuberay", "kustomize", "sops", "age")
ENGINE_FOLDERS = {"Flux": ("flux", "flux-cli"), "Argo CD": ("argocd",)}
#: The controllers rlgen e2e runs for a repository whose objects are of their API group
#: (rlgen.e2e.kinds): their toolchain folder, and the programs it builds.
GROUP_FOLDERS = {"kueue.x-k8s.io": "kueue", "external-secrets.io": "external-secrets"}
GROUP_PROGRAMS = {"kueue.x-k8s.io": ("kueue",), "external-secrets.io": ("external-secrets",)}


def _build():
    """``toolchain/build.py``: the one reader of the toolchain's go.mod files, and its builder."""
    return toolchain_pins.build_script()


def pinned(module: str) -> str:
    """The release of ``module`` rlgen's toolchain pins."""
    return _build().read_module(TOOLCHAIN / FOLDERS[module]).requires[module]


def install_tools(destination: Path, engine: str, groups=()) -> Path:
    """Build the control plane's programs at the pinned releases, with those of the sync
    ``engine`` (its name: "Flux", "Argo CD") and the controllers of the API ``groups`` the
    repository uses (GROUP_FOLDERS), cached under ``destination`` (a second run with the same
    pins builds nothing) and linked into ``destination/bin``."""
    build = _build()
    os.environ.setdefault("RLGEN_TOOLCHAIN_CACHE", str(destination / "cache"))
    build.LINKS = destination / "bin"

    # build.py prints the folder; the command prints it once, alone on stdout (for $GITHUB_PATH).
    with redirect_stdout(sys.stderr):
        code = build.main([*TOOL_FOLDERS, *ENGINE_FOLDERS[engine],
                           *sorted({GROUP_FOLDERS[g] for g in groups if g in GROUP_FOLDERS})])
    if code:
        raise RlgenError(f"building the pinned control plane into {destination} failed (exit {code})")
    return build.LINKS

#: Every program the throwaway control plane runs, and rlgen's renders, found on PATH.
PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl",
            "ray-operator", "kustomize", "openssl", "git", "go")
#: What each sync engine runs besides: Flux's controllers and CLI; Argo CD's one binary (its
#: application controller and repo-server) and the Redis server they keep their cache in.
ENGINE_PROGRAMS = {"Flux": ("source-controller", "kustomize-controller", "notification-controller", "flux"),
                   "Argo CD": ("argocd", "redis-server")}
#: What a repository whose secrets stage Flux decrypts with SOPS needs besides.
SOPS_PROGRAMS = ("sops", "age-keygen")


class MissingProgram(RlgenError):
    """A program is not on PATH: exit 2, one line naming it."""


#: Where the programs rlgen e2e runs come from, said when one is not on PATH.
ON_PATH = ("rlgen e2e runs the pinned control plane's programs from PATH: rlgen e2e --install-tools DIR builds "
           "them at the pinned releases (Go on PATH) and prints the folder to put on PATH, as the e2e workflow's "
           "install step does")


def program(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise MissingProgram(f"{name} is not on PATH: {ON_PATH}")
    return found


def missing_programs(engine: str | None = None, sops: bool = False, groups=()) -> list[str]:
    """What is not on PATH of the control plane's programs, with the sync ``engine``'s (its
    name), SOPS's stand-in programs and the controllers of the API ``groups`` when asked."""
    wanted = (PROGRAMS + ENGINE_PROGRAMS.get(engine or "", ()) + (SOPS_PROGRAMS if sops else ())
              + tuple(p for g in sorted(groups) for p in GROUP_PROGRAMS.get(g, ())))
    return [name for name in wanted if not shutil.which(name)]


def groups_named(root: Path) -> set[str]:
    """The API groups the YAML files of the repository's HEAD commit name in an ``apiVersion``,
    read from Git without rendering: what ``--install-tools`` builds for, before kustomize is
    there to render with."""
    found = subprocess.run(["git", "-C", str(root), "grep", "-h", "-I", "-o", "-E",
                            r"^\s*(- )?apiVersion:\s*[\"']?[a-z0-9.-]+/", "HEAD", "--", "*.yaml", "*.yml"],
                           capture_output=True, text=True, check=False).stdout
    return {line.split(":", 1)[1].strip().strip("\"'").rstrip("/") for line in found.splitlines()}


@functools.cache
def module_source(module: str) -> Path:
    """The source folder of ``module`` at its pinned release: Go's module cache, downloaded
    (and checked against go.sum's database, GOSUMDB) when it is not there yet."""
    version = pinned(module)
    # Outside any module (a folder of its own): the caller's go.mod, if any, plays no part.
    with tempfile.TemporaryDirectory(prefix="rlgen-e2e-go-") as cwd:
        env = {**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off", "GO111MODULE": "on"}
        result = subprocess.run([program("go"), "mod", "download", "-json", f"{module}@{version}"], cwd=cwd,
                                env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RlgenError(f"go mod download {module}@{version}: {_go_error(result)}")
    return Path(json.loads(result.stdout)["Dir"])


def _go_error(result: subprocess.CompletedProcess) -> str:
    """Why ``go mod download -json`` failed: a module's own error is the "Error" of its JSON on
    stdout (a Go older than its go.mod asks, say), anything else the last line on stderr."""
    try:
        detail = json.loads(result.stdout).get("Error", "")
    except (ValueError, AttributeError):
        detail = ""
    detail = detail or next(iter(result.stderr.strip().splitlines()[-1:]), "failed")
    if "requires go >=" in detail:
        detail += (f": export GOTOOLCHAIN={toolchain_pins.newer_go()} (the go command fetches that release "
                   "through the module proxy)")
    return detail

