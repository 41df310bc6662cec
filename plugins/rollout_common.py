"""What both rollout plugins share: their options and rollout section, and the training image
they build (verl's dependency image for the engine, plus the verl checkout of the pinned
release, since the dependency images ship without verl)."""
from __future__ import annotations

from rlgen.contributions import Option, Problem

#: Official dependency images (Docker Hub verlai/verl) per verl release and engine.
BASE_TAGS = {
    "0.7.0": {"vllm": "vllm012.latest", "sglang": "sgl056.latest"},
    "0.7.1": {"vllm": "vllm017.latest", "sglang": "sgl059.latest"},
}
BASE_REPOSITORY = "verlai/verl"


def rollout_options(memory_help: str) -> tuple[Option, ...]:
    """The options both engines share: how many GPUs a replica spans and its memory share."""
    return (
        Option("tensor_parallel_size", "GPUs per rollout replica (must divide GPUs per node)", 2, int,
               check=lambda v: None if v > 0 else "must be > 0"),
        Option("gpu_memory_utilization", memory_help, 0.5, float,
               check=lambda v: None if 0 < v <= 1 else "must be in (0, 1]"),
    )


def rollout_config(engine: str, options: dict) -> dict:
    """The trainer's rollout section for ``engine`` (verl's key names for both engines)."""
    return {
        "name": engine,
        "tensor_model_parallel_size": options["tensor_parallel_size"],
        "gpu_memory_utilization": options["gpu_memory_utilization"],
    }


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
