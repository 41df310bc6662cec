"""The tracking slot: no tracker by default, MLflow as a plugin whose server address comes from
a ConfigMap and whose credentials come from a Secret the repository never holds."""
from __future__ import annotations

import json
import os

from rlgen.verl.trainer_config import effective_config
from support.repos import REQUIRED, build, error_list, one_error_line, run_rlgen, schema_dir

MLFLOW = ("--plugin", "mlflow", "--set", "mlflow.tracking_uri=http://mlflow.mlops.svc.cluster.local:5000")


def rendered_run(repo):
    objects = build(repo / "overlays/production/runs")
    (job,) = [o for o in objects if o["kind"] == "RayJob"]
    (cm,) = [o for o in objects if o["kind"] == "ConfigMap" and "trainer.yaml" in o.get("data", {})]
    return job, effective_config(cm["data"])


def head_env(job) -> dict:
    container = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e for e in container["env"]}


def test_default_logs_to_the_console_only(generate):
    repo = generate()
    job, cfg = rendered_run(repo)
    assert cfg["trainer"]["logger"] == ["console"]
    assert "trace" not in cfg["actor_rollout_ref"]["rollout"]
    assert not [name for name in head_env(job) if name.startswith("MLFLOW_")]
    assert "tracking `no-tracking`" in (repo / "README.md").read_text()


def test_mlflow_reaches_the_ray_head_from_a_configmap_and_a_secret(generate):
    repo = generate(*MLFLOW)
    job, cfg = rendered_run(repo)
    assert cfg["trainer"]["logger"] == ["console", "mlflow"]
    assert cfg["actor_rollout_ref"]["rollout"]["trace"]["backend"] == "mlflow"
    env = head_env(job)
    assert env["VERL_ROOT"]["value"] == "/home/verl"  # the template's own env is kept
    assert env["MLFLOW_TRACKING_URI"]["valueFrom"]["configMapKeyRef"] == {
        "name": "mlflow-tracking", "key": "MLFLOW_TRACKING_URI"}
    for var, key in (("MLFLOW_TRACKING_USERNAME", "username"), ("MLFLOW_TRACKING_PASSWORD", "password"),
                     ("MLFLOW_TRACKING_TOKEN", "token")):
        assert env[var]["valueFrom"]["secretKeyRef"] == {"name": "mlflow-credentials", "key": key, "optional": True}
    platform = build(repo / "overlays" / "production" / "platform")
    (uri,) = [o for o in platform if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "mlflow-tracking"]
    assert uri["metadata"]["namespace"] == job["metadata"]["namespace"]
    assert uri["data"] == {"MLFLOW_TRACKING_URI": "http://mlflow.mlops.svc.cluster.local:5000"}
    # The credentials are referenced, never written.
    assert not [o for o in platform + build(repo / "overlays/production/runs") if o["kind"] == "Secret"]
    assert "mlflow-credentials" in (repo / "rlgen.yaml").read_text()
    assert "kubectl create secret generic mlflow-credentials" in (repo / "README.md").read_text()
    assert '"mlflow-skinny==' in (repo / "images" / "training" / "Dockerfile").read_text()


def test_mlflow_without_traces(generate):
    _, cfg = rendered_run(generate(*MLFLOW, "--set", "mlflow.trace=false"))
    assert cfg["trainer"]["logger"] == ["console", "mlflow"]
    assert "trace" not in cfg["actor_rollout_ref"]["rollout"]


def test_mlflow_needs_a_server_url(tmp_path):
    _, items = error_list(run_rlgen("new", str(tmp_path / "a"), *REQUIRED, "--plugin", "mlflow", "--no-input"))
    assert [i.split("=")[0] for i in items] == ["--set mlflow.tracking_uri"]
    line = one_error_line(run_rlgen("new", str(tmp_path / "b"), *REQUIRED, "--plugin", "mlflow", "--no-input",
                                    "--set", "mlflow.tracking_uri=sqlite:////tmp/mlruns.db"))
    assert "mlflow.tracking_uri" in line and "inside the pod" in line
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_validate_reports_a_ray_pod_without_the_tracking_uri(generate, tmp_path):
    import shutil

    repo = shutil.copytree(generate(*MLFLOW), tmp_path / "repo", symlinks=True)
    env = {**os.environ, "RLGEN_SCHEMA_DIR": str(schema_dir())}
    assert run_rlgen("validate", str(repo), "--output", "json", env=env).returncode == 0
    kustomization = repo / "components" / "mlflow" / "training" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().split("patches:")[0] + "patches: []\n")
    result = run_rlgen("validate", str(repo), "--output", "json", env=env)
    assert result.returncode == 1
    problems = json.loads(result.stdout)["problems"]
    assert any(p["obj"].startswith("RayJob/") and "no MLFLOW_TRACKING_URI" in p["message"]
               and "head container 'ray-head'" in p["message"] for p in problems), problems
