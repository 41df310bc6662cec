"""A second Argo CD repository on a control plane of its own: ACK's marketplace sandbox add-ons,
OSS volumes authenticated by RRSA, MLflow tracking and the verl 0.7.1 line, synced by the pinned
Argo CD as its README says, onto a cluster where ACK's add-ons are installed first
(support.ack)."""
from __future__ import annotations

import json
import subprocess

import pytest
from rlgen.e2e.cluster import start_kuberay
from support.ack import DOMAIN, PIPELINE_ROLE, ROLE, install_ack_addons
from support.argocd import applications, install_as_the_readme_says, state, synced_at
from support.flux import NAMESPACE, REGISTRY
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers

pytestmark = pytest.mark.usefixtures("dump_argo_on_failure")

TRACKING = f"http://mlflow.{NAMESPACE}.svc:5000"


@pytest.fixture(scope="module")
def variant(argo_control_plane, git_server, create_readme_secrets, tmp_path_factory):
    cp = argo_control_plane
    start_kuberay(cp)
    install_ack_addons(cp)
    url = git_server.create("team/rl-argo-ack.git")
    repo = tmp_path_factory.mktemp("argo-ack") / "rl-argo-ack"
    ok(run_rlgen("new", str(repo), "--no-input", "--plugin", "argo", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=github", "--set", f"rlgen.install={INSTALL}", "--set", "rlgen.verl=0.7.1",
                 "--plugin", "marketplace-sandbox", "--set", f"marketplace-sandbox.domain={DOMAIN}",
                 "--plugin", "rrsa-storage", *storage_answers("rrsa-storage"),
                 "--set", f"rrsa-storage.role_name={ROLE}", "--set", f"rrsa-storage.pipeline_role_name={PIPELINE_ROLE}",
                 "--plugin", "mlflow", "--set", f"mlflow.tracking_uri={TRACKING}"))
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "remote", "add", "origin", url], check=True)
    subprocess.run([*git, "push", "--quiet", "-u", "origin", "HEAD:main"], check=True, capture_output=True)
    create_readme_secrets(cp, repo)
    install_as_the_readme_says(cp, repo)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    return {"repo": repo, "apps": synced_at(cp, head)}


def test_every_application_of_the_addon_repository_is_synced_and_healthy(argo_control_plane, variant):
    apps = {name: state(app) for name, app in applications(argo_control_plane).items()}
    # ACK's add-ons replace the upstream sandbox sources: one stage for their objects.
    assert apps == {"root": ("Synced", "Healthy"), "infrastructure": ("Synced", "Healthy"),
                    "platform": ("Synced", "Healthy"), "runs": ("Synced", "Progressing")}


def test_the_run_trains_with_verl_0_7_1_tracked_in_mlflow_on_rrsa_volumes(argo_control_plane, variant):
    cp = argo_control_plane
    (job,) = cp.objects("rayjobs", "-n", NAMESPACE)
    images = {c["image"] for c in job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]}
    assert all(i.startswith(f"{REGISTRY}/verl-training:0.7.1-") for i in images), images
    tracking = json.loads(cp.kubectl("get", "configmap", "mlflow-tracking", "-n", NAMESPACE, "-o", "json").stdout)
    assert tracking["data"]["MLFLOW_TRACKING_URI"] == TRACKING
    volumes = cp.objects("persistentvolumes")
    assert volumes and all(v["status"]["phase"] == "Bound" for v in volumes), [v["status"] for v in volumes]
    assert all("rrsa" in json.dumps(v["spec"]["csi"]).lower() for v in volumes)
