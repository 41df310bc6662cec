"""The training image both rollout plugins build: verl's dependency image for their engine,
plus the verl checkout of the pinned release (the dependency images ship without verl)."""
from __future__ import annotations

from rlgen.contributions import Problem

#: Official dependency images (Docker Hub verlai/verl) per verl release and engine.
BASE_TAGS = {
    "0.7.0": {"vllm": "vllm012.latest", "sglang": "sgl056.latest"},
    "0.7.1": {"vllm": "vllm017.latest", "sglang": "sgl059.latest"},
}
BASE_REPOSITORY = "verlai/verl"


def check(ctx, plugin: str, engine: str, tensor_parallel: int) -> list[Problem]:
    problems = []
    if ctx.spec.verl_version not in BASE_TAGS:
        known = ", ".join(sorted(BASE_TAGS))
        problems.append(Problem(f"no {engine} training image is known for verl {ctx.spec.verl_version} "
                                f"(known: {known})", (plugin, "rlgen")))
    if ctx.spec.gpus_per_node % tensor_parallel:
        problems.append(Problem(f"tensor parallel size {tensor_parallel} does not divide "
                                f"{ctx.spec.gpus_per_node} GPUs per node", (plugin, "rlgen")))
    return problems


def image_tag(ctx, engine: str) -> str:
    return f"{ctx.spec.verl_version}-{engine}"


def images(ctx, engine: str) -> list[dict]:
    return [{"name": "training", "newName": ctx.spec.training_image, "newTag": image_tag(ctx, engine)}]


def dockerfile(ctx, engine: str, extra_packages: str = "") -> dict[str, str]:
    version = ctx.spec.verl_version
    base = f"{BASE_REPOSITORY}:{BASE_TAGS[version][engine]}"
    text = f"""\
# Training image: verl {version} with {engine}, pushed as {ctx.spec.training_image}:{image_tag(ctx, engine)}.
# verl publishes its dependency images under floating tags only: after the first pull, pin
# the digest here (FROM {base}@sha256:...) so a rebuild cannot change the image silently.
FROM {base}

ARG VERL_VERSION={version}
# The dependency image carries no verl: the job runs this checkout (RayJob working_dir).
RUN git clone --depth 1 --branch v${{VERL_VERSION}} https://github.com/volcengine/verl.git /home/verl \\
 && pip install --no-cache-dir --no-deps -e /home/verl \\
 && pip install --no-cache-dir "fastmcp>=2.3,<3"{extra_packages}

# Train as an unprivileged user; the RayJob sets runAsUser 1000 to match.
RUN useradd --create-home --uid 1000 --user-group ray \\
 && chown -R 1000:1000 /home/verl
USER 1000
WORKDIR /home/verl
"""
    return {"images/training/Dockerfile": text}
