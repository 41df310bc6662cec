"""Plain data written as YAML exactly as ruamel.yaml writes it with rlgen's settings, several
times faster: rlgen's own block writer, checked byte for byte against PyYAML's emitter set up to
write the same, which takes what the writer leaves. :func:`rlgen.tools.yamlio.dump_all` picks it
for data no user file carried in."""
from __future__ import annotations

import io
import re
from functools import lru_cache
from typing import Any

from rlgen.tools.yaml_schema import YAML11_BOOLEANS, core_schema


def dump_plain(doc: Any) -> str:
    """What ruamel writes for plain data with rlgen's settings (:mod:`rlgen.tools.yamlio`): sequences
    indented under their key (``key:\\n  - a``); a string quoted where :func:`core_schema` reads another
    type (``'1e-06'``) or a YAML 1.1 reader a boolean (``'on'``); ``None`` an empty value; multi-line
    strings ``|`` blocks; keys in their order; nothing folded; non-ASCII text as it is.

    :class:`_Block` writes the documents rlgen generates, several times faster than PyYAML's
    emitter; what it leaves (a string only double quotes can hold, a long one, a break other
    than ``\\n``, a scalar alone) goes to that emitter, set up to write the same."""
    try:
        return _Block().document(doc)
    except _Unusual:
        return _pyyaml_dump(doc)


def _pyyaml_dump(doc: Any) -> str:
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    return yaml.dump(doc, Dumper=_plain_dumper(), default_flow_style=False, sort_keys=False,
                     allow_unicode=True, width=4096, indent=2)


class _Unusual(Exception):
    """A document :class:`_Block` leaves to PyYAML's emitter."""


#: Strings PyYAML's emitter writes plain in block context (``analyze_scalar``: no indicator
#: where one counts, no leading or trailing space, printable ASCII on one line), unless a
#: resolver reads them as another type. A string it does not match is analysed as PyYAML does.
_PLAIN = re.compile(r"""(?!---|\.\.\.)
    (?: [$()+./0-9;<=A-Z\\^_a-z~] | [-?:](?=[!-~]) )        # first: no indicator
    (?: [!"\#$-9;-~] | :(?=[!-~]) | \x20(?=[!"$-~]) )*   # no ": ", " #" or trailing space
    """, re.X)
#: Multi-line strings PyYAML writes as literal blocks: printable ASCII and line breaks, no space
#: before a break or at the end, no break first or (kept, ``|+``) last but one.
_LITERAL = re.compile(r"(?![ \n])[ -~\n]*")
_LONGEST = 2000  # PyYAML folds a line past its width (4096): no string near it takes the fast path


class _Block:
    """Block-style YAML of plain data, byte for byte as :func:`_pyyaml_dump` writes it: indent
    2, a sequence indented under its key, a mapping in a sequence item begun on the item's line,
    empty collections as ``{}`` and ``[]``. Raises :class:`_Unusual` for anything else."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def document(self, doc: Any) -> str:
        if type(doc) is dict and doc:
            self.mapping(doc, 0, False)
        elif type(doc) is list and doc:
            self.sequence(doc, 0)
        else:
            raise _Unusual
        return "".join(self.out)

    def mapping(self, mapping: dict, indent: int, inline: bool) -> None:
        pad = " " * indent
        for i, (key, value) in enumerate(mapping.items()):
            head = ("" if inline and i == 0 else pad) + _key(key) + ":"
            kind = type(value)
            if kind is dict and value:
                self.out.append(head + "\n")
                self.mapping(value, indent + 2, False)
            elif kind is list and value:
                self.out.append(head + "\n")
                self.sequence(value, indent + 2)
            else:
                self.out.append(head + _value(value, indent + 2) + "\n")

    def sequence(self, items: list, indent: int) -> None:
        pad = " " * indent
        for item in items:
            kind = type(item)
            if kind is dict and item:
                self.out.append(pad + "- ")
                self.mapping(item, indent + 2, True)
            elif kind is list or item is None:
                raise _Unusual  # is_plain keeps these from here; ruamel writes them its own way
            else:
                self.out.append(pad + "-" + _value(item, indent + 2) + "\n")


def _key(key: str) -> str:
    if len(key) < 100 and _PLAIN.fullmatch(key):
        if not _resolved(key):
            return key
        if "'" not in key:
            return f"'{key}'"
    analysis = _analysis(key)
    # A simple key (the only kind written here): never empty or multi-line, and short.
    if analysis.empty or analysis.multiline or len(key) >= 100:
        raise _Unusual
    if not _resolved(key) and analysis.allow_block_plain:
        return key
    if analysis.allow_single_quoted and "'" not in key:
        return f"'{key}'"
    raise _Unusual


def _value(value: Any, indent: int) -> str:
    """The text after ``key:`` or ``-`` of a scalar or an empty collection, its space included."""
    kind = type(value)
    if kind is str:
        return " " + _string(value, indent)
    if value is None:
        return ""
    if kind is bool:
        return " true" if value else " false"
    if kind is int:
        text = str(value)
        tag = "int"
    elif kind is float:
        text = _float_text(value)
        tag = "float"
    elif kind is dict:
        return " {}"
    elif kind is list:
        return " []"
    else:
        raise _Unusual
    if _resolved(text) != f"tag:yaml.org,2002:{tag}":
        raise _Unusual
    return " " + text


def _string(value: str, indent: int) -> str:
    if "\n" in value:
        # A literal block; PyYAML adds an indentation hint for a leading space and a chomping one.
        if not _LITERAL.fullmatch(value) or " \n" in value or value.endswith((" ", "\n\n")) or value == "\n":
            raise _Unusual
        body = value if value.endswith("\n") else value + "\n"
        pad = " " * indent
        lines = "".join(pad + line + "\n" if line else "\n" for line in body[:-1].split("\n"))
        return ("|" if value.endswith("\n") else "|-") + "\n" + lines[:-1]
    if len(value) > _LONGEST:
        raise _Unusual
    if value.lower() in YAML11_BOOLEANS:
        return f"'{value}'"
    if value == "" or _PLAIN.fullmatch(value):
        # Printable ASCII on one line: plain, or quoted where another type would be read.
        if value and not _resolved(value):
            return value
        if "'" not in value:
            return f"'{value}'"
        raise _Unusual
    analysis = _analysis(value)
    if analysis.multiline:  # a break other than \n (U+0085, U+2028): PyYAML writes it its own way
        raise _Unusual
    if analysis.allow_block_plain and not _resolved(value):
        return value
    if analysis.allow_single_quoted and "'" not in value:
        return f"'{value}'"
    raise _Unusual  # double quotes: ruamel's choice for a string with a single quote in it


def _resolved(text: str) -> str | None:
    """The tag :func:`core_schema` reads a plain ``text`` as, or ``None`` for a string."""
    table = _resolvers()
    for tag, pattern in table.get(text[:1], []) + table.get(None, []):
        if pattern.match(text):
            return tag
    return None


@lru_cache(maxsize=1)
def _resolvers() -> dict[str, list]:
    table: dict[str, list] = {}
    for tag, (pattern, first) in core_schema().items():
        for char in first or [None]:
            table.setdefault(char, []).append((tag, pattern))
    return table


def _analysis(text: str):
    """PyYAML's own analysis of a scalar: which styles can hold it."""
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    return yaml.emitter.Emitter(io.StringIO(), allow_unicode=True).analyze_scalar(text)


@lru_cache(maxsize=1)
def _plain_dumper():
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
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

    for tag, (pattern, first) in core_schema().items():
        Dumper.add_implicit_resolver(tag, pattern, first)

    Dumper.add_representer(str, _represent_string)
    Dumper.add_representer(type(None), lambda d, _: d.represent_scalar("tag:yaml.org,2002:null", ""))
    Dumper.add_representer(float, _float)
    return Dumper


def _represent_string(dumper, value: str):
    # A key is never read as a boolean by the readers the quotes are for.
    boolean = not dumper.in_key and value.lower() in YAML11_BOOLEANS
    style = "|" if "\n" in value else "'" if boolean else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _float(dumper, value: float):
    return dumper.represent_scalar("tag:yaml.org,2002:float", _float_text(value))


def _float_text(value: float) -> str:
    # ruamel writes repr() of the float (1e-06, 0.5, .inf), not PyYAML's 1.0e-06.
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    return repr(value)
