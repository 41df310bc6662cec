"""A cluster in mainland China (``rlgen.region=cn-*``) reaches neither the Hugging Face Hub nor
github.com: its repository takes the model and the dataset from ModelScope and every upstream
repository from the team's mirror, which rlgen asks for; nothing the cluster or an image build
fetches names either host. The workflows under .github/ run on GitHub's own runners, and the
schemas' descriptions are upstream's text that no tool fetches: those two keep their links."""
from __future__ import annotations

import re

import pytest
from support.repos import build, kustomize_roots, one_error_line, required_for, run_rlgen

MIRROR = "https://git.rl-team.cn/mirrors"
#: The team's mirror of Flux's controller images (flux bootstrap --registry).
FLUX_IMAGES = "registry.cn-shanghai.aliyuncs.com/rl-mirrors/fluxcd"
CORE = ("--set", "rlgen.region=cn-shanghai", "--set", f"rlgen.upstream_mirror={MIRROR}")
CHINA = (*CORE, "--set", f"flux.image_registry={FLUX_IMAGES}")
#: A URL of either host, in any scheme git, pip, curl or a Hub client would fetch it by.
BLOCKED = re.compile(r"(?:[a-z+]+://|@)(?:[\w.-]+\.)?(?:github\.com|githubusercontent\.com|huggingface\.co|hf\.co)\b", re.I)


def env_of(objects: list[dict], app: str) -> dict[str, str]:
    job = next(o for o in objects if o["kind"] == "Job" and o["metadata"]["labels"]["app.kubernetes.io/name"] == app)
    return {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_a_mainland_repository_names_no_hugging_face_or_github_url(generate, sync):
    repo = generate("--plugin", sync, *(CHINA if sync == "flux" else CORE))
    files = {p.relative_to(repo).as_posix(): p.read_text(errors="replace") for p in repo.rglob("*")
             if p.is_file() and not {".git", ".github", "schemas", ".rlgen-cache"} & set(p.relative_to(repo).parts)}
    assert not {path: BLOCKED.findall(text) for path, text in files.items() if BLOCKED.search(text)}
    rendered = [o for root in kustomize_roots(repo) for o in build(root)]
    assert rendered and not [o["metadata"]["name"] for o in rendered if BLOCKED.search(str(o))]
    # The upstream roots come from the mirror, at upstream's owner/name.
    assert f"{MIRROR}/openkruise/agents" in str(rendered)
    assert f"git clone --quiet {MIRROR}/openkruise/agents.git" in files["images/sandbox-manager/build.sh"]
    platform = build(repo / "overlays" / "production" / "platform")
    assert env_of(platform, "model-pipeline")["MODEL_SOURCE"] == "modelscope"
    assert env_of(platform, "dataset-pipeline")["DATASET_SOURCE"] == "modelscope:modelscope/gsm8k"
    readme = files["README.md"]
    assert "This cluster is in `cn-shanghai`, in mainland China" in readme
    assert f"- `{MIRROR}/openkruise/agents` at tag `v" in readme
    if sync == "flux":
        # Flux's own images come from the team's mirror: bootstrap installs them from there.
        assert f"--path=clusters/production --registry={FLUX_IMAGES} " in readme


def test_the_mirror_is_asked_for_a_mainland_region_and_not_elsewhere(tmp_path, generate):
    result = run_rlgen("new", str(tmp_path / "r"), *required_for(), "--set", "rlgen.region=cn-beijing", "--no-input")
    # The missing answers as a list: a headline, then one line per answer with its --set.
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    line = next(ln for ln in result.stderr.splitlines() if "rlgen.upstream_mirror" in ln)
    assert "--set rlgen.upstream_mirror=VALUE" in line and "needed when region=cn-beijing" in line
    # Flux's images too: ghcr.io is as far from a mainland cluster as github.com.
    line = next(ln for ln in result.stderr.splitlines() if "flux.image_registry" in ln)
    assert "--set flux.image_registry=VALUE" in line and "needed when rlgen.region=cn-beijing" in line
    assert not (tmp_path / "r").exists()
    # Hong Kong reaches both hosts: nothing changes there.
    platform = build(generate("--set", "rlgen.region=cn-hongkong") / "overlays" / "production" / "platform")
    assert env_of(platform, "model-pipeline")["MODEL_SOURCE"] == "huggingface"
    assert env_of(platform, "dataset-pipeline")["DATASET_SOURCE"] == "openai/gsm8k"


def test_a_dataset_without_a_modelscope_copy_asks_for_one_and_an_answer_wins(tmp_path, generate):
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), *required_for(), *CHINA, "--plugin", "geometry3k",
                                    "--no-input"))
    assert "rlgen.dataset_source" in line and "names no ModelScope copy" in line and "cn-shanghai" in line
    repo = generate(*CHINA, "--plugin", "geometry3k", "--set", "rlgen.dataset_source=modelscope:rl-team/geometry3k",
                    "--set", "rlgen.model_source=huggingface")
    platform = build(repo / "overlays" / "production" / "platform")
    assert env_of(platform, "dataset-pipeline")["DATASET_SOURCE"] == "modelscope:rl-team/geometry3k"
    # The user's own answer stands, in mainland China too (a proxy may reach the Hub).
    assert env_of(platform, "model-pipeline")["MODEL_SOURCE"] == "huggingface"
    line = one_error_line(run_rlgen("new", str(tmp_path / "s"), *required_for(), *CHINA,
                                    "--set", "rlgen.dataset_source=modelscope:geometry3k", "--no-input"))
    assert "rlgen.dataset_source" in line and "modelscope:OWNER/NAME" in line
