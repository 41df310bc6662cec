"""``rlgen validate`` on repositories with many runs, beside a plain loop of one
``kustomize build`` per kustomization root (what a shell CI step would do before validating).

Prints one table: both wall times and their ratio at 50 and at 200 runs.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlgen.generate import kustomizations
from rlgen.tools import kustomize
from rlgen.tools.yamlio import dump
from rlgen.verl import trainer_config

def make_repo(parent: Path, count: int) -> Path:
    repo = parent / f"repo-{count}"
    subprocess.run([sys.executable, "-m", "rlgen", "new", str(repo), "--no-input"], check=True, capture_output=True)
    names = ["baseline"]
    for i in range(1, count):
        name = f"lr-sweep-{i:03d}"
        folder = repo / "runs" / name
        folder.mkdir()
        spec_like = _spec(repo)
        change = {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6 * (1 + i / 100)}}}}
        (folder / "run.yaml").write_text(dump(trainer_config.deep_merge(trainer_config.run_config(spec_like, name), change)))
        (folder / "kustomization.yaml").write_text(kustomizations.run_kustomization(spec_like, name, f"{name}-0000000"))
        names.append(name)
    (repo / "runs" / "kustomization.yaml").write_text(kustomizations.runs_index(names))
    return repo


def _spec(repo: Path):
    from rlgen.generate.pipeline import build_spec
    from rlgen.registry.selection import discover, plugin_manager, select

    selection = select(discover(), [], {}, ask=None)
    return build_spec(selection, plugin_manager(selection))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def plain_loop(repo: Path) -> None:
    for root in kustomize.roots(repo):
        subprocess.run([*kustomize.command(), str(root)], check=True, capture_output=True)


def rlgen_validate(repo: Path) -> None:
    # --offline: rlgen's own schemas cover every generated kind, so no time goes to the network.
    result = subprocess.run([sys.executable, "-m", "rlgen", "validate", str(repo), "--offline", "--output", "json"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(result.stdout[-2000:] + result.stderr)


def main() -> None:
    work = Path(tempfile.mkdtemp())
    print(f"{'runs':>5} {'roots':>6} {'kustomize loop s':>17} {'rlgen validate s':>17} {'ratio':>6}")
    for count in (50, 200):
        repo = make_repo(work, count)
        roots = len(kustomize.roots(repo))
        loop = timed(lambda: plain_loop(repo))
        full = timed(lambda: rlgen_validate(repo))
        print(f"{count:>5} {roots:>6} {loop:>17.2f} {full:>17.2f} {full / loop:>6.2f}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
