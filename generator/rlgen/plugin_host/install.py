"""How rlgen itself is installed where a generated repository runs it (its CI workflows and
the data image): the option ``rlgen.install``, one pip requirement naming rlgen, optionally
followed by pip options that say where to find it.

Without an answer the requirement is where this rlgen came from, as pip recorded it
(PEP 610 ``direct_url.json``): none for a release from a package index, a VCS URL and commit,
or an archive URL. A source no image build can reach (an editable or local install, a local
file) is refused, with what to pass instead.
"""
from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from rlgen.errors import RlgenError

if TYPE_CHECKING:
    from importlib import metadata

#: The option's default: "where this rlgen was installed from", resolved by :func:`effective`.
DEFAULT = ""
_EXAMPLE = "e.g. 'rlgen @ git+https://host/rlgen.git@<commit>' or 'rlgen==<version> --index-url URL'"
# Options that only change where pip looks; anything else would change what gets installed.
_INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--trusted-host")


def _split(value: str) -> tuple[str, list[str]]:
    """(requirement, pip options): the requirement is everything before the first option,
    since ``rlgen @ URL`` has spaces in it."""
    tokens = shlex.split(value)
    first = next((i for i, token in enumerate(tokens) if token.startswith("-")), len(tokens))
    return " ".join(tokens[:first]), tokens[first:]


def install_error(value: str) -> str | None:
    """Why ``value`` is not a pip requirement of rlgen with index options, or None."""
    # Lazy: packaging is 77 ms (median of 7), for the image build's requirements only.
    from packaging.requirements import InvalidRequirement, Requirement

    if "\n" in value:
        return "must be one line"
    try:
        requirement, options = _split(value)
        parsed = Requirement(requirement)
    except (ValueError, InvalidRequirement) as exc:
        return f"not a pip requirement ({' '.join(str(exc).split())}); e.g. 'rlgen @ git+https://host/rlgen.git@v0.1.0'"
    if parsed.name.lower() != "rlgen":
        return f"the requirement must name rlgen, not {parsed.name!r}"
    while options:
        option = options.pop(0)
        name = option.split("=", 1)[0]
        if name not in _INDEX_OPTIONS:
            return f"{option!r}: only {', '.join(_INDEX_OPTIONS)} may follow the requirement"
        if "=" not in option and not options:
            return f"{option} needs a value"
        if "=" not in option:
            options.pop(0)
    return None


def pip_arguments(value: str, extra: str | None = None, plugins: tuple[str, ...] = ()) -> str:
    """The arguments of ``pip install`` for ``value``, quoted for a POSIX shell; ``extra``
    adds an extra of rlgen (the data image needs ``data``); ``plugins`` are the plugin
    distributions installed with it, from the same index options."""
    # Lazy: packaging is 77 ms (median of 7), for the image build's requirements only.
    from packaging.requirements import Requirement

    requirement, options = _split(value)
    if extra:
        parsed = Requirement(requirement)
        parsed.extras.add(extra)
        requirement = str(parsed)
    return shlex.join([requirement, *plugins, *options])


def installed_source(dist: metadata.Distribution) -> tuple[str | None, str]:
    """(requirement, why not): the pip requirement that installs ``dist`` again elsewhere, or
    None and the reason no image build could use its source."""
    name = dist.metadata["Name"] or "rlgen"
    text = dist.read_text("direct_url.json")
    if not text:
        return f"{name}=={dist.version}", ""  # from a package index
    info = json.loads(text)
    url = _without_password(info.get("url", ""))
    fragment = f"#subdirectory={info['subdirectory']}" if info.get("subdirectory") else ""
    if vcs := info.get("vcs_info"):
        if url.startswith("file:"):
            return None, f"a local {vcs.get('vcs', 'VCS')} repository"
        return f"{name} @ {vcs['vcs']}+{url}@{vcs['commit_id']}{fragment}", ""
    if "archive_info" in info:
        if url.startswith("file:"):
            return None, "a local file"
        hashes = info["archive_info"].get("hashes") or {}
        if "sha256" in hashes:
            fragment = f"#sha256={hashes['sha256']}"
        return f"{name} @ {url}{fragment}", ""
    if (info.get("dir_info") or {}).get("editable"):
        return None, "an editable install of a local directory"
    return None, "a local directory"


def _without_password(url: str) -> str:
    """``url`` without a password (pip strips credentials when it records a URL; a user name
    like ``git@`` stays): nothing secret reaches a generated repository."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def effective(value: str) -> str:
    """``rlgen.install`` as given, else where this rlgen was installed from; raises when
    that source is one no image build can reach."""
    if value:
        return value
    requirement, why = installed_rlgen()
    if requirement is None:
        raise RlgenError(f"rlgen.install: this rlgen is {why}, which the data image and CI cannot install: "
                         f"pass --set rlgen.install=REQUIREMENT ({_EXAMPLE})")
    return requirement


def installed_rlgen() -> tuple[str | None, str]:
    """(the pip requirement this rlgen was installed from, or None and why no image build can
    reach that source)."""
    # Lazy: importlib.metadata is 45 ms (median of 7).
    from importlib import metadata

    # An installer (pip, uv) leaves INSTALLER; a source checkout's build leftovers (an egg-info
    # in the working directory, first on sys.path) do not and say nothing about the source.
    found = list(metadata.distributions(name="rlgen"))
    installed = [d for d in found if d.read_text("INSTALLER")] or found
    if installed:
        return installed_source(installed[0])
    return None, "not installed (run from a source checkout)"


def default_unusable() -> str | None:
    """Why ``rlgen.install`` cannot be left to its default here, or None: the question
    ``rlgen new`` asks first, as every later step needs its answer."""
    requirement, why = installed_rlgen()
    if requirement is not None:
        return None
    return f"this rlgen is {why}, which no image build can reach"


def needs_git(value: str) -> bool:
    """Whether pip clones a Git repository to install ``value``."""
    requirement, _ = _split(value)
    return "@" in requirement and requirement.split("@", 1)[1].strip().startswith("git+")


def upgrade_arguments(value: str, plugins: tuple[str, ...] = (), extra: str | None = None) -> str:
    """``pip install --upgrade`` arguments for the newest rlgen from ``value``'s index (its
    name, extras and index options, no version), with ``extra`` and the ``plugins`` as
    pinned; "" when ``value`` pins a URL."""
    # Lazy: packaging is 77 ms (median of 7), for the image build's requirements only.
    from packaging.requirements import Requirement

    requirement, options = _split(value)
    parsed = Requirement(requirement)
    if parsed.url:
        return ""
    extras = parsed.extras | ({extra} if extra else set())
    name = parsed.name + (f"[{','.join(sorted(extras))}]" if extras else "")
    return shlex.join([name, *plugins, *options])


def index_options(value: str) -> str:
    """``value``'s pip options, each shell-quoted, with a leading space ("" without any)."""
    _, options = _split(value)
    return "".join(" " + shlex.quote(o) for o in options)


def requirement_list(raw) -> list[str]:
    """``rlgen.plugin_packages``: a YAML list of pip requirements (``["a==1", "b @ URL"]``), or
    one requirement; what ``rlgen.yaml`` records is a list."""
    # Lazy: yamlio with PyYAML is 33 ms (median of 7, -X importtime) of rlgen plugins, which reads none.
    from rlgen.tools import yamlio

    if isinstance(raw, (list, tuple)):
        return [str(item) for item in raw]
    text = str(raw).strip()
    if not text:
        return []
    if text.startswith("["):
        parsed = yamlio.parse_value(text)
        if not isinstance(parsed, list):
            raise ValueError(text)
        return [str(item) for item in parsed]
    return [text]


def requirements_error(value: list[str]) -> str | None:
    """Why ``value`` is not a list of pip requirements, each of one distribution, or None."""
    # Lazy: packaging is 77 ms (median of 7), for the image build's requirements only.
    from packaging.requirements import InvalidRequirement, Requirement

    for i, item in enumerate(value):
        if "\n" in item or item.strip().startswith("-"):
            return f"item {i + 1} {item!r}: one pip requirement per item, no pip options (rlgen.install holds those)"
        try:
            Requirement(item)
        except InvalidRequirement as exc:
            return f"item {i + 1} {item!r} is not a pip requirement ({' '.join(str(exc).split())})"
    return None


def plugin_requirements(value: tuple[str, ...], distributions: tuple[str, ...]) -> tuple[str, ...]:
    """The plugin distributions the CI and the data image install beside rlgen:
    ``rlgen.plugin_packages`` as given, else each of ``distributions`` (those of the selected
    plugins that rlgen does not ship) from where it was installed; raises when that is a source
    no image build can reach."""
    if value:
        return value
    # Lazy: importlib.metadata is 45 ms (median of 7).
    from importlib import metadata

    found = []
    for name in distributions:
        requirement, why = installed_source(metadata.distribution(name))
        if requirement is None:
            raise RlgenError(f"rlgen.plugin_packages: plugin distribution {name} is {why}, which the data image and "
                             f"CI cannot install: pass --set 'rlgen.plugin_packages=[\"{name} @ URL\"]' "
                             f"(or a version from the index rlgen.install names, e.g. \"{name}==VERSION\")")
        found.append(requirement)
    return tuple(found)
