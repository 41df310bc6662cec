"""The runner and the services its jobs reach, once per session (support/act.py)."""
from __future__ import annotations

import pytest
from support.act import TOKEN, Runner, rlgen_wheel
from support.github_host import Releases, RestApi, release_tarball
from support.toolchain import tool

from rlgen.e2e.git_server import GitServer

KUSTOMIZE = "/kubernetes-sigs/kustomize/releases/download/kustomize%2Fv{v}/kustomize_v{v}_linux_amd64.tar.gz"
KUBECONFORM = "/yannh/kubeconform/releases/download/v{v}/kubeconform-linux-amd64.tar.gz"


def release_files() -> dict[str, bytes]:
    """Path on github.com -> the pinned release of kustomize and kubeconform, as upstream packs them."""
    from support.toolchain import TOOLCHAIN, build

    kustomize = build.read_module(TOOLCHAIN / "kustomize").requires["sigs.k8s.io/kustomize/kustomize/v5"][1:]
    kubeconform = build.read_module(TOOLCHAIN / "kubeconform").requires["github.com/yannh/kubeconform"][1:]
    from pathlib import Path

    return {KUSTOMIZE.format(v=kustomize): release_tarball({"kustomize": Path(tool("kustomize"))}),
            KUBECONFORM.format(v=kubeconform): release_tarball({"kubeconform": Path(tool("kubeconform"))})}


@pytest.fixture(scope="session")
def runner(tmp_path_factory):
    tool("act")  # a missing act skips here, or fails under CI=true, before anything starts
    root = tmp_path_factory.mktemp("runner")
    files = release_files()
    with GitServer(root / "git") as git, RestApi(TOKEN) as api, Releases(root / "tls", files) as releases:
        # One wheel for every worker of the session (an xdist worker's base folder is inside the
        # session's), built anew by each session.
        base = tmp_path_factory.getbasetemp()
        wheels = rlgen_wheel((base.parent if base.name.startswith("popen-gw") else base) / "rlgen-wheelhouse")
        runner = Runner(root, git, api, releases, wheels)
        runner.served = {"kustomize": next(v for k, v in files.items() if "kustomize_v" in k),
                         "kubeconform": next(v for k, v in files.items() if "kubeconform-" in k)}
        yield runner
