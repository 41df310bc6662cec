"""``images/training/Dockerfile`` and the image the RayJob runs.

The rollout plugin names verl's dependency image for its engine; the generator adds the pinned
release's wheel from PyPI (the dependency images ship without verl) and what that release
requires beyond the image, rlgen's own verl tools (``rlgen_verl_tools``, the same files for
every release) and the packages the other plugins need, runs it as an unprivileged user, and
imports what the trainer runs, so a broken image fails its build rather than the job.
"""
from __future__ import annotations

from importlib.resources import files

from rlgen.contributions import TrainingImage
from rlgen.spec import Spec
from rlgen.verl import releases

#: rlgen's verl tools: a Python package the Dockerfile copies into the image.
TOOLS_PACKAGE = "rlgen_verl_tools"
TOOLS_DIR = "/opt/rlgen"
#: The RayJob's working_dir: verl's package under it, where the run's hydra.searchpath
#: (``file://verl/trainer/config``) finds verl's own config.
VERL_DIR = "/home/verl"


def tool_files() -> dict[str, str]:
    """``images/training/rlgen_verl_tools/*.py`` by path."""
    folder = files("rlgen.generate") / "templates" / "training" / TOOLS_PACKAGE
    return {f"images/training/{TOOLS_PACKAGE}/{item.name}": item.read_text()
            for item in sorted(folder.iterdir(), key=lambda i: i.name) if item.name.endswith(".py")}


def images_entry(spec: Spec) -> dict:
    """The kustomize ``images:`` item replacing the RayJob's placeholder image ``training``."""
    return {"name": "training", "newName": spec.training_image, "newTag": spec.training_tag}


def dockerfile(spec: Spec, image: TrainingImage, packages: list[str]) -> str:
    release = releases.get(spec.verl_version)
    install = "".join(f' "{p}"' for p in sorted(set(packages) | set(release.image_requirements), key=str.lower))
    extra = f" \\\n && pip install --no-cache-dir{install}" if install else ""
    modules = ", ".join((release.entrypoint, *release.trainer_modules,
                         *(f"{TOOLS_PACKAGE}.{m}" for m in tool_modules())))
    needs = ("\n# What verl " + release.version + " requires (its wheel's Requires-Dist) beyond the dependency image:\n# "
             + ", ".join(release.image_requirements) + ".") if release.image_requirements else ""
    return f"""\
# Training image: verl {spec.verl_version}, pushed to {spec.training_image} under a tag that
# hashes this folder's files (images/build.sh): a change here gives the RayJob a new image.
# verl publishes its dependency images under floating tags only: after the first pull, pin
# the digest here (FROM {image.base}@sha256:...) so a rebuild cannot change the image silently.
FROM {image.base}

ARG VERL_VERSION={spec.verl_version}
# The dependency image carries no verl: the release's wheel from PyPI, unpacked into the
# RayJob's working_dir, the folder the run's hydra.searchpath reads verl's config from.{needs}
RUN pip install --no-cache-dir --no-deps --target {VERL_DIR} "verl==${{VERL_VERSION}}"{extra}

# rlgen's verl tools (the sandbox code tool, the data sets' reward tools), named by
# class_name in the trainer's tool_config.yaml.
COPY {TOOLS_PACKAGE} {TOOLS_DIR}/{TOOLS_PACKAGE}
# Kept: the dependency image's own PYTHONPATH (Megatron-LM in verl's vLLM image).
ENV PYTHONPATH={TOOLS_DIR}:{VERL_DIR}${{PYTHONPATH:+:$PYTHONPATH}}

# Train as an unprivileged user; the RayJob sets runAsUser 1000 to match. An Ubuntu 24.04 base
# already has uid 1000 (user ubuntu), which useradd would refuse: that user goes first.
RUN if getent passwd 1000 >/dev/null; then userdel --remove "$(getent passwd 1000 | cut -d: -f1)"; fi \\
 && if getent group 1000 >/dev/null; then groupdel "$(getent group 1000 | cut -d: -f1)"; fi \\
 && useradd --create-home --uid 1000 --user-group ray \\
 && chown -R 1000:1000 {VERL_DIR}
USER 1000
WORKDIR {VERL_DIR}
# A broken image fails here, as the job's user, not hours later on the GPU nodes.
RUN python3 -c "import {modules}"
"""


def tool_modules() -> list[str]:
    """The modules of rlgen's verl tools, by name."""
    return [path.rsplit("/", 1)[-1].removesuffix(".py") for path in tool_files() if not path.endswith("/__init__.py")]
