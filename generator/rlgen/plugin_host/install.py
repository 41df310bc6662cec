"""How rlgen itself is installed where a generated repository runs it (its CI workflows and
the data image): the option ``rlgen.install``, one pip requirement naming rlgen, optionally
followed by pip options that say where to find it."""
from __future__ import annotations

import shlex

from rlgen import __version__

DEFAULT = f"rlgen=={__version__}"
# Options that only change where pip looks; anything else would change what gets installed.
_INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--trusted-host")


def _split(value: str) -> tuple[str, list[str]]:
    """(requirement, pip options): the requirement is everything before the first option,
    since ``rlgen @ URL`` has spaces in it."""
    tokens = shlex.split(value or DEFAULT)
    first = next((i for i, token in enumerate(tokens) if token.startswith("-")), len(tokens))
    return " ".join(tokens[:first]), tokens[first:]


def install_error(value: str) -> str | None:
    """Why ``value`` is not a pip requirement of rlgen with index options, or None."""
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


def pip_arguments(value: str, extra: str | None = None) -> str:
    """The arguments of ``pip install`` for ``value``, quoted for a POSIX shell; ``extra``
    adds an extra of rlgen (the data image needs ``data``)."""
    from packaging.requirements import Requirement

    requirement, options = _split(value)
    if extra:
        parsed = Requirement(requirement)
        parsed.extras.add(extra)
        requirement = str(parsed)
    return shlex.join([requirement, *options])
