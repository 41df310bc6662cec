"""Checks of the operators and add-ons the repository's objects need: their API groups
served, KubeRay's version, the sync engine's controllers, the OSS CSI driver, the RRSA webhook."""
from __future__ import annotations

import re

from rlgen.doctor import dashboard_access
from rlgen.repo.sync_engines import Engine
from rlgen.kube.needs import RRSA_LABEL, Needs, installed_by_repository
from rlgen.kube.report import OK, PROBLEM, Row

#: KubeRay first shipped SidecarMode in v1.5.0 (rayjob_types.go, PR #3971).
SIDECAR_SINCE = (1, 5, 0)
#: spec.submitterConfig (the submitter Job's backoffLimit) is in rayjob_types.go from v1.2.0 on;
#: an older CRD drops it and the submitter gives up after KubeRay's default retries. So is the
#: RayJob's own spec.backoffLimit (v1.2.1 lines 64 and 76, neither in v1.1.1): an older CRD drops it
#: and a run is never retried.
SUBMITTER_CONFIG_SINCE = (1, 2, 0)
#: What to install when a group is not served.
INSTALL = {
    "ray.io": "install KubeRay >= v1.5.0 (Helm chart kuberay-operator, or the ACK KubeRay add-on)",
    "agents.kruise.io": "install the ack-agent-sandbox-controller add-on (or OpenKruise agents)",
    "kustomize.toolkit.fluxcd.io": "install Flux: flux bootstrap (see the README's Sync section)",
    "source.toolkit.fluxcd.io": "install Flux: flux bootstrap (see the README's Sync section)",
    "argoproj.io": "install Argo CD (see the README's Sync section)",
    "alibabacloud.com": "install the ALB Ingress controller add-on",
    "kueue.x-k8s.io": "install Kueue (v0.17 or later) with the ray.io/rayjob integration",
}


def served_kinds(cluster, needs: Needs) -> list[Row]:
    """One row per custom API group/version the repository renders."""
    discovery = cluster.call("ApisApi.get_api_versions") or {}
    served = {v["groupVersion"] for g in discovery.get("groups", []) for v in g.get("versions", [])}
    rows = []
    for gv in sorted(gv for gv in needs.kinds if "." in gv.split("/")[0] and not _built_in(gv)):
        group, _, version = gv.partition("/")
        kinds = sorted(needs.kinds[gv])
        check = f"API {gv}"
        if gv in served:
            listed = cluster.call("CustomObjectsApi.get_api_resources", group, version) or {}
            missing = [k for k in kinds if k not in {r.get("kind") for r in listed.get("resources", [])}]
            rows.append(Row(check, PROBLEM, f"not served: {', '.join(missing)}", INSTALL.get(group, ""))
                        if missing else Row(check, OK, f"served: {', '.join(kinds)}"))
        elif source := installed_by_repository(group, needs):
            rows.append(Row(check, OK, f"not installed yet: the first sync installs {', '.join(kinds)} from {source}"))
        else:
            rows.append(Row(check, PROBLEM, f"not served ({', '.join(kinds)})",
                            INSTALL.get(group, f"install the operator that serves {group}")))
    return rows


def _built_in(gv: str) -> bool:
    return gv.split("/")[0].endswith(".k8s.io")


def kuberay(cluster, needs: Needs) -> list[Row]:
    if not needs.rayjobs:
        return []
    deployments = cluster.items("AppsV1Api.list_deployment_for_all_namespaces")
    operator = next((d for d in deployments if _is_kuberay(d)), None)
    # The newest KubeRay feature a RayJob of the repository uses.
    features = [(since, name) for since, name, used in (
        (SIDECAR_SINCE, "SidecarMode", any(r.submission_mode == "SidecarMode" for r in needs.rayjobs)),
        (SUBMITTER_CONFIG_SINCE, "submitterConfig", any(r.submitter_config for r in needs.rayjobs))) if used]
    since, feature = max(features, default=(SIDECAR_SINCE, ""))
    need = "v%d.%d.%d" % since
    if operator is None:
        return [Row("KubeRay operator", PROBLEM, "no kuberay-operator Deployment in any namespace", INSTALL["ray.io"])]
    meta = operator["metadata"]
    image = _container(operator)["image"]
    where = f"{meta['namespace']}/{meta['name']} ({image})"
    version = _version(image)
    rows = []
    if not (operator.get("status") or {}).get("availableReplicas"):
        rows.append(Row("KubeRay operator", PROBLEM, f"{where}: no available replica",
                        f"kubectl -n {meta['namespace']} describe deployment {meta['name']}"))
    elif version is None:
        rows.append(Row("KubeRay operator", PROBLEM, f"{where}: the image tag names no version",
                        f"pin the operator image to a release >= {need}"))
    elif feature and version < since:
        effect = ("every RayJob would end ValidationFailed" if feature == "SidecarMode" else
                  "its CRD drops the field and a dropped log stream fails a running job")
        rows.append(Row("KubeRay operator", PROBLEM,
                        f"{where}: v{'.'.join(map(str, version))} predates {feature} ({need}); {effect}",
                        f"upgrade KubeRay to {need} or later"))
    else:
        rows.append(Row("KubeRay operator", OK, f"{where}" + (f" supports {feature}" if feature else "")))
    rows += dashboard_access.check(needs.network_policies, {r.namespace for r in needs.rayjobs}, operator,
                                   needs.plugins.get("sandbox", ""))
    if any(r.gang or r.scheduler or r.batch_scheduler for r in needs.rayjobs):
        rows.append(_batch_scheduler(operator, next((r.batch_scheduler for r in needs.rayjobs if r.batch_scheduler), "")))
    return rows


def _batch_scheduler(operator: dict, wanted: str) -> Row:
    """KubeRay gangs a RayJob's pods only when started with --batch-scheduler (ray-operator main.go);
    a RayJob labelled for Volcano needs --batch-scheduler=volcano."""
    args = _container(operator).get("args") or []
    given = next((a.split("=", 1)[1] for a in args if a.startswith("--batch-scheduler=")), None)
    if given is None and "--batch-scheduler" in args[:-1]:
        given = args[args.index("--batch-scheduler") + 1]
    if given is None and "--enable-batch-scheduler" in args:
        given = "volcano"  # the deprecated flag turns on Volcano
    flag = f"--batch-scheduler={wanted or 'volcano'}"
    if given and (not wanted or given == wanted):
        return Row("gang scheduling", OK, f"KubeRay runs with --batch-scheduler={given}")
    what = f"runs with --batch-scheduler={given}" if given else "runs without --batch-scheduler"
    return Row("gang scheduling", PROBLEM, f"a RayJob asks for gang scheduling{' by ' + wanted if wanted else ''}; "
               f"KubeRay {what}", f"start the KubeRay operator with {flag} (Helm value batchScheduler.name)")


def _is_kuberay(deployment: dict) -> bool:
    if deployment["metadata"]["name"] == "kuberay-operator":
        return True
    image = _container(deployment).get("image", "")
    return "kuberay" in image and "operator" in image


def _container(deployment: dict) -> dict:
    containers = ((deployment.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or [{}]
    return containers[0]


def _version(image: str) -> tuple[int, int, int] | None:
    tag = image.rpartition(":")[2] if ":" in image.rpartition("/")[2] else ""
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", tag)
    return tuple(int(x) for x in m.groups()) if m else None


def controllers(cluster, engine: Engine) -> list[Row]:
    rows = []
    for kind, name in engine.controllers:
        method = "read_namespaced_deployment" if kind == "Deployment" else "read_namespaced_stateful_set"
        found = cluster.call(f"AppsV1Api.{method}", name, engine.namespace)
        check = f"{engine.name} {name}"
        if found is None:
            rows.append(Row(check, PROBLEM, f"no {kind} {engine.namespace}/{name}", INSTALL_ENGINE[engine.name]))
        elif not ((found.get("status") or {}).get("availableReplicas") or (found.get("status") or {}).get("readyReplicas")):
            rows.append(Row(check, PROBLEM, f"{kind} {engine.namespace}/{name} has no ready replica",
                            f"kubectl -n {engine.namespace} describe {kind.lower()} {name}"))
        else:
            rows.append(Row(check, OK, f"{kind} {engine.namespace}/{name} ready"))
    return rows


INSTALL_ENGINE = {"Flux": INSTALL["kustomize.toolkit.fluxcd.io"], "Argo CD": INSTALL["argoproj.io"]}


def csi_drivers(cluster, needs: Needs) -> list[Row]:
    rows = []
    for driver in sorted(needs.csi_drivers):
        found = cluster.call("StorageV1Api.read_csi_driver", driver)
        rows.append(Row(f"CSI driver {driver}", OK, "registered") if found else
                    Row(f"CSI driver {driver}", PROBLEM, "not registered: PersistentVolumes using it never mount",
                        "install the csi-plugin and csi-provisioner add-ons"))
    return rows


def rrsa_webhook(cluster, needs: Needs) -> list[Row]:
    if not needs.rrsa:
        return []
    configs = cluster.items("AdmissionregistrationV1Api.list_mutating_webhook_configuration")
    found = [c["metadata"]["name"] for c in configs if _selects_rrsa(c)]
    if found:
        return [Row("RRSA webhook", OK, f"MutatingWebhookConfiguration {found[0]}")]
    return [Row("RRSA webhook", PROBLEM, "no pod identity webhook: pods get no RRSA credentials",
                "install the ack-pod-identity-webhook add-on")]


def _selects_rrsa(config: dict) -> bool:
    if "pod-identity" in config["metadata"]["name"]:
        return True
    return RRSA_LABEL in str([w.get("namespaceSelector") for w in config.get("webhooks") or []])
