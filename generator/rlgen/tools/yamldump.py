"""The fast way :func:`rlgen.tools.yamlio.dump_all` writes plain data (dicts, lists, scalars
that no user file carried in): PyYAML's emitter, several times faster than a round-trip
dump, set up to write exactly what ruamel.yaml writes with yamlio's settings.

- sequences indented under their key (``key:\\n  - a``), as ruamel's ``sequence=4, offset=2``;
- a string is quoted when the YAML 1.2 core schema would read it as another type (``'1e-06'``,
  ``'true'``), as ruamel decides, and strings YAML 1.1 readers take for booleans (``'on'``);
- ``None`` is an empty value, multi-line strings are ``|`` blocks, keys keep their order,
  nothing is folded, non-ASCII text stays as it is.

Data that carries ruamel comments or styles goes through ruamel.yaml (see yamlio).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

#: ruamel.yaml's YAML 1.2 implicit resolvers for the types plain data holds (resolver.py).
_RESOLVERS = {
    "tag:yaml.org,2002:bool": (r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    "tag:yaml.org,2002:null": (r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    "tag:yaml.org,2002:int": (r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$",
                              list("-+0123456789")),
    "tag:yaml.org,2002:float": (
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
        r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+0123456789.")),
    "tag:yaml.org,2002:merge": (r"^(?:<<)$", ["<"]),
    "tag:yaml.org,2002:value": (r"^(?:=)$", ["="]),
}


@lru_cache(maxsize=1)
def _dumper(yaml11_booleans: frozenset[str]):
    import yaml

    class Dumper(yaml.SafeDumper):
        yaml_implicit_resolvers: dict = {}

        in_key = False

        def ignore_aliases(self, data):
            return True  # a dict used twice is written twice, never as an anchor

        def increase_indent(self, flow=False, indentless=False):
            return super().increase_indent(flow, False)

        def choose_scalar_style(self):
            # ruamel.yaml double-quotes a string that holds a single quote.
            style = super().choose_scalar_style()
            return '"' if style == "'" and "'" in self.event.value else style

        def represent_mapping(self, tag, mapping, flow_style=None):
            node = yaml.MappingNode(tag, [], flow_style=False)
            for key, value in mapping.items():
                self.in_key = True
                key_node = self.represent_data(key)
                self.in_key = False
                node.value.append((key_node, self.represent_data(value)))
            return node

    for tag, (pattern, first) in _RESOLVERS.items():
        Dumper.add_implicit_resolver(tag, re.compile(pattern, re.X), first)

    def string(dumper, value: str):
        # A key is never read as a boolean by the readers the quotes are for.
        boolean = not dumper.in_key and value.lower() in yaml11_booleans
        style = "|" if "\n" in value else "'" if boolean else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, string)
    Dumper.add_representer(type(None), lambda d, _: d.represent_scalar("tag:yaml.org,2002:null", ""))
    Dumper.add_representer(float, _float)
    return Dumper


def _float(dumper, value: float):
    # ruamel writes repr() of the float (1e-06, 0.5, .inf), not PyYAML's 1.0e-06.
    if value != value:
        text = ".nan"
    elif value in (float("inf"), float("-inf")):
        text = ".inf" if value > 0 else "-.inf"
    else:
        text = repr(value)
    return dumper.represent_scalar("tag:yaml.org,2002:float", text)


def dump(doc: Any, yaml11_booleans: frozenset[str]) -> str:
    import yaml

    return yaml.dump(doc, Dumper=_dumper(yaml11_booleans), default_flow_style=False, sort_keys=False,
                     allow_unicode=True, width=4096, indent=2)


def is_plain(value: Any) -> bool:
    """Only builtin containers and scalars, nothing ruamel-typed (comments, quoting styles),
    and none of the two shapes ruamel writes its own way: a list item that is a list
    (``-   - a``) or None (``- ``)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and is_plain(v) for k, v in value.items())
    if kind is list:
        return all(type(v) not in (list, type(None)) and is_plain(v) for v in value)
    return kind in (str, int, float, bool, type(None))
