"""Recorded cluster objects, shaped as their controllers write them, for the fake API server.

RayJob status: ray-project/kuberay v1.7.0 ``ray-operator/apis/ray/v1/rayjob_types.go``
(RayJobStatus) and ``rayjob_controller.go`` (dashboardURL = FetchHeadServiceURL). Flux:
kustomize-controller v1.9.4 (``Ready`` condition, reason ``ReconciliationSucceeded``, message
``Applied revision: <branch>@sha1:<sha>``). Argo CD v3.6.1 ``pkg/apis/application/v1alpha1``
(``status.sync.status``, ``status.health.status``, ``status.operationState.phase``).
"""
from __future__ import annotations

import base64

from support.fake_apiserver import crd

NOW = "2026-11-30T09:00:00Z"
#: A node of an ACK Lingjun node pool, as ACK labels and taints it (rlgen.pool).
GPU_TAINT = {"key": "node-role.alibabacloud.com/lingjun", "effect": "NoSchedule"}
GPU_LABELS = {"alibabacloud.com/lingjun-worker": "true"}


def meta(name: str, namespace: str | None = None, **extra) -> dict:
    m = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "creationTimestamp": NOW, **extra}
    if namespace:
        m["namespace"] = namespace
    return m


def deployment(name: str, namespace: str, image: str, ready: int = 1, args=()) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name, namespace),
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": name, "image": image, "args": list(args)}]}}},
            "status": {"replicas": 1, "readyReplicas": ready, "availableReplicas": ready}}


def kuberay(tag: str = "v1.7.0") -> list[dict]:
    return [crd("rayjobs.ray.io"), crd("rayclusters.ray.io"),
            deployment("kuberay-operator", "kuberay-system", f"quay.io/kuberay/operator:{tag}")]


def gpu_node(name: str, gpus: int = 8, taint: dict | None = GPU_TAINT) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": meta(name, labels={"kubernetes.io/hostname": name, **GPU_LABELS}),
            "spec": {"taints": [taint]} if taint else {},
            "status": {"allocatable": {"cpu": "180", "memory": "1800Gi", "nvidia.com/gpu": str(gpus), "pods": "110"},
                       "capacity": {"nvidia.com/gpu": str(gpus)}}}


def secret(name: str, namespace: str, keys: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta(name, namespace), "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in keys.items()}}


def flux_stage(name: str, revision: str, ready: str = "True", reason: str = "ReconciliationSucceeded",
               message: str | None = None, path: str = "./runs") -> dict:
    applied = f"main@sha1:{revision}"
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": meta(name, "flux-system", generation=1),
            "spec": {"interval": "10m", "path": path, "prune": True,
                     "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
            "status": {"observedGeneration": 1, "lastAppliedRevision": applied, "lastAttemptedRevision": applied,
                       "conditions": [{"type": "Ready", "status": ready, "reason": reason,
                                       "message": message or f"Applied revision: {applied}",
                                       "lastTransitionTime": NOW, "observedGeneration": 1}]}}


def argo_app(name: str, revision: str, sync: str = "Synced", health: str = "Healthy", phase: str = "Succeeded",
             message: str = "successfully synced (all tasks run)", path: str = "runs") -> dict:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta(name, "argocd"),
            "spec": {"project": "rlgen", "source": {"repoURL": "https://example.com/rl.git", "targetRevision": "main",
                                                     "path": path},
                     "destination": {"server": "https://kubernetes.default.svc", "namespace": "rl-training"}},
            "status": {"sync": {"status": sync, "revision": revision}, "health": {"status": health},
                       "operationState": {"phase": phase, "message": message, "startedAt": NOW,
                                          "finishedAt": NOW}}}


def flux() -> list[dict]:
    return [crd("kustomizations.kustomize.toolkit.fluxcd.io"), crd("gitrepositories.source.toolkit.fluxcd.io"),
            crd("receivers.notification.toolkit.fluxcd.io"),
            deployment("source-controller", "flux-system", "ghcr.io/fluxcd/source-controller:v1.9.1"),
            deployment("kustomize-controller", "flux-system", "ghcr.io/fluxcd/kustomize-controller:v1.9.4"),
            deployment("notification-controller", "flux-system", "ghcr.io/fluxcd/notification-controller:v1.9.2"),
            # The push webhook's token, which the README has the user create.
            secret("git-webhook-token", "flux-system", {"token": "recorded-webhook-token"})]


def argo() -> list[dict]:
    return [crd("applications.argoproj.io"), crd("appprojects.argoproj.io"),
            deployment("argocd-repo-server", "argocd", "quay.io/argoproj/argocd:v3.6.1"),
            secret("git-webhook-token", "argocd", {"token": "recorded-webhook-token"}),
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("argocd-application-controller", "argocd"),
             "spec": {"replicas": 1}, "status": {"replicas": 1, "readyReplicas": 1}}]


def rayjob(name: str, namespace: str, deployment_status: str, job_status: str = "", start: str = NOW,
           end: str | None = None, reason: str = "", message: str = "") -> dict:
    """A RayJob as KubeRay v1.7.0 leaves it: status fields of RayJobStatus."""
    cluster = f"{name}-x7k2p"
    status = {"jobDeploymentStatus": deployment_status, "jobStatus": job_status, "rayClusterName": cluster,
              "startTime": start, "observedGeneration": 1, "jobId": f"{name}-abcde",
              "rayClusterStatus": {"state": "ready" if deployment_status != "Initializing" else ""}}
    if deployment_status not in ("Initializing", ""):
        status["dashboardURL"] = f"{cluster}-head-svc.{namespace}.svc.cluster.local:8265"
    if end:
        status["endTime"] = end
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta(name, namespace, generation=1),
            "spec": {"submissionMode": "SidecarMode"}, "status": status}


def pending_head(rayjob_name: str, namespace: str) -> list[dict]:
    """The head Pod of a RayJob the scheduler cannot place, and its FailedScheduling event."""
    pod = f"{rayjob_name}-x7k2p-head-4xz9q"
    labels = {"ray.io/originated-from-cr-name": rayjob_name, "ray.io/originated-from-crd": "RayJob",
              "ray.io/node-type": "head", "ray.io/cluster": f"{rayjob_name}-x7k2p"}
    message = ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint "
               "{node-role.kubernetes.io/control-plane: }. preemption: 0/3 nodes are available: "
               "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.")
    return [
        {"apiVersion": "v1", "kind": "Pod", "metadata": meta(pod, namespace, labels=labels),
         "spec": {"containers": [{"name": "ray-head"}]},
         "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                         "reason": "Unschedulable", "message": message}]}},
        {"apiVersion": "v1", "kind": "Event", "metadata": meta(f"{pod}.1", namespace), "reason": "FailedScheduling",
         "type": "Warning", "message": message, "count": 3, "lastTimestamp": NOW,
         "involvedObject": {"kind": "Pod", "name": pod, "namespace": namespace, "apiVersion": "v1"},
         "source": {"component": "default-scheduler"}},
    ]


def healthy(repo_needs: dict) -> list[dict]:
    """A cluster that accepts the default repository (Flux, ak-storage, opensource sandbox)."""
    ns = repo_needs["namespace"]
    return [
        *kuberay(), *flux(),
        gpu_node("gpu-1"), gpu_node("gpu-2"),
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": meta("ossplugin.csi.alibabacloud.com"),
         "spec": {"attachRequired": False, "podInfoOnMount": True}},
        secret("oss-credentials", ns, {"akId": "recorded-id", "akSecret": "recorded-secret-value"}),
        # The sandbox API keys: the trainer's copy and the manager's admin key.
        secret("sandbox-api-key", ns, {"apiKey": "recorded-api-key"}),
        secret("sandbox-admin-api-key", "sandbox-system", {"adminApiKey": "recorded-admin-key"}),
    ]
