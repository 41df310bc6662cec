"""``rlgen e2e`` as a team's CI runs it (the generated e2e workflow's last two steps), for the
modules that test the command: its programs installed, the command run, what it leaves."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from support.repos import run_rlgen
from support.toolchain import BIN, build, tool

#: The whole command, control plane included; the default repository takes about a minute.
TIMEOUT = 600


def installed_programs(repo: Path, folder: Path, engine_programs: tuple[str, ...]) -> dict:
    """The environment of the e2e workflow's last step: on PATH, what ``rlgen e2e --install-tools``
    installs in ``repo`` for its sync engine (from the tests' toolchain cache: nothing is built)
    and the runner's own programs, none of the project's other tools."""
    # Skipped on a developer's machine without the toolchain, failed under CI=true.
    for name in ("etcd", "kube-apiserver", "kwok", "ray-operator", "kustomize", "sops", "age-keygen",
                 *engine_programs):
        tool(name)
    installed = run_rlgen("e2e", "--install-tools", str(folder), cwd=repo,
                          env={**os.environ, "RLGEN_TOOLCHAIN_CACHE": str(build.cache_root())})
    assert installed.returncode == 0, installed.stderr
    others = [p for p in os.environ["PATH"].split(os.pathsep) if Path(p).resolve() != BIN.resolve()]
    return {**os.environ, "PATH": os.pathsep.join([installed.stdout.strip(), *others])}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@rlgen.invalid", *args],
                   check=True, capture_output=True)


def e2e(repo: Path, env: dict, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, str, float]:
    """The command, its job summary and its wall time."""
    summary = tmp_path / "summary.md"
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "rlgen", "e2e", str(repo), "--timeout", "5m", *args],
                            capture_output=True, text=True, timeout=TIMEOUT,
                            env={**env, "GITHUB_STEP_SUMMARY": str(summary), "TMPDIR": str(tmp_path)})
    return result, summary.read_text() if summary.exists() else "", time.monotonic() - start


def e2e_of_an_unknown_kind_and_a_refused_object(repo: Path, env: dict,
                                                tmp_path: Path) -> tuple[subprocess.CompletedProcess, str]:
    """:func:`e2e` of a commit, on a branch of its own, whose platform stage adds a ServiceMonitor
    (a kind rlgen knows no CRD of: "not checked here") and a Service the API server refuses (a
    port out of range). The repository is back on main after."""
    git(repo, "checkout", "--quiet", "-b", "unserved-kind", "main")
    try:
        platform = repo / "overlays" / "production" / "platform"
        (platform / "service-monitor.yaml").write_text(
            "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: trainer\n"
            "  namespace: rl-training\nspec:\n  selector: {}\n  endpoints: []\n")
        (platform / "refused.yaml").write_text(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: refused\n  namespace: rl-training\nspec:\n"
            "  ports:\n    - port: 70000\n")
        kustomization = platform / "kustomization.yaml"
        kustomization.write_text(kustomization.read_text().replace(
            "resources:\n", "resources:\n  - service-monitor.yaml\n  - refused.yaml\n", 1))
        git(repo, "add", "overlays/production/platform")
        git(repo, "commit", "--quiet", "-m", "A ServiceMonitor, and a Service of a port out of range")
        result, summary, _ = e2e(repo, env, tmp_path)
    finally:
        git(repo, "checkout", "--quiet", "--force", "main")
    return result, summary


def leftovers(tmp_path: Path) -> list[str]:
    """Processes still running a program of, or in, the command's temporary folder; and the folder."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            # The operators name the folder only in their environment (KUBECONFIG).
            cmdline, environ = (Path(f"/proc/{pid}/{f}").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                                for f in ("cmdline", "environ"))
        except OSError:
            continue
        if str(tmp_path / "rlgen-e2e-") in cmdline + environ and int(pid) != os.getpid():
            found.append(f"{pid}: {cmdline[:120]}")
    return found + [str(p) for p in tmp_path.glob("rlgen-e2e-*")]


def git_objects(repo: Path) -> set[str]:
    listed = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch-check"],
                            capture_output=True, text=True, check=True).stdout
    return set(listed.split("\n"))
