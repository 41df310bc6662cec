"""Tracking plugin: metrics, parameters and rollout traces to an MLflow tracking server, as
the tutorial does (``trainer.logger=["console","mlflow"]``,
``actor_rollout_ref.rollout.trace.backend=mlflow``).

verl reads the server from ``MLFLOW_TRACKING_URI`` (default ``sqlite:////tmp/mlruns.db``,
inside the pod and lost with it); the mlflow client reads credentials from
``MLFLOW_TRACKING_USERNAME``/``PASSWORD`` (basic auth) or ``MLFLOW_TRACKING_TOKEN`` (bearer).
So the URI lives in a ConfigMap of the platform layer (not secret, shared by every run), the
credentials in a Secret the repository never holds, and a training patch puts both into the
Ray pods' environment."""
from __future__ import annotations


from rlgen.plugin_api import Finding, Layer, Option, Patch, PluginInfo, Resource, SecretRef, hookimpl, uri_error

NAME = "mlflow"
CONFIGMAP = "mlflow-tracking"
SECRET = "mlflow-credentials"
#: Secret key -> the mlflow client's variable; each is optional (a server without auth needs none).
CREDENTIALS = {"username": "MLFLOW_TRACKING_USERNAME", "password": "MLFLOW_TRACKING_PASSWORD",
               "token": "MLFLOW_TRACKING_TOKEN"}
#: verl imports mlflow only when the logger is on; its dependency images do not ship it.
PACKAGE = "mlflow-skinny==3.17.2"


def _uri_error(value: str) -> str | None:
    if problem := uri_error(value):
        # The credentials go to the Secret mlflow-credentials, never into the URL.
        return problem if "://" in value and "credentials" in problem else (
            f"{problem}: the http(s):// URL of the tracking server (a file or sqlite URI stays inside the pod)")
    return None


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="tracking",
        summary="MLflow tracking server: metrics, parameters and rollout traces",
        options=(
            Option("tracking_uri", "URL of the MLflow tracking server", None, required=True, check=_uri_error),
            Option("trace", "Also trace rollouts (actor_rollout_ref.rollout.trace.backend=mlflow)", True, bool),
        ),
    )


@hookimpl
def rlgen_trainer_config(ctx):
    config = {"trainer": {"logger": ["console", "mlflow"]}}
    if ctx.options(NAME)["trace"]:
        config["actor_rollout_ref"] = {"rollout": {"trace": {"backend": "mlflow"}}}
    return config


@hookimpl
def rlgen_training_packages(ctx):
    return [PACKAGE]


@hookimpl
def rlgen_resources(ctx):
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": ctx.spec.namespace},
        "data": {"MLFLOW_TRACKING_URI": ctx.options(NAME)["tracking_uri"]},
    }
    return [Resource(Layer.PLATFORM, "mlflow-tracking.yaml", configmap,
                     "Where every run logs. In the platform layer, not the run's: runs prefix their\n"
                     "objects' names, and the RayJob's reference to this name would not follow.")]


def tracking_env() -> list[dict]:
    uri = {"name": "MLFLOW_TRACKING_URI",
           "valueFrom": {"configMapKeyRef": {"name": CONFIGMAP, "key": "MLFLOW_TRACKING_URI"}}}
    secrets = [{"name": var, "valueFrom": {"secretKeyRef": {"name": SECRET, "key": key, "optional": True}}}
               for key, var in CREDENTIALS.items()]
    return [uri, *secrets]


@hookimpl
def rlgen_patches(ctx):
    groups = ("headGroupSpec", "workerGroupSpecs/0")
    ops = [{"op": "add", "path": f"/spec/rayClusterSpec/{group}/template/spec/containers/0/env/-", "value": env}
           for group in groups for env in tracking_env()]
    return [Patch(Layer.TRAINING, {"group": "ray.io", "kind": "RayJob"}, ops, "rayjob-mlflow-env",
                  "The trainer and its rollout workers read the tracking server and credentials from\n"
                  "the environment, on the head and the GPU workers alike (verl's training loop may run\n"
                  "on either). A JSON patch: a merge patch would replace the CRD's container list.\n"
                  "rlgen validate reports a Ray pod without MLFLOW_TRACKING_URI.")]


@hookimpl
def rlgen_secrets(ctx):
    return [SecretRef(SECRET, ctx.spec.namespace, tuple(CREDENTIALS),
                      "MLflow credentials (each key optional: username and password for basic auth, or a token)",
                      "the RayJob's Ray pods", optional=True)]


@hookimpl
def rlgen_readme(ctx):
    o = ctx.options(NAME)
    traces = " and rollout traces" if o["trace"] else ""
    return [
        "## Experiment tracking: MLflow\n"
        f"Every run logs metrics, its verl parameters{traces} to `{o['tracking_uri']}` (ConfigMap "
        f"`{CONFIGMAP}`), as experiment `{ctx.spec.namespace}-{ctx.spec.dataset}` (`trainer.project_name`) "
        "and a run named after the run folder (`trainer.experiment_name`). Credentials come from Secret "
        f"`{SECRET}`; create only the keys your server needs. verl tries the server three times, then "
        "trains on without tracking and says so only as a warning in the head pod's log: check it after the "
        "first steps."
    ]


def _logs_to_mlflow(cfg: dict) -> bool:
    logger = (cfg.get("trainer") or {}).get("logger") or []
    logger = [logger] if isinstance(logger, str) else logger
    trace = ((cfg.get("actor_rollout_ref") or {}).get("rollout") or {}).get("trace") or {}
    return "mlflow" in logger or trace.get("backend") == "mlflow"


@hookimpl
def rlgen_validate_rules(ctx, objects):
    """Without ``MLFLOW_TRACKING_URI`` on a Ray container verl falls back to
    ``sqlite:////tmp/mlruns.db`` inside the pod, which goes with it: nothing would be kept."""
    found = []
    for item in objects:
        if item.kind != "RayJob" or not item.trainer_config or not _logs_to_mlflow(item.trainer_config):
            continue
        cluster = (item.obj.get("spec") or {}).get("rayClusterSpec") or {}
        groups = [("head", cluster.get("headGroupSpec") or {})]
        groups += [(f"worker group {i}", g) for i, g in enumerate(cluster.get("workerGroupSpecs") or [])]
        for group, spec in groups:
            container = (((spec.get("template") or {}).get("spec") or {}).get("containers") or [{}])[0]
            if not any(e.get("name") == "MLFLOW_TRACKING_URI" for e in container.get("env") or []):
                found.append(Finding(
                    item.source, item.label,
                    f"the trainer logs to mlflow but the {group} container '{container.get('name')}' has no "
                    "MLFLOW_TRACKING_URI: verl would write to sqlite:////tmp/mlruns.db inside the pod",
                    fix=f"restore the {NAME} plugin's patch components/{NAME}/training/rayjob-mlflow-env.yaml"))
    return found
