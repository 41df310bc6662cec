"""Kubernetes name rules and the deterministic short hashes used in generated names."""
from __future__ import annotations

import hashlib
import re
from typing import Mapping

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")

#: KubeRay appends "-xxxxx" for the RayCluster, whose name must stay within 53 characters.
MAX_RAYJOB_NAME = 47
HASH_LENGTH = 7


def dns1123_label_error(value: str) -> str | None:
    if len(value) > 63:
        return f"'{value}' is longer than 63 characters"
    if not _DNS1123_LABEL.fullmatch(value):
        return f"'{value}' is not a DNS-1123 label (lower-case letters, digits and '-')"
    return None


def dns1035_label_error(value: str, max_length: int = 63) -> str | None:
    if len(value) > max_length:
        return f"'{value}' is longer than {max_length} characters"
    if not _DNS1035_LABEL.fullmatch(value):
        return f"'{value}' is not a DNS-1035 label (starts with a lower-case letter; lower-case letters, digits, '-')"
    return None


def short_hash(data: bytes, length: int = HASH_LENGTH) -> str:
    return hashlib.sha256(data).hexdigest()[:length]


def hashed_name(base: str, data: bytes, max_length: int = MAX_RAYJOB_NAME) -> str:
    """``<base>-<hash>``, shortening ``base`` deterministically so the result fits.

    A shortened base keeps its start and gains a hash of the full base, so two long names
    that share a prefix stay distinct.
    """
    suffix = "-" + short_hash(data)
    room = max_length - len(suffix)
    if len(base) > room:
        tag = short_hash(base.encode(), 4)
        base = base[: room - len(tag) - 1].rstrip("-") + "-" + tag
    return base + suffix


#: Hex digits of an image's context hash in its tag: 48 bits, no collision among one repository's builds.
IMAGE_HASH_LENGTH = 12


def context_hash(files: Mapping[str, bytes], context: str) -> str:
    """The hash of ``context``'s files: the sha256 of the lines ``sha256sum`` prints for them,
    sorted by their path inside the context, as the generated ``images/build.sh`` computes it.
    Here, below the plugin API, because a plugin that writes an image folder tags it too."""
    prefix = context.rstrip("/") + "/"
    inside = sorted(path.removeprefix(prefix).encode() for path in files if path.startswith(prefix))
    if not inside:
        raise ValueError(f"no files in {context}")
    listing = b"".join(hashlib.sha256(files[prefix + path.decode()]).hexdigest().encode() + b"  " + path + b"\n"
                       for path in inside)
    return hashlib.sha256(listing).hexdigest()


#: Second-level domains RFC 2606 reserves for examples: no registry or Git server lives there.
EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org")


def is_example_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in EXAMPLE_DOMAINS)


def image_host(image: str) -> str:
    """The registry host of an image reference (``docker.io`` when it names none)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first.split(":")[0]
    return "docker.io"


def url_host(url: str) -> str:
    """The host of a Git URL: ``https://h/p``, ``ssh://git@h:22/p`` or scp-like ``git@h:p``."""
    rest = url.split("://", 1)[1] if "://" in url else url
    return rest.split("/", 1)[0].rpartition("@")[2].split(":")[0]


#: How a Git host signs its push webhooks (``rlgen.git_host``): as GitHub does (GitHub,
#: GitHub Enterprise Server, Gitea: X-Hub-Signature-256), as GitLab does (GitLab, self-managed
#: too: X-Gitlab-Token), or an HMAC of the body in X-Signature (Flux's generic-hmac).
GIT_HOSTS = ("github", "gitlab", "generic-hmac")
#: The hosts whose name tells their kind; any other (an Enterprise Server, a self-managed GitLab,
#: Gitea), whatever it is called, is asked.
KNOWN_GIT_HOSTS = {"github.com": "github", "gitlab.com": "gitlab"}


def git_host(url: str, answer: str = "") -> str:
    """The kind of Git host serving ``url`` (one of GIT_HOSTS): what the host's name tells, else
    ``answer`` (``rlgen.git_host``), "" when neither does. It decides how a push webhook is
    signed and whether the generated GitHub workflows run at all; every reader asks it here."""
    return (KNOWN_GIT_HOSTS.get(url_host(url).lower(), "") if url else "") or answer


def unknown_git_host(url: str | None) -> str | None:
    """Why ``rlgen.git_host`` must be answered for ``url``, or None when the host's name tells it."""
    if not url or git_host(url):
        return None
    return f"git_url's host {url_host(url)} is neither github.com nor gitlab.com"


def git_host_error(value: str, earlier: dict) -> str | None:
    """An answer that contradicts a host whose name tells its kind."""
    known = git_host(earlier.get("git_url") or "")
    if known and value != known:
        return f"{url_host(earlier['git_url'])} is {known}: '{value}' cannot sign its webhooks"
    return None
