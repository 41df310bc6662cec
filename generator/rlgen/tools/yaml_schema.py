"""The one YAML 1.2 core-schema table every reader and writer of rlgen follows (ruamel.yaml's
own), the strings a YAML 1.1 reader would take for booleans, and the libyaml loader every fast
reader starts from."""
from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def core_schema() -> dict[str, tuple[Any, list[str] | None]]:
    """The YAML 1.2 implicit types, tag -> (pattern, first characters), taken from ruamel.yaml's
    own resolver so the fast reader and writer below can never read or quote a plain scalar
    otherwise than ruamel does. It is the core schema (yaml.org/spec/1.2.2 section 10.3.2) as
    ruamel implements it: ``0o17`` and ``1_000`` are ints, ``2024-01-01`` a date, ``+.5`` a
    float and ``.5e5`` a string (its exponent has no sign)."""
    # Lazy: ruamel.yaml is 21 ms (median of 7); the plain readers use libyaml only.
    from ruamel.yaml.resolver import implicit_resolvers

    return {tag: (pattern, first) for versions, tag, pattern, first in implicit_resolvers if (1, 2) in versions}
#: Plain in YAML 1.2 but booleans to YAML 1.1 readers (kubectl's and Go's older parsers): quoted.
YAML11_BOOLEANS = frozenset({"y", "n", "yes", "no", "on", "off"})


def c_loader():
    """PyYAML's loader on libyaml (its pure-Python one where PyYAML was built without it)."""
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)
