"""The images a repository builds (``images/training``, ``images/data``): each one's build
context as rlgen writes it, and its tag: a readable prefix and a hash of the context's files.

A changed Dockerfile (mlflow on, a plugin's ``rlgen_training_packages``) thus gives a new tag,
the RayJob and Jobs that run it new names, and nodes that already hold the old image pull the
new one. ``images/build.sh`` computes the same hash from the files git tracks in the checkout
(``sha256sum`` of each file, then of that list; untracked files such as ``__pycache__`` left by a
local run do not count) to build exactly the images the registry lacks, and refuses a context
whose files no longer match the tag rlgen wrote.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping

#: Hex digits of the context hash in a tag: 48 bits, no collision among one repository's builds.
HASH_LENGTH = 12
SCRIPT = "images/build.sh"


@dataclass(frozen=True)
class ImageBuild:
    """One image: its build context (a folder of the repository), where it is pushed, its tag."""

    context: str
    repository: str
    tag: str

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}"


def context_hash(files: Mapping[str, bytes], context: str) -> str:
    """The hash of ``context``'s files: the sha256 of the lines ``sha256sum`` prints for them,
    sorted by their path inside the context, as ``images/build.sh`` computes it."""
    prefix = context.rstrip("/") + "/"
    inside = sorted(path.removeprefix(prefix).encode() for path in files if path.startswith(prefix))
    if not inside:
        raise ValueError(f"no files in {context}")
    listing = b"".join(hashlib.sha256(files[prefix + path.decode()]).hexdigest().encode() + b"  " + path + b"\n"
                       for path in inside)
    return hashlib.sha256(listing).hexdigest()


def build(files: Mapping[str, bytes], context: str, repository: str, prefix: str) -> ImageBuild:
    """``context``'s image, tagged ``<prefix>-<hash>`` (without a prefix: the hash)."""
    digest = context_hash(files, context)[:HASH_LENGTH]
    return ImageBuild(context, repository, f"{prefix}-{digest}" if prefix else digest)


def split_reference(image: str) -> tuple[str, str]:
    """``registry/name:tag`` as (``registry/name``, ``tag``); no tag: (``image``, ""). A digest
    is dropped: the image this repository builds is named by its tag."""
    name, colon, tag = image.partition("@")[0].rpartition(":")
    if colon and "/" not in tag:
        return name, tag
    return image.partition("@")[0], ""
