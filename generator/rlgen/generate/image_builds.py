"""The images a repository builds (``images/training``, ``images/data``, and a plugin's such as
``images/sandbox-manager``, ``rlgen_images``): each one's build context as rlgen writes it, and
its tag: a readable prefix and a hash of the context's files.

A changed Dockerfile (mlflow on, a plugin's ``rlgen_training_packages``) thus gives a new tag,
the RayJob and Jobs that run it new names, and nodes that already hold the old image pull the
new one. ``images/build.sh`` computes the same hash from the files git tracks in the checkout
(``sha256sum`` of each file, then of that list; untracked files such as ``__pycache__`` left by a
local run do not count) to build exactly the images the registry lacks, and refuses a context
whose files no longer match the tag rlgen wrote.
"""
from __future__ import annotations

from typing import Mapping

# The hash and the image live below the plugin API, where a plugin that writes an image folder
# (opensource-sandbox's images/sandbox-manager) tags it with the same function.
from rlgen.contributions import ImageBuild
from rlgen.naming import IMAGE_HASH_LENGTH as HASH_LENGTH, context_hash

__all__ = ["HASH_LENGTH", "ImageBuild", "build", "context_hash"]


def build(files: Mapping[str, bytes], context: str, repository: str, prefix: str) -> ImageBuild:
    """``context``'s image, tagged ``<prefix>-<hash>`` (without a prefix: the hash)."""
    return ImageBuild.of(files, context, repository, prefix)
