"""The control plane the end-to-end tests share: one per session, with the operators a cluster
running rlgen's repositories has (KubeRay, Flux's source-, kustomize- and notification-controller),
nodes shaped like an ACK Lingjun GPU pool and CPU nodes, and a Git server holding every repository the
generated repository points at. A module whose repository cannot share that API server (another
cluster, another variant with the same object names) gets a second control plane of its own."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from rlgen.e2e.cluster import start_flux, start_kuberay
from support.argocd import describe as argo_describe
from support.controlplane import ControlPlane, wait_until
from support.flux import REGISTRY, SYNC_TIMEOUT, bootstrap, kustomizations, readme_blocks, ready
from support.git_server import GitServer
from support.kueue import start_kueue
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers
from support.toolchain import PROJECT

GPU_NODES = 4
CPU_NODES = 2


@contextmanager
def running_cluster(workdir: Path, requeue_dependency: str | None = "5s", engine: str = "flux",
                    kuberay: bool = True) -> Iterator[ControlPlane]:
    """A control plane with what every cluster here has: GPU and CPU nodes, KubeRay, the sync
    engine's controllers and ACK's OSS CSI driver. Stopped on leaving, whatever happened. Argo CD
    starts when the README's install command runs (support.argocd); ``kuberay=False`` leaves
    KubeRay to the test, as on a cluster whose add-on arrives after the first sync."""
    cp = ControlPlane(workdir)
    try:
        cp.start()
        for i in range(GPU_NODES):
            cp.add_lingjun_node(f"lingjun-gpu-{i}")
        for i in range(CPU_NODES):
            cp.add_node(f"cpu-{i}", cpu="32", memory="128Gi")
        if kuberay:
            start_kuberay(cp)
        if engine == "flux":
            # Without Deployments: `flux bootstrap` applies Flux's own (sync_as_the_readme_says).
            start_flux(cp, requeue_dependency, deployments=False)
        # ACK's csi-plugin add-on registers the OSS driver the repository's volumes name.
        cp.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": "ossplugin.csi.alibabacloud.com"},
            "spec": {"attachRequired": False, "podInfoOnMount": True}}))
        if kuberay or engine == "flux":
            # An installed operator is an available Deployment; doctor reads it so.
            cp.kubectl("wait", "--for=condition=Available", "deployment", "--all", "-A", "--timeout=180s")
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("controlplane")) as cp:
        yield cp


def openkruise_agents(tree: Path) -> Path:
    """openkruise/agents at v0.3.0 as far as the project vendors it: ``config/sandbox-manager``
    unchanged and the four CRDs of ``config/crd/bases``. Upstream's controller manifests are not
    vendored (the module proxy does not serve that release), so ``config/default`` here holds what
    the stages after it rely on: the CRDs and the ``sandbox-system`` Namespace it creates. As in
    upstream's kubebuilder layout, the CRDs are a kustomization of their own (``config/crd``) that
    ``config/default`` names: kustomize refuses a file outside the folder it builds, as Argo CD's
    repo-server runs it (Flux's kustomize-controller lifts that restriction)."""
    shutil.copytree(PROJECT / "upstream" / "openkruise-agents-v0.3.0", tree)
    bases = tree / "config" / "crd" / "bases"
    bases.mkdir(parents=True)
    for crd in sorted((PROJECT / "upstream" / "crds").glob("agents.kruise.io_*.yaml")):
        shutil.copy(crd, bases / crd.name)
    def kustomization(folder: Path, resources: list[str]) -> None:
        (folder / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
            + "".join(f"  - {r}\n" for r in resources))

    kustomization(bases.parent, [f"bases/{p.name}" for p in sorted(bases.iterdir())])
    default = tree / "config" / "default"
    default.mkdir()
    (default / "namespace.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: sandbox-system\n")
    kustomization(default, ["namespace.yaml", "../crd"])
    return tree


@pytest.fixture(scope="session")
def git_server(tmp_path_factory):
    """Every upstream repository a generated repository references, at its pinned tag."""
    with GitServer(tmp_path_factory.mktemp("git")) as server:
        server.publish("openkruise/agents", openkruise_agents(tmp_path_factory.mktemp("agents") / "agents"),
                       tag="v0.3.0")
        yield server


#: What a user exports before running the README's Secret commands.
SECRET_VALUES = {"SANDBOX_ADMIN_API_KEY": "admin-key-e2e", "SANDBOX_API_KEY": "api-key-e2e",
                 "OSS_CREDENTIALS_AKID": "ak-id-e2e", "OSS_CREDENTIALS_AKSECRET": "ak-secret-e2e", "HF_TOKEN": ""}


def create_secrets_as_the_readme_says(cp: ControlPlane, repo: Path) -> None:
    """The README's commands that create the Secrets a first sync needs, with a value each."""
    for block in readme_blocks((repo / "README.md").read_text(), "Secrets to create before the first sync"):
        # A plugin an earlier module selected (mlflow, say) adds Secrets of its own: a value each.
        asked = {var: f"{var.lower()}-e2e" for var in re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", block)}
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True, text=True,
                                env={**os.environ, **asked, **SECRET_VALUES, **cp.env()})
        assert result.returncode == 0, f"the README's command fails on a new cluster:\n{block}{result.stderr}"


def sync_as_the_readme_says(cp: ControlPlane, repo: Path, url: str, path: str) -> dict[str, dict]:
    """The README's Secret commands run on the cluster, Flux bootstrapped at ``path`` of the
    pushed repository by the README's command (the clone ``repo`` pulls what it commits), and
    every Kustomization Ready: their objects, by name."""
    create_secrets_as_the_readme_says(cp, repo)
    bootstrap(cp, repo, url, "main", path)
    return wait_until(
        "every Flux Kustomization Ready",
        lambda: (ks := kustomizations(cp)) and len(ks) > 1 and all(
            (r := ready(k)) and r["status"] == "True" for k in ks.values()) and ks,
        timeout=SYNC_TIMEOUT, interval=2,
        on_timeout=lambda: "\n".join(f"{n}: {ready(k)}" for n, k in kustomizations(cp).items()) + cp.logs(20))


@pytest.fixture(scope="session")
def synced(control_plane, git_server, tmp_path_factory):
    """The default repository, generated with the answers a user gives, pushed and synced."""
    cp = control_plane
    url = git_server.create("team/rl-repo.git")
    repo = tmp_path_factory.mktemp("e2e") / "rl-repo"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}", *storage_answers(),
                 "--set", f"rlgen.upstream_mirror={git_server.base}"))
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "remote", "add", "origin", url], check=True)
    subprocess.run([*git, "push", "--quiet", "-u", "origin", "HEAD:main"], check=True, capture_output=True)

    names = sync_as_the_readme_says(cp, repo, url, "clusters/production")
    return {"repo": repo, "url": url, "kustomizations": names}


@pytest.fixture(scope="module")
def second_control_plane(tmp_path_factory):
    """A cluster of its own for a module whose repository cannot share the first one's API server
    (same Flux Kustomization names, namespaces and cluster-scoped volumes). Stopped when the
    module ends."""
    with running_cluster(tmp_path_factory.mktemp("second-controlplane")) as cp:
        yield cp


@pytest.fixture(scope="module")
def kueue_control_plane(tmp_path_factory):
    """A cluster of its own with Kueue beside KubeRay, for a module whose scenarios count the
    whole GPU pool: no other repository's runs hold a node of it. Stopped when the module ends."""
    with running_cluster(tmp_path_factory.mktemp("kueue-controlplane")) as cp:
        start_kueue(cp)
        yield cp


@pytest.fixture(scope="module")
def argo_control_plane(tmp_path_factory):
    """A cluster of its own for an Argo CD repository (support.argocd: Argo CD starts when the
    README's install command runs), KubeRay left to the module. Stopped when the module ends."""
    with running_cluster(tmp_path_factory.mktemp("argo-controlplane"), engine="argo", kuberay=False) as cp:
        yield cp


@pytest.fixture(scope="session")
def sync_repository():
    return sync_as_the_readme_says


@pytest.fixture(scope="session")
def create_readme_secrets():
    return create_secrets_as_the_readme_says


def dump(cp: ControlPlane) -> str:
    return cp.logs(40) + "\n" + cp.kubectl(
        "get", "kustomizations,gitrepositories,rayjobs,rayclusters,pods,jobs,pvc", "-A", "-o", "wide",
        check=False).stdout


def _dump_if_failed(cp: ControlPlane, request) -> None:
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(dump(cp))


@pytest.fixture
def dump_on_failure(control_plane, request):
    """Print the control plane's logs and objects when a test fails: the first thing to read."""
    yield
    _dump_if_failed(control_plane, request)


@pytest.fixture
def dump_second_on_failure(second_control_plane, request):
    yield
    _dump_if_failed(second_control_plane, request)


@pytest.fixture
def dump_kueue_on_failure(kueue_control_plane, request):
    yield
    _dump_if_failed(kueue_control_plane, request)


@pytest.fixture
def dump_argo_on_failure(argo_control_plane, request):
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        cp = argo_control_plane
        print(cp.logs(40) + "\n" + argo_describe(cp) + "\n" + cp.kubectl(
            "get", "applications,rayjobs,rayclusters,pods,jobs,pvc", "-A", "-o", "wide", check=False).stdout)


#: The order the modules share the one control plane in: each starts from the cluster the one
#: before left (healthy: a test that breaks something restores it). Modules not listed run after
#: these, by name; the one that swaps the secrets plugin into the synced repository runs last.
ORDER = ["test_default_repository", "test_cluster_commands", "test_cluster_breaks", "test_storage_change",
         "test_layout_update",
         "test_pull_request_loop",
         "test_variants", "test_ack_addons", "test_change_matrix", "test_second_cluster",
         "test_immutable_fields_on_apiserver", "test_secrets_external", "test_e2e_command"]
LAST = ["test_secrets_sops"]


def _rank(module: str) -> tuple[int, int, str]:
    if module in ORDER:
        return (0, ORDER.index(module), "")
    if module in LAST:
        return (2, LAST.index(module), "")
    return (1, 0, module)


def pytest_collection_modifyitems(items):
    # One control plane per session: every end-to-end test runs in the same xdist worker.
    here = Path(__file__).parent
    ours = [i for i in items if here in Path(i.fspath).parents]
    for item in ours:
        item.add_marker(pytest.mark.xdist_group("controlplane"))
    # Stable: the tests of one module keep their order in the file.
    ranked = iter(sorted(ours, key=lambda i: _rank(Path(i.fspath).stem)))
    items[:] = [next(ranked) if here in Path(i.fspath).parents else i for i in items]


@pytest.fixture(scope="session")
def reader_kubeconfig(control_plane, synced, tmp_path_factory) -> Path:
    """A kubeconfig of an identity bound to nothing but the repository's rbac/rlgen-reader.yaml,
    as its comment tells an admin to bind it: doctor and status run with what a user gets."""
    cp = control_plane
    cp.kubectl("apply", "-f", str(synced["repo"] / "rbac" / "rlgen-reader.yaml"))
    cp.kubectl("create", "serviceaccount", "rlgen-reader", "-n", "default")
    cp.kubectl("create", "clusterrolebinding", "rlgen-reader", "--clusterrole=rlgen-reader",
               "--serviceaccount=default:rlgen-reader")
    token = cp.kubectl("create", "token", "rlgen-reader", "-n", "default", "--duration=4h").stdout.strip()
    config = json.loads(cp.kubeconfig.read_text())
    config["users"] = [{"name": "rlgen-admin", "user": {"token": token}}]
    path = tmp_path_factory.mktemp("reader") / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
