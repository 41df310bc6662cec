"""``images/training/Dockerfile`` and the image the RayJob runs.

The rollout plugin names verl's dependency image for its engine; the generator adds the verl
checkout of the pinned release (the dependency images ship without verl) and the packages
the other plugins need, and runs it as an unprivileged user.
"""
from __future__ import annotations

from rlgen.contributions import TrainingImage
from rlgen.spec import Spec


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

# Train as an unprivileged user; the RayJob sets runAsUser 1000 to match. An Ubuntu 24.04 base
# already has uid 1000 (user ubuntu), which useradd would refuse: that user goes first.
RUN if getent passwd 1000 >/dev/null; then userdel --remove "$(getent passwd 1000 | cut -d: -f1)"; fi \\
 && if getent group 1000 >/dev/null; then groupdel "$(getent group 1000 | cut -d: -f1)"; fi \\
 && useradd --create-home --uid 1000 --user-group ray \\
 && chown -R 1000:1000 /home/verl
USER 1000
WORKDIR /home/verl
"""
