"""A team's GPU pool shared through Kueue: runs that do not fit wait in the queue, whole and
without pods, and start when a running one ends.

The control plane of this module is its own (a pool of four 8-GPU Lingjun nodes, no other
repository's runs on it) with Kueue running beside KubeRay; the repository is generated with
the kueue queue plugin and a quota of the whole pool, 32 GPUs. A run of two 8-GPU nodes asks
for 16 of them: two fit, a third waits."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml
from rlgen.e2e.controlplane import LINGJUN_LABELS, LINGJUN_TAINT
from support import kueue
from support.controlplane import FAIL_POD, wait_until
from support.flux import NAMESPACE, REGISTRY, reapply, reconcile
from support.kuberay import ray_cluster, ray_pods
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers

#: The label ACK puts on Lingjun nodes, which the GPU flavor selects (rlgen.pool).
LINGJUN = "alibabacloud.com/lingjun-worker"
TWO_NODES = ("--set", "trainer.nnodes=2")
#: The pool is shared by two researchers' teams; most scenarios are alice's.
ALICE, BOB = ("--team", "alice"), ("--team", "bob")
QUEUE_TIMEOUT = 120


pytestmark = pytest.mark.usefixtures("dump_kueue_on_failure")


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def repo(kueue_control_plane, git_server, sync_repository, tmp_path_factory):
    url = git_server.create("team/rl-queued.git")
    repo = tmp_path_factory.mktemp("kueue") / "rl-queued"
    ok(run_rlgen("new", str(repo), "--no-input", "--plugin", "kueue", "--set", "kueue.gpu_quota=32",
                 "--set", "kueue.teams=alice,bob",
                 "--set", f"rlgen.registry={REGISTRY}", *POOL, "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=generic-hmac",
                 "--set", f"rlgen.install={INSTALL}", "--set", f"rlgen.upstream_mirror={git_server.base}",
                 *storage_answers()))
    # The generated run would hold a node of the pool the scenarios count on.
    ok(run_rlgen("run", "rm", "baseline", "--no-branch", cwd=repo))
    git(repo, "remote", "add", "origin", url)
    git(repo, "push", "--quiet", "-u", "origin", "HEAD:main")
    sync_repository(kueue_control_plane, repo, url, "clusters/production")
    return repo


def push(cp, repo) -> None:
    git(repo, "push", "--quiet", "origin", "HEAD:main")
    reconcile(cp)


def rayjobs(repo) -> dict[str, str]:
    return {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}


def admission(cp) -> dict[str, str]:
    return kueue.admission(cp, NAMESPACE)


def running_workers(cp, rayjob: str) -> list[str]:
    return kueue.running_workers(cp, NAMESPACE, rayjob)


def status_rows(cp, repo) -> dict[str, dict]:
    result = run_rlgen("status", "-o", "json", cwd=repo, env={**os.environ, **cp.env()})
    return {r["run"]: r for r in json.loads(result.stdout)["rows"]}


def settle(cp, names: list[str], admitted: int) -> dict[str, str]:
    return wait_until(f"{admitted} of {len(names)} RayJobs admitted by Kueue, the rest queued",
                      lambda: (a := admission(cp)) and set(names) <= set(a)
                      and sorted(a[n] for n in names) == sorted(["admitted"] * admitted
                                                                 + ["queued"] * (len(names) - admitted)) and a,
                      timeout=QUEUE_TIMEOUT)


def test_three_runs_of_two_nodes_on_four_two_start_and_one_waits_without_pods(kueue_control_plane, repo):
    cp = kueue_control_plane
    for run in ("lr-a", "lr-b", "lr-c"):
        ok(run_rlgen("run", "new", run, *TWO_NODES, *ALICE, "--no-branch", cwd=repo))
    push(cp, repo)
    names = rayjobs(repo)
    state = settle(cp, list(names.values()), admitted=2)
    queued = next(run for run, job in names.items() if state[job] == "queued")
    for run, job in names.items():
        if run == queued:
            continue
        nodes = wait_until(f"the workers of {job} scheduled", lambda job=job: running_workers(cp, job))
        assert all(n.startswith("lingjun-gpu-") for n in nodes), nodes
        # Kueue put the GPU flavor's node label on the workers it admitted.
        worker = ray_pods(cp, NAMESPACE, job, "worker")[0]
        assert worker["spec"]["nodeSelector"][LINGJUN] == "true"
    job = cp.objects("rayjobs", "-n", NAMESPACE)
    held = next(j for j in job if j["metadata"]["name"] == names[queued])
    assert held["spec"]["suspend"] is True
    assert ray_cluster(cp, NAMESPACE, names[queued]) is None
    assert not [p for p in cp.objects("pods", "-n", NAMESPACE) if p["metadata"]["name"].startswith(f"{queued}-")]

    rows = status_rows(cp, repo)
    assert rows[queued]["queue"].startswith("queued: 1 of 1 in LocalQueue alice;"), rows[queued]
    assert "nvidia.com/gpu" in rows[queued]["queue"], rows[queued]
    assert all(rows[r]["queue"] == f"admitted by ClusterQueue {NAMESPACE}" for r in names if r != queued), rows
    # A queued run is taken in as far as waiting goes: it may wait for days.
    waited = run_rlgen("status", "--wait", "--timeout", "60s", "-o", "json", cwd=repo, env={**os.environ, **cp.env()})
    assert waited.returncode == 0, waited.stdout + waited.stderr

    # One run ends: removed, pruned by the sync; the queued one is admitted and its pods placed.
    ended = next(r for r in names if r != queued)
    ok(run_rlgen("run", "rm", ended, "--no-branch", cwd=repo))
    push(cp, repo)
    wait_until(f"{names[queued]} admitted", lambda: admission(cp).get(names[queued]) == "admitted",
               timeout=QUEUE_TIMEOUT)
    wait_until(f"the workers of {names[queued]} scheduled", lambda: running_workers(cp, names[queued]),
               timeout=QUEUE_TIMEOUT)
    for run in names:
        if run != ended:
            ok(run_rlgen("run", "rm", run, "--no-branch", cwd=repo))
    push(cp, repo)
    wait_until("every run's RayJob pruned", lambda: not cp.objects("rayjobs", "-n", NAMESPACE), timeout=QUEUE_TIMEOUT)


def test_a_sweep_of_four_two_node_runs_runs_two_at_a_time(kueue_control_plane, repo):
    cp = kueue_control_plane
    # Four runs of 16 GPUs, twice what the quota runs at once: asked for by name.
    ok(run_rlgen("run", "sweep", "lr", "--grid", "actor_rollout_ref.actor.optim.lr=1e-6,2e-6,3e-6,4e-6",
                 *TWO_NODES, *ALICE, "--max-runs", "4", "--no-branch", cwd=repo))
    push(cp, repo)
    names = rayjobs(repo)
    assert len(names) == 4
    state = settle(cp, list(names.values()), admitted=2)
    waiting = sorted(run for run, job in names.items() if state[job] == "queued")
    for run in waiting:
        assert ray_cluster(cp, NAMESPACE, names[run]) is None
    rows = status_rows(cp, repo)
    places = sorted(rows[r]["queue"].split(";")[0] for r in waiting)
    assert places == ["queued: 1 of 2 in LocalQueue alice", "queued: 2 of 2 in LocalQueue alice"], rows


def test_a_sync_after_admission_leaves_kueue_s_fields_and_the_admission(kueue_control_plane, repo):
    """Flux applies the runs again (its interval, forced here): the RayJob Kueue admitted keeps
    what Kueue wrote into it, the worker templates too (an atomic list, which an apply of Git's
    version would replace whole), and its Workload stays admitted, never evicted."""
    cp = kueue_control_plane
    job = next(j for j in rayjobs(repo).values() if admission(cp).get(j) == "admitted")
    wait_until(f"the workers of {job} scheduled", lambda: running_workers(cp, job))
    before, workload = kueue.kueue_fields(live_rayjob(cp, job)), kueue.admitted_workload(cp, NAMESPACE, job)
    reapply(cp, "runs")
    kueue.assert_kept(before, workload, kueue.kueue_fields(live_rayjob(cp, job)),
                      kueue.admitted_workload(cp, NAMESPACE, job))
    assert running_workers(cp, job)


def test_doctor_finds_kueue_and_the_queue_objects(kueue_control_plane, repo):
    result = run_rlgen("doctor", "-o", "json", cwd=repo, env={**os.environ, **kueue_control_plane.env()})
    rows = {r["check"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["Kueue RayJob webhook"]["state"] == "ok", rows
    assert rows[f"ClusterQueue {NAMESPACE}"] == {**rows[f"ClusterQueue {NAMESPACE}"], "state": "ok", "detail": "active"}
    assert rows[f"LocalQueue {NAMESPACE}/runs"]["detail"] == "active"
    assert rows["API kueue.x-k8s.io/v1beta2"]["state"] == "ok"


def doctor_rows(cp, repo) -> dict[str, dict]:
    result = run_rlgen("doctor", "-o", "json", cwd=repo, env={**os.environ, **cp.env()})
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return {r["check"]: r for r in json.loads(result.stdout)["rows"]}


def other_answers(tmp_path, name: str, *answers: str):
    """A repository of this team's generated with other pool answers, never synced: doctor reads
    its answers and its rendered flavor against the cluster's nodes."""
    other = tmp_path / name
    ok(run_rlgen("new", str(other), "--no-input", "--plugin", "kueue", "--set", "kueue.gpu_quota=32", "--set", "kueue.teams=rl-team",
                 "--set", f"rlgen.registry={REGISTRY}", "--set", "rlgen.git_url=https://git.rl-team.cn/team/rl.git", "--set", "rlgen.git_host=gitlab",
                 "--set", f"rlgen.install={INSTALL}", *storage_answers(), *answers))
    return other


def test_doctor_says_which_pool_answers_the_nodes_contradict(kueue_control_plane, repo, tmp_path):
    """The nodes are ACK's Lingjun nodes of 8 GPUs, 180 CPUs and 1800Gi: the repository's answers
    match them; answers of an ECS pool, a larger node or a taint the nodes lack do not, and a node
    carrying a taint the answers do not list is named."""
    cp = kueue_control_plane
    rows = doctor_rows(cp, repo)
    for check in ("node pool labels", "node pool taints", "node pool size", f"ResourceFlavor {NAMESPACE}-lingjun-gpu nodes"):
        assert rows[check]["state"] == "ok", rows[check]
    assert LINGJUN in rows["node pool labels"]["detail"]

    ecs = doctor_rows(cp, other_answers(tmp_path, "ecs", "--set", "rlgen.node_pool=ecs-gpu",
                                        "--set", "rlgen.node_pool_id=np-absent", "--set", "rlgen.node_cpu=32",
                                        "--set", "rlgen.node_memory=188"))
    assert ecs["node pool labels"]["state"] == "problem"
    assert "no node carries alibabacloud.com/nodepool-id=np-absent" in ecs["node pool labels"]["detail"]
    assert ecs[f"ResourceFlavor {NAMESPACE}-ecs-gpu-gpu nodes"]["state"] == "problem"
    assert "node pool size" not in ecs

    larger = doctor_rows(cp, other_answers(tmp_path, "larger", *POOL[:2], "--set", "rlgen.node_cpu=200",
                                           "--set", "rlgen.node_memory=1800", "--set", "rlgen.node_taints=team=rl:NoSchedule"))
    assert larger["node pool labels"]["state"] == "ok"
    assert larger["node pool size"]["state"] == "problem"
    assert "180 CPUs" in larger["node pool size"]["detail"]
    assert larger["node pool size"]["fix"].startswith("rlgen update --set rlgen.node_cpu=180 ")
    assert larger["node pool taints"]["state"] == "problem"
    assert "team:NoSchedule" in larger["node pool taints"]["detail"]

    cp.add_node("lingjun-gpu-tainted", gpus=8, cpu="180", memory="1800Gi", labels=LINGJUN_LABELS,
                taints=[LINGJUN_TAINT, {"key": "maintenance", "value": "disk", "effect": "NoExecute"}])
    try:
        taints = doctor_rows(cp, repo)["node pool taints"]
    finally:
        cp.kubectl("delete", "node", "lingjun-gpu-tainted")
    assert taints["state"] == "problem"
    assert "node lingjun-gpu-tainted carries taint maintenance=disk:NoExecute" in taints["detail"]
    assert "rlgen.node_taints=maintenance=disk:NoExecute" in taints["fix"]


def test_a_lost_worker_node_gets_a_new_worker_and_the_run_stays_admitted(kueue_control_plane, repo):
    """A node of a running run goes away mid-run: the pod garbage collector deletes its worker,
    KubeRay makes a new one in the same RayCluster, and Kueue keeps the run admitted (its
    quota is GPUs, not nodes): the run goes on, nothing queued starts in its place."""
    cp = kueue_control_plane
    names = rayjobs(repo)
    before = admission(cp)
    job = next(j for j in names.values() if before.get(j) == "admitted")
    lost = wait_until(f"the workers of {job} scheduled", lambda: running_workers(cp, job))[0]
    cluster = ray_cluster(cp, NAMESPACE, job)
    cp.kubectl("delete", "node", lost)
    cp.add_lingjun_node("lingjun-gpu-replacement")
    nodes = wait_until(f"a new worker of {job} placed off {lost}",
                       lambda: (n := running_workers(cp, job)) and lost not in n and n, timeout=240)
    assert "lingjun-gpu-replacement" in nodes
    assert ray_cluster(cp, NAMESPACE, job) == cluster
    assert admission(cp) == before


def head_pod(cp, rayjob: str) -> dict | None:
    """The RayJob's head pod once it is scheduled."""
    pods = [p for p in ray_pods(cp, NAMESPACE, rayjob, "head") if p["spec"].get("nodeName")]
    return pods[0] if len(pods) == 1 else None


def live_rayjob(cp, name: str) -> dict:
    return kueue.live_rayjob(cp, NAMESPACE, name)


def cluster_spec(cp, name: str) -> dict:
    return json.loads(cp.kubectl("get", "raycluster", name, "-n", NAMESPACE, "-o", "json").stdout)["spec"]


def replace_node(cp, lost: str) -> None:
    """A node like ``lost``, so what ran there has somewhere to go."""
    if lost.startswith("lingjun-gpu-"):
        cp.add_lingjun_node(f"{lost}-again")
    else:
        cp.add_node(f"{lost}-again", cpu="32", memory="128Gi")


def test_a_lost_head_is_recreated_and_a_run_that_fails_whole_retries_on_a_new_ray_cluster(kueue_control_plane, repo):
    """KubeRay v1.6.2 in K8sJobMode: a head pod lost with its node is made again in the same
    RayCluster (no retry; the submitter's own retries submit the run again to it). Once the
    submitter fails for good, the RayJob fails as a whole and its backoffLimit starts it again:
    the same RayJob, a new RayCluster, the same run's ConfigMap and checkpoint folder, still
    admitted by Kueue; ``rlgen status`` reports the retry."""
    cp = kueue_control_plane
    names = rayjobs(repo)
    before = admission(cp)
    run, job = next((r, j) for r, j in sorted(names.items()) if before.get(j) == "admitted")
    head = wait_until(f"the head of {job} scheduled", lambda: head_pod(cp, job))
    cluster = ray_cluster(cp, NAMESPACE, job)
    spec = cluster_spec(cp, cluster)
    lost = head["spec"]["nodeName"]
    cp.kubectl("delete", "node", lost)
    replace_node(cp, lost)
    again = wait_until(f"a new head of {job} placed off {lost}",
                       lambda: (h := head_pod(cp, job)) and h["metadata"]["uid"] != head["metadata"]["uid"]
                       and h["spec"]["nodeName"] != lost and h, timeout=240)
    assert again["metadata"]["labels"]["ray.io/cluster"] == cluster
    assert ray_cluster(cp, NAMESPACE, job) == cluster
    assert (live_rayjob(cp, job)["status"].get("failed") or 0) == 0
    assert status_rows(cp, repo)[run]["retries"] == ""

    # The submitter's ten retries (submitterConfig.backoffLimit) are one here: ten growing
    # back-offs of the Job controller would take half an hour. KubeRay names the Job as the RayJob.
    cp.kubectl("patch", "job", job, "-n", NAMESPACE, "--type=merge", "-p", json.dumps({"spec": {"backoffLimit": 0}}))

    def submitter_failed_and_retried():
        for pod in cp.objects("pods", "-n", NAMESPACE, "-l", f"job-name={job}"):
            if pod["status"].get("phase") == "Running" and FAIL_POD not in pod["metadata"].get("labels", {}):
                cp.kubectl("label", "pod", pod["metadata"]["name"], "-n", NAMESPACE, f"{FAIL_POD}=true", check=False)
        return (c := ray_cluster(cp, NAMESPACE, job)) and c != cluster and c

    retried = wait_until(f"{job} retried with a new RayCluster", submitter_failed_and_retried, timeout=180)
    live = live_rayjob(cp, job)
    assert live["status"]["failed"] == 1 and live["spec"]["backoffLimit"] == 3
    # The same run: its pods mount the same ConfigMap and checkpoint volume, and the run's
    # config tells verl to resume from its own folder.
    assert cluster_spec(cp, retried)["headGroupSpec"]["template"]["spec"]["volumes"] == \
        spec["headGroupSpec"]["template"]["spec"]["volumes"]
    configmap = next(v["configMap"]["name"] for v in spec["headGroupSpec"]["template"]["spec"]["volumes"]
                     if v["name"] == "configs")
    data = json.loads(cp.kubectl("get", "configmap", configmap, "-n", NAMESPACE, "-o", "json").stdout)["data"]
    trainer = yaml.safe_load(data["run.yaml"])["trainer"]
    # The run's checkpoint root (its commit below the run's folder); the RayJob, the same one
    # retried, saves and resumes below it in a folder named for it.
    assert trainer["default_local_dir"].startswith(f"/var/checkpoints/{run}/") and trainer["resume_mode"] == "auto"
    wait_until(f"the retried {job}'s workers scheduled", lambda: running_workers(cp, job), timeout=QUEUE_TIMEOUT)
    assert admission(cp)[job] == "admitted"
    assert status_rows(cp, repo)[run]["retries"] == "1 of 3"


def test_two_teams_sweeps_share_the_pool_by_fair_share(kueue_control_plane, repo):
    """Alice's sweep holds the whole quota (two runs admitted, two queued) when Bob's sweep of two
    runs arrives. A running run of Alice's ends: Kueue admits one of Bob's next, though Alice's
    queued runs waited longer, as admission fair sharing orders the teams' LocalQueues by their
    recent use of the pool."""
    cp = kueue_control_plane
    before, state = rayjobs(repo), admission(cp)
    running = sorted(run for run, job in before.items() if state.get(job) == "admitted")
    waiting = [before[run] for run, job in before.items() if state.get(job) == "queued"]
    assert len(running) == 2 and len(waiting) == 2, state
    ok(run_rlgen("run", "sweep", "bob-lr", "--grid", "actor_rollout_ref.actor.optim.lr=1e-6,2e-6", *TWO_NODES, *BOB,
                 "--no-branch", cwd=repo))
    push(cp, repo)
    bobs = [job for run, job in rayjobs(repo).items() if run.startswith("bob-lr-")]
    wait_until("Bob's two runs queued", lambda: [admission(cp).get(j) for j in bobs] == ["queued", "queued"],
               timeout=QUEUE_TIMEOUT)
    assert {r["queue"].split(";")[0] for run, r in status_rows(cp, repo).items() if run.startswith("bob-lr-")} == {
        "queued: 1 of 2 in LocalQueue bob", "queued: 2 of 2 in LocalQueue bob"}

    ok(run_rlgen("run", "rm", running[0], "--no-branch", cwd=repo))
    push(cp, repo)
    admitted = wait_until("a queued run admitted in the freed quota", lambda: [
        j for j in (*bobs, *waiting) if admission(cp).get(j) == "admitted"], timeout=QUEUE_TIMEOUT)
    assert len(admitted) == 1 and admitted[0] in bobs, (admitted, bobs)
    wait_until(f"the workers of {admitted[0]} scheduled", lambda: running_workers(cp, admitted[0]),
               timeout=QUEUE_TIMEOUT)
    assert all(admission(cp).get(j) == "queued" for j in waiting)
