"""The images a repository builds as ``images/build.sh`` lists them, and their tags: each ends in
the hash of its folder's files (:func:`rlgen.naming.context_hash`, cut to
:data:`~rlgen.naming.IMAGE_HASH_LENGTH`). :mod:`rlgen.generate.image_builds` tags the images
rlgen writes; ``rlgen validate`` reads the list back and names a folder whose files no longer
match its tag."""
from __future__ import annotations

import re

SCRIPT = "images/build.sh"


def follows(tag: str, digest: str) -> bool:
    """Whether ``tag`` ends in ``digest`` (a context hash cut to its length in a tag), as
    ``images/build.sh`` checks it: the whole tag, or its part after the last ``-``."""
    return tag == digest or tag.endswith(f"-{digest}")


def split_reference(image: str) -> tuple[str, str]:
    """``registry/name:tag`` as (``registry/name``, ``tag``); no tag: (``image``, ""). A digest
    is dropped: the image this repository builds is named by its tag."""
    name, colon, tag = image.partition("@")[0].rpartition(":")
    if colon and "/" not in tag:
        return name, tag
    return image.partition("@")[0], ""


#: An entry of the ``images=(...)`` list of ``images/build.sh``: ``"<folder> <reference>"``.
_ENTRY = re.compile(r'^\s*"(\S+) (\S+)"\s*$')


def listed(script: str) -> list[tuple[str, str]]:
    """(folder, reference) of each image ``images/build.sh`` builds, read from its list, the
    one the images workflow builds from."""
    found, inside = [], False
    for line in script.splitlines():
        if line.startswith("images=("):
            inside = True
        elif inside and line.strip() == ")":
            break
        elif inside and (entry := _ENTRY.match(line)):
            found.append((entry[1], entry[2]))
    return found
