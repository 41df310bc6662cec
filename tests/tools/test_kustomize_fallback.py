"""Without kustomize on PATH rlgen renders with kubectl's embedded kustomize, and says so once:
that one may be older than the CI's and render differently."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from support.repos import REPO
from support.toolchain import missing


def test_kubectl_kustomize_is_used_with_one_warning(tmp_path):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        missing("kubectl is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").symlink_to(kubectl)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.path.dirname(sys.executable)}"}
    result = subprocess.run([sys.executable, "-m", "rlgen", "render", str(REPO / "base" / "training"), "-o", "table"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "ConfigMap" in result.stdout
    assert result.stderr.splitlines() == [
        "rlgen: warning: kustomize is not on PATH: rendering with kubectl kustomize, which may render differently "
        "from kustomize v5.7.1, the version the repository's CI runs"]
