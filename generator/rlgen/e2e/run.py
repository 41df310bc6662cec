"""``rlgen e2e``: one commit of a repository synced on a throwaway control plane, as its cluster
would sync it, before the commit is merged.

The control plane (etcd, kube-apiserver, controller manager, scheduler, kwok's GPU-shaped nodes,
KubeRay, the sync engine) runs from PATH in a temporary folder on 127.0.0.1 and is gone when the
command ends, however it ends (an error, Ctrl-C, SIGTERM). The commit is served by a Git server
of its own at the branch the cluster follows. Flux: ``flux bootstrap git --path
clusters/<cluster>`` installs Flux's components and commits them on top (to that server only;
rlgen.e2e.flux_sync). Argo CD: its release manifest installed, the root Application applied, as
the README says (rlgen.e2e.argo_sync), the Applications fetching that server
(rlgen.e2e.served_url). Every Secret the repository reads gets a placeholder value (SOPS files:
see sops_stand_in): nothing here ever holds a credential.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from rlgen.errors import ProblemsFound, RlgenError

PLACEHOLDER = "rlgen-e2e-placeholder"
#: Where the commits on top of the one tested keep their objects: one folder, so that each
#: finds the one it is made on (rlgen.e2e.commit_on_top).
ON_TOP = "on-top"


@dataclass
class Outcome:
    cluster: str
    commit: str
    pool: str = ""
    stages: dict = field(default_factory=dict)
    failed_stage: str = ""
    problems: list = field(default_factory=list)
    status: str = ""
    doctor: list = field(default_factory=list)
    seconds: float = 0.0
    #: SOPS-encrypted files synced as placeholders encrypted for the run's own age key.
    sops_files: int = 0
    #: The sync engine's name, as rlgen.repo.sync_engines has it.
    engine: str = "Flux"
    #: What runs for the repository's kinds besides KubeRay and the engine (rlgen.e2e.kinds).
    running: list = field(default_factory=list)
    #: The kinds no controller serves here, one line each: named, never a failure.
    unchecked: list = field(default_factory=list)
    #: The pods the RRSA pod identity webhook gave credentials to (filled as it does).
    rrsa_pods: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def _checked(where: Path, cluster: str | None):
    """The repository, its answers, the cluster to sync and its commit, needs and sync engine,
    once every check that needs no control plane has passed."""
    # Lazy, as the rest of this module's imports: the kubernetes extra is checked first, so a
    # missing one is one line and not an ImportError.
    from rlgen.e2e.kinds import groups
    from rlgen.e2e.programs import missing_programs
    from rlgen.errors import require_extra
    from rlgen.kube import needs as needs_mod
    from rlgen.repo import sync_engines
    from rlgen.repo.workspace import find_root, load_spec

    require_extra("cluster", "rlgen e2e (rlgen status and doctor against the control plane)", "kubernetes")
    root = find_root(where)
    spec = load_spec(root)
    cluster = cluster or spec.cluster
    known = sorted(p.name for p in (root / "clusters").iterdir() if p.is_dir()) if (root / "clusters").is_dir() else []
    if cluster not in known:
        raise RlgenError(f"--cluster: no cluster '{cluster}' syncs {root} (clusters/: {', '.join(known)})")
    missing = missing_programs()
    # HEAD, and the changes it leaves out, said before a missing program stops the run.
    commit = _commit(root) if "git" not in missing else ""
    if missing:
        raise _not_on_path(missing)
    needs = needs_mod.read(root)
    engine = sync_engines.engine_of(needs.sync_objects)
    if engine is None:
        raise RlgenError(f"{root / 'clusters' / cluster}: no Flux Kustomization or Argo CD Application to sync")
    # Known once rendered: the engine's programs, SOPS's stand-ins for a secrets stage Flux
    # decrypts, the controllers of the kinds it uses.
    if missing := missing_programs(engine.name, sops=bool(needs.decryption_keys), groups=groups(needs)):
        raise _not_on_path(missing)
    return root, spec, cluster, commit, needs, engine


def _commit(root: Path) -> str:
    """HEAD, the commit rlgen e2e syncs; said first when the work tree holds changes it leaves out."""
    commit = _git(root, "rev-parse", "HEAD")
    if changed := _git(root, "status", "--porcelain").splitlines():
        # "XY path" lines (the first one's leading blank stripped with the output's).
        shown = ", ".join(line.split(maxsplit=1)[1] for line in changed[:3]) + (", ..." if len(changed) > 3 else "")
        _say(f"the work tree has {len(changed)} uncommitted change(s) ({shown}): this syncs HEAD {commit[:7]} "
             "without them; commit them to test them")
    return commit


def _not_on_path(missing: list[str]) -> RlgenError:
    # Lazy: see _checked.
    from rlgen.e2e.programs import ON_PATH

    return RlgenError(f"not on PATH: {', '.join(missing)} ({ON_PATH})")


def run(where: Path, cluster: str | None, gpu_nodes: int | None, timeout: float, keep: bool = False,
        max_nodes: int | None = None) -> Outcome:
    """``timeout``: for the pool's nodes and the sync together, and again for the runs' pods;
    ``max_nodes``: the most GPU nodes the pool may have, its default (a run's nodes) too."""
    start = time.monotonic()
    root, spec, cluster, commit, needs, engine = _checked(where, cluster)
    # Lazy: see _checked.
    from rlgen.e2e.cluster import add_pool, pool_of
    from rlgen.e2e.controlplane import ControlPlane
    from rlgen.e2e.git_server import GitServer
    from rlgen.tools.signals import terminate_as_interrupt

    pool = pool_of(spec, needs, _nodes(spec, gpu_nodes, max_nodes))
    outcome = Outcome(cluster, commit, pool.describe(), engine=engine.name)
    work = Path(tempfile.mkdtemp(prefix="rlgen-e2e-"))
    cp = ControlPlane(work / "cluster")
    try:
        with terminate_as_interrupt(), GitServer(work / "git") as server, ExitStack() as services:
            _say(f"control plane in {work}")
            cp.start()
            add_pool(cp, pool, deadline=time.monotonic() + timeout)
            sync = _sync_flux if engine.name == "Flux" else _sync_argo
            synced = sync(cp, server, root, spec, cluster, needs, outcome, work, timeout, services)
            outcome.stages = synced.stages
            if synced.failed:
                outcome.failed_stage = synced.failed
                outcome.problems.append(synced.problem)
            else:
                _status(cp, root, outcome, timeout)
            _doctor(cp, root, outcome)
    finally:
        cp.stop()
        if keep:
            _say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    outcome.seconds = time.monotonic() - start
    return outcome


def _nodes(spec, gpu_nodes: int | None, max_nodes: int | None) -> int:
    if max_nodes is not None and (gpu_nodes or spec.nnodes) > max_nodes:
        raise RlgenError(f"a run needs {spec.nnodes} nodes (rlgen.nnodes), more than the {max_nodes} GPU nodes "
                         "rlgen e2e makes: pass --gpu-nodes N to sync on fewer")
    return gpu_nodes or spec.nnodes


def _sync_flux(cp, server, root: Path, spec, cluster: str, needs, outcome: Outcome, work: Path, timeout: float,
               services: ExitStack):
    """KubeRay and Flux's controllers, what the repository's kinds need; the Secrets and the
    commit; ``flux bootstrap``, which applies Flux's own Deployments, then every Kustomization Ready."""
    # Lazy: see _checked.
    from rlgen.e2e import flux_sync
    from rlgen.e2e.cluster import start_operators
    from rlgen.e2e.programs import program

    start_operators(cp, needs.csi_drivers, flux_deployments=False)
    served = _serve_kinds(cp, needs, outcome, work, services)
    url = _secrets_and_commit(cp, server, root, needs, spec.git_branch, outcome, work, served.token_file)
    _say(f"syncing {outcome.commit[:7]} from clusters/{cluster}/")
    _say(f"flux bootstrap git --path=clusters/{cluster}")
    return flux_sync.sync(cp, program("flux"), url, spec.git_branch, f"clusters/{cluster}", timeout, work,
                          PLACEHOLDER)


def _sync_argo(cp, server, root: Path, spec, cluster: str, needs, outcome: Outcome, work: Path, timeout: float,
               services: ExitStack):
    """KubeRay and Argo CD, what the repository's kinds need; the Secrets; the commit with the
    Applications fetching the run's Git server (rlgen.e2e.served_url); the root applied, then
    every Application Synced."""
    # Lazy: see _checked.
    from rlgen.e2e import argo, argo_sync, served_url
    from rlgen.e2e.cluster import start_operators
    from rlgen.e2e.programs import pinned, program

    start_operators(cp, needs.csi_drivers, flux=False)
    _say(f"installing Argo CD {pinned(argo.MODULE)} from its release manifest")
    argo.install(cp, program("redis-server"))
    kinds = _serve_kinds(cp, needs, outcome, work, services)
    _placeholders(cp, needs, {})
    folder = f"clusters/{cluster}"
    commit = _token_stand_in(root, outcome.commit, work, kinds.token_file)
    served = served_url.stand_in(root, commit, work / ON_TOP, folder, spec.git_url, server.url("repository.git"))
    _publish(server, root, served.commit, spec.git_branch, served.env)
    _say(f"syncing {outcome.commit[:7]} from {folder}/")
    _say(f"kubectl apply -n {argo.NAMESPACE} -f {folder}/{served.root_file}")
    return argo_sync.sync(cp, served.root_documents, argo_sync.applications(root, folder), timeout)


def _say(text: str) -> None:
    print(f"rlgen e2e: {text}", file=sys.stderr, flush=True)


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RlgenError(f"{root}: git {' '.join(args)}: {result.stderr.strip().splitlines()[-1:] or ['failed']}")
    return result.stdout.strip()


def _serve_kinds(cp, needs, outcome: Outcome, work: Path, services: ExitStack):
    """rlgen.e2e.kinds, each thing started and each kind not checked here said in one line."""
    # Lazy: see _checked.
    from rlgen.e2e.kinds import serve

    served = serve(cp, needs, work / "kinds", services, PLACEHOLDER)
    outcome.running, outcome.unchecked, outcome.rrsa_pods = served.running, served.unchecked, served.rrsa_pods
    for line in served.running:
        _say(f"serving: {line}")
    for line in served.unchecked:
        _say(f"not checked here: {line}")
    return served


def _token_stand_in(root: Path, commit: str, work: Path, token_file: Path | None) -> str:
    """``commit``, or the commit on top whose RRSA stores read External Secrets' token here."""
    # Lazy: see _checked.
    from rlgen.e2e import external_secrets

    return external_secrets.stand_in(root, commit, work / ON_TOP, token_file)[0] if token_file else commit


def _secrets_and_commit(cp, server, root: Path, needs, branch: str, outcome: Outcome, work: Path,
                        token_file: Path | None) -> str:
    """The Secrets and the served commit: placeholders, and the stand-in commits on top (RRSA
    stores' token file; SOPS files)."""
    # Lazy: see _checked.
    from rlgen.e2e.commit_on_top import git_env
    from rlgen.e2e.sops_stand_in import AGE_KEY, stand_in

    commit = _token_stand_in(root, outcome.commit, work, token_file)
    sops = stand_in(root, commit, work / ON_TOP, PLACEHOLDER.encode()) if needs.decryption_keys else None
    outcome.sops_files = sops.files if sops else 0
    _placeholders(cp, needs, {AGE_KEY: sops.identity} if sops else {})
    env = git_env(root, work / ON_TOP) if commit != outcome.commit or sops else None
    return _publish(server, root, sops.commit if sops else commit, branch, env)


def _publish(server, root: Path, commit: str, branch: str, env: dict | None) -> str:
    """``commit`` of ``root`` at ``branch`` of a bare repository the Git server serves; ``env``
    lets Git find a commit written outside the repository (the SOPS stand-in's)."""
    url = server.create("repository.git")
    # A CI checkout is shallow: the server takes its history as it is.
    subprocess.run(["git", "-C", str(server.root / "repository.git"), "config", "receive.shallowUpdate", "true"],
                   check=True)
    pushed = subprocess.run(["git", "-C", str(root), "push", "--quiet", url, f"{commit}:refs/heads/{branch}"],
                            env=env, capture_output=True, text=True)
    if pushed.returncode != 0:
        raise RlgenError(f"{root}: git push: {pushed.stderr.strip() or 'failed'}")
    return url


def _placeholders(cp, needs, age_key: dict[str, str]) -> None:
    """Every Secret the repository reads (its secret plan and its rendered references), each key a
    placeholder, in namespaces created ahead of the sync (it adopts them); an age key Flux
    decrypts with holds ``age_key`` (the stand-in's identity), sent on standard input. A Secret
    an ExternalSecret fills is External Secrets' to create (rlgen.e2e.external_secrets)."""
    for (namespace, name), need in sorted(needs.secrets.items()):
        cp.kubectl("create", "namespace", namespace, check=False)
        if (namespace, name) in needs.external_secrets:
            continue
        if (namespace, name) in needs.decryption_keys and age_key:
            data = {k: base64.b64encode(v.encode()).decode() for k, v in age_key.items()}
            cp.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {
                "name": name, "namespace": namespace}, "data": data}))
            continue
        keys = sorted(need.keys) or ["value"]
        cp.kubectl("create", "secret", "generic", name, "-n", namespace,
                   *(f"--from-literal={key}={PLACEHOLDER}" for key in keys))


def _rlgen(root: Path, cp, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlgen", *args, "--kubeconfig", str(cp.kubeconfig)], cwd=root,
                          capture_output=True, text=True)


def _status(cp, root: Path, outcome: Outcome, timeout: float) -> None:
    """``rlgen status --wait``: each run's pods scheduled, or the reason one cannot be."""
    result = _rlgen(root, cp, "status", "--wait", "--timeout", f"{int(timeout)}s", "--interval", "2",
                    "--output", "table")
    outcome.status = result.stdout.rstrip()
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        reason = lines[-1] if lines else f"exit {result.returncode}"
        outcome.problems.append(f"rlgen status --wait: {reason.removeprefix('rlgen: error: ')}")


def _doctor(cp, root: Path, outcome: Outcome) -> None:
    result = _rlgen(root, cp, "doctor", "--output", "json")
    try:
        rows = json.loads(result.stdout)["rows"]
    except (json.JSONDecodeError, KeyError):
        outcome.problems.append(f"rlgen doctor: {result.stderr.strip() or 'no output'}")
        return
    outcome.doctor = rows
    for row in rows:
        if row.get("state") not in ("ok", "skipped"):
            fix = f" (fix: {row['fix']})" if row.get("fix") else ""
            outcome.problems.append(f"rlgen doctor: {row['check']}: {row['detail']}{fix}")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def summary(outcome: Outcome) -> str:
    """The job summary: the verdict first, then what it rests on."""
    verdict = "passed" if outcome.passed else "failed"
    lines = [f"## rlgen e2e {verdict}: clusters/{outcome.cluster}/ at {outcome.commit[:7]}", ""]
    if outcome.problems:
        lines += [f"- {_cell(p)}" for p in outcome.problems] + [""]
    stand_in = (f" ({outcome.sops_files} SOPS file(s) too, encrypted for an age key made for this run)"
                if outcome.sops_files else "")
    lines += [f"Throwaway control plane synced by {outcome.engine}, {outcome.seconds:.0f} s; GPU pool: {outcome.pool}; "
              f"every Secret a placeholder{stand_in}.", ""]
    lines += [f"- serving: {_cell(line)}" for line in outcome.running]
    lines += [f"- not checked here: {_cell(line)}" for line in outcome.unchecked]
    if outcome.rrsa_pods:
        lines.append(f"- RRSA credentials given to {len(outcome.rrsa_pods)} pod(s): "
                     f"{_cell(', '.join(sorted(set(outcome.rrsa_pods))))}")
    lines += [""] * bool(outcome.running or outcome.unchecked)
    lines += ["| stage | ready | reason | message |", "| --- | --- | --- | --- |"]
    for name, condition in sorted(outcome.stages.items()):
        lines.append(f"| {name} | {condition.get('status', '-')} | {_cell(condition.get('reason', ''))} "
                     f"| {_cell(condition.get('message', ''))[:300]} |")
    if outcome.status:
        lines += ["", "### rlgen status --wait", "", "```", outcome.status, "```"]
    if outcome.doctor:
        lines += ["", "### rlgen doctor", "", "| check | state | detail |", "| --- | --- | --- |"]
        lines += [f"| {_cell(r['check'])} | {r['state']} | {_cell(r.get('detail', ''))} |" for r in outcome.doctor]
    return "\n".join(lines) + "\n"


def report(outcome: Outcome) -> None:
    """Print the summary, append it to the job summary of GitHub Actions, and fail on a problem."""
    text = summary(outcome)
    print(text)
    if path := os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
    if not outcome.passed:
        raise ProblemsFound(outcome.problems[0])
