"""``images/training/Dockerfile`` and the image the RayJob runs.

The rollout plugin names verl's dependency image for its engine; the generator adds the verl
checkout of the pinned release (the dependency images ship without verl), rlgen's own verl
tools (``rlgen_verl_tools``, the same files for every release) and the packages the other
plugins need, and runs it as an unprivileged user.
"""
from __future__ import annotations

from importlib.resources import files

from rlgen.contributions import TrainingImage
from rlgen.spec import Spec

#: rlgen's verl tools: a Python package the Dockerfile copies beside the verl checkout.
TOOLS_PACKAGE = "rlgen_verl_tools"
TOOLS_DIR = "/opt/rlgen"


def tool_files() -> dict[str, str]:
    """``images/training/rlgen_verl_tools/*.py`` by path."""
    folder = files("rlgen.generate") / "templates" / "training" / TOOLS_PACKAGE
    return {f"images/training/{TOOLS_PACKAGE}/{item.name}": item.read_text()
            for item in sorted(folder.iterdir(), key=lambda i: i.name) if item.name.endswith(".py")}


def images_entry(spec: Spec, image: TrainingImage) -> dict:
    """The kustomize ``images:`` item replacing the RayJob's placeholder image ``training``."""
    return {"name": "training", "newName": spec.training_image, "newTag": image.tag}


def dockerfile(spec: Spec, image: TrainingImage, packages: list[str]) -> str:
    install = "".join(f' "{p}"' for p in sorted(set(packages)))
    extra = f" \\\n && pip install --no-cache-dir{install}" if install else ""
    return f"""\
# Training image: verl {spec.verl_version}, pushed as {spec.training_image}:{image.tag}.
# verl publishes its dependency images under floating tags only: after the first pull, pin
# the digest here (FROM {image.base}@sha256:...) so a rebuild cannot change the image silently.
FROM {image.base}

ARG VERL_VERSION={spec.verl_version}
# The dependency image carries no verl: the job runs this checkout (RayJob working_dir).
# verl-project/verl is the project's home since it moved from volcengine/verl.
RUN git clone --depth 1 --branch v${{VERL_VERSION}} https://github.com/verl-project/verl.git /home/verl \\
 && pip install --no-cache-dir --no-deps -e /home/verl{extra}

# rlgen's verl tools (the sandbox code tool, the data sets' reward tools), named by
# class_name in the trainer's tool_config.yaml.
COPY {TOOLS_PACKAGE} {TOOLS_DIR}/{TOOLS_PACKAGE}
ENV PYTHONPATH={TOOLS_DIR}

# Train as an unprivileged user; the RayJob sets runAsUser 1000 to match. An Ubuntu 24.04 base
# already has uid 1000 (user ubuntu), which useradd would refuse: that user goes first.
RUN if getent passwd 1000 >/dev/null; then userdel --remove "$(getent passwd 1000 | cut -d: -f1)"; fi \\
 && if getent group 1000 >/dev/null; then groupdel "$(getent group 1000 | cut -d: -f1)"; fi \\
 && useradd --create-home --uid 1000 --user-group ray \\
 && chown -R 1000:1000 /home/verl
USER 1000
WORKDIR /home/verl
"""
