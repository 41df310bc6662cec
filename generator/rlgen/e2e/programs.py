"""What ``rlgen e2e`` runs and reads: programs from PATH, and the upstream sources (CRDs, kwok's
pod stages) of the releases rlgen pins, from Go's module cache.

The versions are those of rlgen's toolchain (``toolchain/*/go.mod``, shipped in the package as
``rlgen/e2e/toolchain``): the operators that run are the ones whose CRDs are installed, and
``rlgen e2e --install-tools`` builds exactly those programs, every dependency checked against
go.sum.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

from rlgen.errors import RlgenError

TOOLCHAIN = Path(__file__).resolve().parent / "toolchain"
#: Go module -> the toolchain folder whose go.mod pins its release.
FOLDERS = {"sigs.k8s.io/kwok": "kwok", "github.com/ray-project/kuberay/ray-operator": "kuberay",
           "github.com/fluxcd/source-controller": "flux", "github.com/fluxcd/kustomize-controller": "flux",
           "github.com/fluxcd/notification-controller": "flux"}
#: The toolchain folders whose programs rlgen e2e runs (kubectl, openssl, git and go are the
#: runner's own): the control plane's, the flux CLI (``flux bootstrap``), kustomize (rlgen
#: renders the repository with it), and
#: sops and age, which stand in for a SOPS repository's values (rlgen.e2e.sops_stand_in).
TOOL_FOLDERS = ("etcd", "kubernetes", "kwok", "kuberay", "flux", "flux-cli", "kustomize", "sops", "age")


@functools.cache
def _build():
    """``toolchain/build.py``: the one reader of the toolchain's go.mod files, and its builder."""
    spec = importlib.util.spec_from_file_location("rlgen_toolchain_build", TOOLCHAIN / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def pinned(module: str) -> str:
    """The release of ``module`` rlgen's toolchain pins."""
    return _build().read_module(TOOLCHAIN / FOLDERS[module]).requires[module]


def install_tools(destination: Path) -> Path:
    """Build the control plane's programs at the pinned releases (cached under ``destination``:
    a second run with the same pins builds nothing) and link them into ``destination/bin``."""
    build = _build()
    os.environ.setdefault("RLGEN_TOOLCHAIN_CACHE", str(destination / "cache"))
    build.LINKS = destination / "bin"

    # build.py prints the folder; the command prints it once, alone on stdout (for $GITHUB_PATH).
    with redirect_stdout(sys.stderr):
        code = build.main(list(TOOL_FOLDERS))
    if code:
        raise RlgenError(f"building the pinned control plane into {destination} failed (exit {code})")
    return build.LINKS

#: Every program the throwaway control plane runs, and rlgen's renders, found on PATH.
PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl",
            "ray-operator", "source-controller", "kustomize-controller", "notification-controller", "flux", "kustomize",
            "openssl", "git", "go")
#: What a repository whose secrets stage Flux decrypts with SOPS needs besides.
SOPS_PROGRAMS = ("sops", "age-keygen")


class MissingProgram(RlgenError):
    """A program is not on PATH: exit 2, one line naming it."""


def program(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise MissingProgram(f"{name} is not on PATH: rlgen e2e runs the pinned control plane's programs "
                             "from PATH (the e2e workflow's install step puts them there)")
    return found


def missing_programs(sops: bool = False) -> list[str]:
    return [name for name in PROGRAMS + (SOPS_PROGRAMS if sops else ()) if not shutil.which(name)]


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
        detail = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise RlgenError(f"go mod download {module}@{version}: {detail[-1] if detail else 'failed'}")
    return Path(json.loads(result.stdout)["Dir"])

