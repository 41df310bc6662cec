"""The model Job stages the model the way the dataset Job stages the data: rendered with the
real kustomize, it writes to the bucket folder the trainer loads, with the same hardening and
bucket settings as the dataset Job, and a name that changes only when its inputs do."""
from __future__ import annotations

from support.repos import REGISTRY, build
from rlgen.tools.yamlio import load

RRSA = ("--plugin", "rrsa-storage", "--set", "rrsa-storage.role_name=rl-oss-reader")


def jobs(repo) -> dict[str, dict]:
    objects = build(repo / "overlays" / "production" / "platform")
    return {o["metadata"]["labels"]["app.kubernetes.io/name"]: o for o in objects if o["kind"] == "Job"} | {
        "_pv": next(o for o in objects
                    if o["kind"] == "PersistentVolume" and o["metadata"]["name"].startswith("rl-models-"))}


def env(job) -> dict:
    return {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_writes_where_the_trainer_loads_the_model(generate):
    repo = generate()
    found = jobs(repo)
    job, pv = found["model-pipeline"], found["_pv"]
    e = env(job)
    assert e["MODEL"]["value"] == "Qwen/Qwen2.5-3B-Instruct" and e["MODEL_SOURCE"]["value"] == "huggingface"
    # The bucket folder the Job fills is the one the models volume mounts where the trainer loads from.
    model_path = load((repo / "base" / "training" / "trainer.yaml").read_text())["actor_rollout_ref"]["model"]["path"]
    attrs = pv["spec"]["csi"]["volumeAttributes"]
    assert e["OSS_BUCKET"]["value"] == attrs["bucket"]
    assert "/" + e["OSS_PREFIX"]["value"] == attrs["path"] + "/" + model_path.removeprefix("/var/models/") + "/"
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert 'rlgen data model --source "$MODEL_SOURCE" --model "$MODEL"' in script
    assert 'rlgen data upload /scratch/model "oss://$OSS_BUCKET/$OSS_PREFIX"' in script
    readme = (repo / "README.md").read_text()
    assert "Upload the model" not in readme
    assert "The model Job downloads `Qwen/Qwen2.5-3B-Instruct` from huggingface" in readme


def test_same_hardening_and_credentials_as_the_dataset_job(generate):
    for args in ((), RRSA):
        found = jobs(generate(*args))
        model, dataset = found["model-pipeline"], found["dataset-pipeline"]
        m, d = model["spec"]["template"]["spec"], dataset["spec"]["template"]["spec"]
        assert m["securityContext"] == d["securityContext"] and m["securityContext"]["runAsNonRoot"] is True
        assert m["serviceAccountName"] == d["serviceAccountName"]
        mc, dc = m["containers"][0], d["containers"][0]
        assert mc["securityContext"] == dc["securityContext"] == {"allowPrivilegeEscalation": False,
                                                                   "capabilities": {"drop": ["ALL"]}}
        assert mc["image"] == dc["image"]
        # The storage plugin's bucket settings (and AccessKey, when it uses one) reach both Jobs.
        shared = {k: v for k, v in env(dataset).items() if k.startswith(("OSS_", "ALIBABA_")) and k != "OSS_PREFIX"}
        assert shared and all(env(model)[k] == v for k, v in shared.items())


def test_name_is_content_addressed(generate):
    name = lambda *args: jobs(generate(*args))["model-pipeline"]["metadata"]["name"]
    default = name()
    assert default.startswith("model-pipeline-") and len(default) <= 63
    assert name() == default
    assert name("--set", f"rlgen.data_image={REGISTRY}/rlgen-data:0.1.1") != default
    modelscope = name("--set", "rlgen.model_source=modelscope")
    assert modelscope != default
    assert name("--set", "rlgen.model_revision=v1.0") not in (default, modelscope)


def test_modelscope_source(generate):
    repo = generate("--set", "rlgen.model_source=modelscope", "--set", "rlgen.model_revision=master")
    e = env(jobs(repo)["model-pipeline"])
    assert e["MODEL_SOURCE"]["value"] == "modelscope" and e["MODEL_REVISION"]["value"] == "master"
    assert "--source modelscope --model Qwen/Qwen2.5-3B-Instruct --revision master" in (repo / "README.md").read_text()


def test_data_image_pins_the_hub_clients_the_tests_run_with(generate):
    from importlib.metadata import version

    dockerfile = (generate() / "images" / "data" / "Dockerfile").read_text()
    for dist in ("huggingface_hub", "modelscope", "datasets", "alibabacloud-oss-v2"):
        assert f'"{dist}=={version(dist)}"' in dockerfile, dist
