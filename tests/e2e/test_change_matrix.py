"""The change matrix: one synced repository taken through the changes its README advertises, one
pull request each (rlgen's update branch merged with a merge commit and pushed), in the order a
team might make them. After each, on the cluster: every Flux stage Ready at the pushed revision,
every object the change took out of the stages' inventories gone (bar the volumes and claims,
which Flux is told never to prune: they hold the team's data), what the change brings there, and
every run's pods scheduled.

The rows other modules prove on the shared control plane are not repeated here: a new bucket
(test_storage_change), the rollout engine, dataset and tracking-on swap (test_variants), ``rlgen
run new/set/rm`` and nnodes up and down (test_pull_request_loop), the secrets plugin swap to sops
(test_secrets_sops), ``rlgen cluster add`` synced by a second cluster (test_second_cluster).

The repository has a control plane of its own: a namespace change and storage swaps would leave
the shared one unlike what the modules after this one expect."""
from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from ruamel.yaml import YAML
from support.ack import ACK_ALBCONFIG, ACK_INGRESS, albconfig_crd
from support.controlplane import wait_until
from support.flux import REGISTRY, kustomizations, readme_blocks, reconcile
from support.kuberay import ray_pods
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers

pytestmark = pytest.mark.usefixtures("dump_second_on_failure")

PRUNE_DISABLED = ("kustomize.toolkit.fluxcd.io/prune", "disabled")
REGION, ENDPOINT = "cn-beijing", "oss-cn-beijing-internal.aliyuncs.com"
ROLE = "rl-oss-volumes"
MOVED = "rl-moved"
STAGING = "staging-2"


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=reviewer", "-c", "user.email=reviewer@rl-team.cn",
                           *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def matrix(second_control_plane, git_server, sync_repository, tmp_path_factory):
    cp = second_control_plane
    url = git_server.create("team/rl-matrix.git")
    repo = tmp_path_factory.mktemp("matrix") / "rl-matrix"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}", *storage_answers(),
                 "--set", f"rlgen.upstream_mirror={git_server.base}"))
    git(repo, "remote", "add", "origin", url)
    git(repo, "push", "--quiet", "-u", "origin", "HEAD:main")
    sync_repository(cp, repo, url, "clusters/production")
    return {"cp": cp, "repo": repo}


# --- what the cluster holds ---------------------------------------------------------------------

def inventory(cp) -> set[str]:
    """Every object the stages applied, as Flux records it: ``namespace_name_group_Kind``."""
    return {e["id"] for k in kustomizations(cp).values() for e in (k.get("status", {}).get("inventory") or {})
            .get("entries", [])}


def live(cp, entry: str) -> dict | None:
    namespace, name, group, kind = entry.split("_")
    found = cp.kubectl("get", f"{kind}.{group}" if group else kind, name, *(["-n", namespace] if namespace else []),
                       "--ignore-not-found", "-o", "json", check=False).stdout
    return json.loads(found) if found.strip() else None


def kept_on_purpose(obj: dict) -> bool:
    annotations = obj["metadata"].get("annotations") or {}
    return annotations.get(PRUNE_DISABLED[0]) == PRUNE_DISABLED[1]


def namespace(repo) -> str:
    return YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["options"]["rlgen"].get("namespace", "rl-training")


def volumes(cp) -> list[dict]:
    """The PersistentVolumes the stages apply now."""
    return [live(cp, e) for e in sorted(inventory(cp)) if e.endswith("_PersistentVolume")]


def rayjobs(cp, ns: str) -> list[dict]:
    return cp.objects("rayjobs", "-n", ns)


def every_run_scheduled(cp, repo) -> None:
    waited = run_rlgen("status", "--wait", "--timeout", "3m", "--interval", "2", "--kubeconfig", str(cp.kubeconfig),
                       "-o", "json", cwd=repo)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    ns = namespace(repo)
    listed = {r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}
    assert {j["metadata"]["name"] for j in rayjobs(cp, ns)} == listed
    for name in listed:
        pods = wait_until(f"the pods of RayJob {name} scheduled", lambda name=name: (
            ps := ray_pods(cp, ns, name)) and all(p["spec"].get("nodeName") for p in ps) and ps, timeout=120)
        assert any(p["metadata"]["labels"].get("ray.io/node-type") == "worker" for p in pods)


# --- what each change must leave ------------------------------------------------------------------

def region_and_endpoint(cp, repo, _) -> None:
    for pv in volumes(cp):
        attributes = pv["spec"]["csi"]["volumeAttributes"]
        assert ENDPOINT in attributes["url"], attributes
        assert pv["status"]["phase"] == "Bound", pv["metadata"]["name"]


def rrsa_volumes(cp, repo, _) -> None:
    for pv in volumes(cp):
        attributes = pv["spec"]["csi"]["volumeAttributes"]
        # The answers both storage plugins share came along: the bucket and the endpoint.
        assert attributes["bucket"] == storage_answers()[1].split("=")[1] and ENDPOINT in attributes["url"], attributes
        assert attributes.get("authType") == "rrsa" and attributes.get("roleName") == ROLE, attributes
        assert "nodePublishSecretRef" not in pv["spec"]["csi"]
        assert pv["status"]["phase"] == "Bound", pv["metadata"]["name"]


def ak_volumes(cp, repo, _) -> None:
    for pv in volumes(cp):
        csi = pv["spec"]["csi"]
        assert csi["nodePublishSecretRef"]["name"] == "oss-credentials" and ENDPOINT in csi["volumeAttributes"]["url"]
        assert "authType" not in csi["volumeAttributes"], csi
        assert pv["status"]["phase"] == "Bound", pv["metadata"]["name"]


def tracking_on(cp, repo, _) -> None:
    ns = namespace(repo)
    tracking = json.loads(cp.kubectl("get", "configmap", "mlflow-tracking", "-n", ns, "-o", "json").stdout)
    assert tracking["data"]["MLFLOW_TRACKING_URI"] == f"http://mlflow.{ns}.svc:5000"


def tracking_off(cp, repo, removed) -> None:
    assert any(e.endswith("_mlflow-tracking__ConfigMap") for e in removed), removed
    assert "mlflow" not in json.dumps(rayjobs(cp, namespace(repo))).lower()


def verl_moved(cp, repo, removed) -> None:
    assert any(e.endswith("_RayJob") for e in removed), removed
    run = YAML(typ="safe").load((repo / "rlgen.yaml").read_text())["options"]["rlgen"]
    assert run["verl"] == "0.7.1"


def rdma_workers(cp, repo, _) -> None:
    ns = namespace(repo)
    advertising = {n["metadata"]["name"] for n in cp.objects("nodes") if "rdma/hca" in n["status"].get("allocatable", {})}
    for job in rayjobs(cp, ns):
        workers = ray_pods(cp, ns, job["metadata"]["name"], "worker")
        assert workers and all(p["spec"]["nodeName"] in advertising and p["spec"].get("hostNetwork") for p in workers)
        gpu = [c for p in workers for c in p["spec"]["containers"]
               if "nvidia.com/gpu" in c.get("resources", {}).get("limits", {})]
        assert gpu and all("rdma/hca" in c["resources"]["limits"] for c in gpu)


def namespace_moved(cp, repo, removed) -> None:
    assert namespace(repo) == MOVED
    assert not rayjobs(cp, "rl-training")
    assert rayjobs(cp, MOVED)
    assert {e.split("_")[0] for e in inventory(cp) if e.split("_")[0]} >= {MOVED}
    assert "rl-training" not in {e.split("_")[0] for e in inventory(cp)}


def no_staging(cp, repo, _) -> None:
    assert not (repo / "clusters" / STAGING).exists() and not (repo / "overlays" / "staging").exists()
    listed = json.loads(ok(run_rlgen("cluster", "list", "-o", "json", cwd=repo)))
    assert [c["cluster"] for c in listed] == ["production"]


def staging_added(cp, repo, _) -> None:
    assert (repo / "clusters" / STAGING).is_dir() and (repo / "overlays" / "staging").is_dir()


#: What a step's manual part recorded for its check.
KEPT: dict = {}


def sandbox_uids(cp) -> dict[str, str]:
    found = {f"CRD/{c['metadata']['name']}": c["metadata"]["uid"] for c in cp.objects("crds")
             if c["spec"]["group"] == "agents.kruise.io"}
    found["Namespace/sandbox-system"] = live(cp, "_sandbox-system__Namespace")["metadata"]["uid"]
    return found


def ack_addons(cp, repo) -> None:
    """What the README asks of a team moving to the ACK add-ons before the merge syncs: the
    add-ons installed (here, what ACK leaves: the AlbConfig CRD and object, the add-on's Ingress)."""
    KEPT["uids"] = sandbox_uids(cp)
    cp.kubectl("apply", "-f", "-", input=json.dumps(albconfig_crd()))
    cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", "crd", "albconfigs.alibabacloud.com")
    for obj in (ACK_ALBCONFIG, ACK_INGRESS):
        cp.kubectl("create", "-f", "-", input=json.dumps(obj))


def sandbox_swapped(cp, repo, removed) -> None:
    # The open-source operator's stages went; the CRDs and the Namespace it created stayed (the
    # same objects: the add-ons serve the same CRDs), and the SandboxSets with them.
    assert not {"sandbox-operator", "sandbox-manager"} & set(kustomizations(cp))
    assert sandbox_uids(cp) == KEPT["uids"]
    assert cp.objects("sandboxsets.agents.kruise.io", "-A")
    assert live(cp, "sandbox-system_sandbox-admin-api-key__Secret") is not None
    listeners = live(cp, "_alb_alibabacloud.com_AlbConfig")["spec"]["listeners"]
    assert any(listener.get("port") == 443 for listener in listeners), listeners


def create_secrets(cp, repo, named: list[str]) -> None:
    """The README's commands for the Secrets ``named`` (and their namespaces), as a user runs them."""
    blocks = readme_blocks((repo / "README.md").read_text(), "Secrets to create before the first sync")
    wanted = [blocks[0]] + [b for b in blocks[1:] for ref in named
                            if f"secret generic {ref.split('/')[1]} -n {ref.split('/')[0]}" in b]
    assert len(wanted) == len(named) + 1, named
    for block in wanted:
        asked = {var: f"{var.lower()}-e2e" for var in re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", block)}
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True, text=True,
                                env={**os.environ, **asked, **cp.env()})
        # A Secret the cluster kept from before (rlgen names what the repository did not read).
        assert result.returncode == 0 or "already exists" in result.stderr, block + result.stderr


@dataclass(frozen=True)
class Step:
    row: str
    command: tuple[str, ...]
    check: Callable
    #: The Secrets rlgen names as new (``namespace/name``): the README's commands create them
    #: before the merge syncs, as rlgen says to.
    secrets: tuple[str, ...] = ()
    #: What else a user does by hand before the merge syncs, because the README says so.
    manual: Callable | None = field(default=None)


DOMAIN = "sandbox.rl-team.cn"
STEPS = [
    Step("region and endpoint", ("update", "--set", f"ak-storage.region={REGION}",
                                 "--set", f"ak-storage.endpoint={ENDPOINT}"), region_and_endpoint),
    Step("storage ak-storage -> rrsa-storage", ("update", "--plugin", "rrsa-storage",
                                                "--set", f"rrsa-storage.role_name={ROLE}"), rrsa_volumes),
    # rrsa-storage reads no Secret: ak-storage's is new to the repository (the cluster still has it).
    Step("storage rrsa-storage -> ak-storage", ("update", "--plugin", "ak-storage"), ak_volumes,
         secrets=("rl-training/oss-credentials",)),
    Step("tracking on", ("update", "--plugin", "mlflow",
                         "--set", "mlflow.tracking_uri=http://mlflow.rl-training.svc:5000"), tracking_on),
    Step("tracking off", ("update", "--plugin", "no-tracking"), tracking_off),
    Step("verl line 0.9.1 -> 0.7.1", ("update", "--set", "rlgen.verl=0.7.1"), verl_moved),
    Step("network=rdma", ("update", "--set", "rlgen.network=rdma"), rdma_workers),
    Step("sandbox opensource-sandbox -> marketplace-sandbox",
         ("update", "--plugin", "marketplace-sandbox", "--set", f"marketplace-sandbox.domain={DOMAIN}"),
         sandbox_swapped, manual=ack_addons),
    Step("namespace change", ("update", "--set", f"rlgen.namespace={MOVED}"), namespace_moved,
         secrets=(f"{MOVED}/oss-credentials", f"{MOVED}/sandbox-api-key")),
    Step("cluster add", ("cluster", "add", STAGING, "--env", "staging"), staging_added),
    Step("cluster rm", ("cluster", "rm", STAGING), no_staging),
]


@pytest.mark.parametrize("step", STEPS, ids=[s.row for s in STEPS])
def test_change_reaches_the_cluster(matrix, step):
    cp, repo = matrix["cp"], matrix["repo"]
    git(repo, "checkout", "--quiet", "main")
    start = git(repo, "rev-parse", "HEAD").strip()
    before = inventory(cp)
    said = json.loads(ok(run_rlgen(*step.command, "-o", "json", cwd=repo)))
    assert said["secrets"] == list(step.secrets), said["secrets"]
    branch = git(repo, "branch", "--show-current").strip()
    assert branch == said["branch"] != "main", f"{step.row}: rlgen made no branch to review"
    diff = json.loads(ok(run_rlgen("diff", "-o", "json", cwd=repo)))
    assert diff["immutable"] == [], diff["immutable"]
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge {branch}", branch)
    assert git(repo, "rev-parse", "HEAD~1").strip() == start
    if step.secrets:
        create_secrets(cp, repo, said["secrets"])
    if step.manual:
        step.manual(cp, repo)
    git(repo, "push", "--quiet", "origin", "main")
    reconcile(cp)
    removed = before - inventory(cp)
    for entry in sorted(removed):
        wait_until(f"{entry} pruned", lambda entry=entry: (o := live(cp, entry)) is None or kept_on_purpose(o),
                   timeout=120)
        # Only what holds data or sandboxes outlives its removal from the repository: the volumes
        # and claims, and the open-source sandbox's CRDs and Namespace (see sandbox_swapped).
        assert live(cp, entry) is None or entry.endswith((
            "_PersistentVolume", "_PersistentVolumeClaim", "_CustomResourceDefinition", "__Namespace")), entry
    every_run_scheduled(cp, repo)
    step.check(cp, repo, removed)
