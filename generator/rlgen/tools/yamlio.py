"""All YAML reading and writing of rlgen, by one set of rules: YAML 1.2 as ruamel.yaml reads
and writes it (:func:`core_schema`), whichever parser or emitter does the work.

- Round trip (comments, key order and quoting kept): ruamel.yaml, for files a user edits.
- Plain data out: exactly what ruamel writes, several times faster: rlgen's own block writer,
  checked byte for byte against PyYAML's emitter set up to write the same, which takes what the
  writer leaves (:func:`dump_all` picks them for data no user file carried in).
- Plain data in: libyaml through PyYAML, many times faster than a round-trip parser, by YAML
  1.2 (:func:`read_plain12`) or, for rendered manifests and what the API server reads, by YAML
  1.1 (:func:`read_plain_all`, :func:`read_yaml11_all`).

Every reader of YAML text is strict alike (:func:`_strict`): a key given twice, or a value JSON
has not (``!!binary``, ``!!set``, a date where a config is read), is a defect with its line, as
kustomize, the sync engines and Hydra refuse or misread them. Files are read by
:mod:`rlgen.tools.repo_files` (a regular file of the repository, bounded, UTF-8).

Errors: a defect in text is a ``ValueError`` with the problem and its line; :func:`read_file`,
the one reader of a file, turns it into an :class:`RlgenError` naming the file and the place.
"""
from __future__ import annotations

import io
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from rlgen.errors import RlgenError
from rlgen.tools.repo_files import read_text as read_repository_file

if TYPE_CHECKING:
    from ruamel.yaml import YAML

# ruamel.yaml is imported where it is used: importing it costs more than most commands' own
# work before their first kustomize build, and reading plain data needs only libyaml.


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


def _yaml() -> YAML:
    # Lazy: ruamel.yaml is 21 ms (median of 7); the plain readers use libyaml only.
    from ruamel.yaml import YAML

    y = YAML()
    y.indent(mapping=2, sequence=4, offset=2)
    y.width = 4096  # never fold long strings: a folded entrypoint is hard to review
    y.preserve_quotes = True
    return y


# -- reading

#: Bounds on a YAML text rlgen parses: no file rlgen writes or a user keeps comes near them, and
#: past them a hostile file (an alias bomb, a 50 MB run.yaml, 10,000 nested lists) would keep
#: a command busy for minutes or exhaust the stack.
MAX_BYTES = 8 * 1024 * 1024
MAX_ALIAS_NODES = 200_000
MAX_DEPTH = 200


# long: one loop over libyaml's events, run on every file read; a call per event would slow it.
def bounded(text: str) -> None:
    """Raise ``ValueError`` when ``text`` is beyond :data:`MAX_BYTES`, nests deeper than
    :data:`MAX_DEPTH`, its aliases expand past :data:`MAX_ALIAS_NODES` nodes or one is inside
    the collection it names. One event pass
    by libyaml, which never expands an alias, so the check costs little."""
    if len(text) > MAX_BYTES:
        raise ValueError(f"{len(text)} characters, more than the {MAX_BYTES} rlgen reads")
    if "*" not in text and text.count("[") + text.count("{") < MAX_DEPTH and text.count("\n") < MAX_DEPTH:
        return
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    sizes: dict[str, int] = {}
    # Each open collection: [anchor, nodes so far]; an alias counts as the nodes of its anchor.
    stack: list[list] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=_c_loader()):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append([event.anchor, 1])
                if len(stack) > MAX_DEPTH:
                    raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, count = stack.pop()
                if anchor:
                    sizes[anchor] = count
            elif isinstance(event, yaml.AliasEvent):
                if any(anchor == event.anchor for anchor, _ in stack):
                    # A collection that holds itself: every reader would walk it for ever.
                    mark = event.start_mark
                    raise ValueError(f"line {mark.line + 1}, column {mark.column + 1}: the alias *{event.anchor} "
                                     "is inside the collection it names")
                count = sizes.get(event.anchor, 1)
            elif isinstance(event, yaml.ScalarEvent):
                count = 1
                if event.anchor:
                    sizes[event.anchor] = 1
            else:
                continue
            total += count
            if total > MAX_ALIAS_NODES:
                raise ValueError(f"its aliases expand to more than {MAX_ALIAS_NODES} nodes")
            if stack:
                stack[-1][1] += count
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own bound, met before the events reach ours
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
        return  # the parser proper reports the defect, with its place


def load(text: str) -> Any:
    """One document, round trip: comments and quoting kept for writing it back."""
    bounded(text)
    return _yaml().load(text)


def load_all(text: str) -> list[Any]:
    bounded(text)
    return [d for d in _yaml().load_all(text) if d is not None]


def read_file(path: Path) -> Any:
    """A YAML file a user may have edited, parsed with its comments; any defect (unreadable,
    not UTF-8, not YAML, a duplicate key) is one line naming the file and the place."""
    try:
        text = read_repository_file(path)
    except FileNotFoundError:
        raise RlgenError(f"{path}: no such file") from None
    except OSError as exc:
        raise RlgenError(f"{path}: cannot read: {exc.strerror}") from None
    return read_text(path, text)


def read_text(path: Path, text: str) -> Any:
    """:func:`read_file` of ``path`` whose ``text`` the caller has read already. The strict
    rules every reader of a repository's YAML shares (:func:`_strict`) are checked first, at
    libyaml speed; ruamel then builds the document with its comments."""
    # Lazy: ruamel.yaml is 21 ms (median of 7); the plain readers use libyaml only.
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        read_checked12(text)
    except ValueError as exc:
        raise RlgenError(f"{path}: {exc}") from None
    except RecursionError:
        raise RlgenError(f"{path}: nested too deeply") from None
    try:
        return load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise RlgenError(f"{path}: {where}{' '.join(str(exc.problem or exc.context).split())}") from None
    except YAMLError as exc:
        raise RlgenError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
    except (ValueError, RecursionError) as exc:
        raise RlgenError(f"{path}: {exc if isinstance(exc, ValueError) else 'nested too deeply'}") from None


def parse_value(raw: str) -> Any:
    """A value a user typed (``--set k=3e-6``) or a config file they wrote, as plain data by
    YAML 1.2 rules, as Hydra and a reviewer read it (``3e-6`` is a number, ``yes`` a string).
    A defect raises ``ValueError`` with the problem."""
    # Lazy: ruamel.yaml is 21 ms (median of 7); the plain readers use libyaml only.
    from ruamel.yaml.error import YAMLError

    try:
        return _safe_yaml().load(raw)
    except YAMLError as exc:
        raise ValueError(getattr(exc, "problem", None) or type(exc).__name__) from None


@lru_cache(maxsize=1)
def _safe_yaml() -> YAML:
    # Lazy: ruamel.yaml is 21 ms (median of 7); the plain readers use libyaml only.
    from ruamel.yaml import YAML

    # One instance: making one looks for ruamel's plug-ins on disk each time.
    return YAML(typ="safe")


def read_checked12(text: str) -> Any:
    """The first document of ``text`` as :func:`read_plain12` reads it, refusing what the
    round-trip reader of :func:`read_file` refuses and libyaml lets through (a key given twice),
    for checking many hand-editable files at libyaml speed. A defect raises ``ValueError``;
    :func:`read_file` then says where it is."""
    bounded(text)
    return _read_one(text, _strict(_core_loader()))


def read_plain12(text: str) -> Any:
    """The first document of ``text`` as plain data by the rules of :func:`parse_value`, at
    libyaml speed: for the trainer configs ``diff`` and ``validate`` read for every run. The
    same strict reading as :func:`read_checked12`: a defect, or what :func:`_strict` refuses,
    raises ``ValueError``."""
    return read_checked12(text)


def _read_one(text: str, loader) -> Any:
    """``yaml.load(text, loader)``, built from libyaml's events when the text is plain enough
    (:mod:`rlgen.tools.yaml_events`)."""
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    from rlgen.tools import yaml_events

    try:
        return yaml_events.load(text, loader)
    except (yaml_events.Unusual, yaml.YAMLError):
        pass  # PyYAML builds what the events reader leaves, and says where a defect is
    return _pyyaml(lambda: yaml.load(text, Loader=loader))


def read_plain_all(text: str) -> list[Any]:
    """Plain data of every document, for reading manifests and kustomizations that are never
    written back: :func:`read_manifests_all`, by whose rules the API server, kustomize and the
    sync engines read them (an unquoted date is its text)."""
    return read_manifests_all(text)


def read_manifests_all(text: str) -> list[Any]:
    """Kubernetes objects (rendered, or a sync entry point) as plain data, with an unquoted
    date or time kept as the text it is: the API server and kubeconform (sigs.k8s.io/yaml) read
    it as a string, and JSON has no date. Built from libyaml's events when the text is as plain
    as kustomize writes it (:mod:`rlgen.tools.yaml_events`). A defect, or what :func:`_strict`
    refuses but a date, raises ``ValueError``."""
    return _read_all(text, _strict(_manifests_loader()))


def _read_all(text: str, loader) -> list[Any]:
    """Every document of ``text`` that is not empty, as :func:`_read_one` reads one."""
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    from rlgen.tools import yaml_events

    try:
        return yaml_events.load_all(text, loader)
    except (yaml_events.Unusual, yaml.YAMLError):
        pass  # PyYAML builds what the events reader leaves, and says where a defect is
    return _pyyaml(lambda: [d for d in yaml.load_all(text, Loader=loader) if d is not None])


@lru_cache(maxsize=1)
def _manifests_loader():
    class Loader(_c_loader()):
        yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in _c_loader().yaml_implicit_resolvers.items()
        }

    return Loader


def read_plain(text: str) -> Any:
    """The first document of ``text`` as plain data (``None`` when empty); see :func:`read_plain_all`."""
    docs = read_plain_all(text)
    return docs[0] if docs else None


def read_yaml11_all(text: str) -> list[Any]:
    """Every document read by YAML 1.1 rules, like the API server's go-yaml v2 and kubeconform's
    CRD converter (an unquoted ``on`` in an enum is a boolean). A defect raises ``ValueError``."""
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    class Loader(_c_loader()):
        """YAML 1.1 reads a bare ``=`` as a "value" tag that safe loaders cannot build; like
        kubeconform's converter (PyYAML issue 89), read it as the string."""

    Loader.add_constructor("tag:yaml.org,2002:value", yaml.SafeLoader.construct_yaml_str)
    return _pyyaml(lambda: list(yaml.load_all(text, Loader=Loader)))


def _pyyaml(read):
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    try:
        return read()
    except yaml.MarkedYAMLError as exc:
        # "line 3, column 1: <problem>": the text's own name ("<unicode string>") says nothing.
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(exc.problem or exc.context).split())
        raise ValueError(f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem) from None
    except yaml.YAMLError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


def _c_loader():
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=1)
def _core_loader():
    class Loader(_c_loader()):
        yaml_implicit_resolvers: dict = {}

    for tag, (pattern, first) in core_schema().items():
        Loader.add_implicit_resolver(tag, pattern, first)
    Loader.add_constructor("tag:yaml.org,2002:int", _core_int)
    Loader.add_constructor("tag:yaml.org,2002:bool", lambda loader, node: node.value.lower() == "true")
    return Loader


#: YAML types JSON has no value for, which kustomize, the API server, Flux and Hydra therefore
#: read otherwise than a reviewer does, or refuse: bytes, sets, ordered maps, pairs, dates.
_NOT_JSON = {
    **{tag: f"the YAML tag !!{tag} is not plain data (JSON has no such value): remove it"
       for tag in ("binary", "set", "omap", "pairs")},
    "timestamp": "an unquoted date or time is not plain data (JSON has no such value): quote it to keep it a string",
}


@lru_cache(maxsize=None)
def _strict(base):
    """The one strict variant of a libyaml loader, for every reader of a repository's YAML:
    ``base``'s types and rules, but a key given twice in a mapping (kustomize refuses it; libyaml
    keeps the last) and a value of :data:`_NOT_JSON` are errors naming their line. A date that
    ``base`` reads as text (:func:`read_manifests_all`) stays text."""
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    class Loader(base):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen = set()
                for key_node, _ in node.value:
                    if not isinstance(key_node, yaml.ScalarNode):
                        continue  # a mapping or list as a key: the constructor below refuses it
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key_node.value!r}",
                                                                key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    def refuse(problem: str):
        def construct(loader, node):
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)
        return construct

    for tag, problem in _NOT_JSON.items():
        Loader.add_constructor(f"tag:yaml.org,2002:{tag}", refuse(problem))
    return Loader


def _core_int(loader, node) -> int:
    # YAML 1.2: 0o for octal; a leading zero alone is decimal (PyYAML's 1.1 reads 017 as 15).
    value = node.value.replace("_", "")
    sign, digits = (-1, value[1:]) if value[:1] == "-" else (1, value.lstrip("+"))
    base = {"0b": 2, "0o": 8, "0x": 16}.get(digits[:2].lower())
    return sign * (int(digits[2:], base) if base else int(digits, 10))


# -- writing

def dump(doc: Any, comment: str = "") -> str:
    """One document, with ``comment`` as ``#`` lines above it."""
    return dump_all([doc], [comment])


def dump_all(docs: Iterable[Any], comments: Iterable[str] = ()) -> str:
    docs = list(docs)
    comments = list(comments) + [""] * (len(docs) - len(list(comments)))
    parts = []
    for doc, comment in zip(docs, comments):
        if is_plain(doc):
            text = _dump_plain(doc)
        else:
            buf = io.StringIO()
            _yaml().dump(literal_strings(doc), buf)
            text = buf.getvalue()
        parts.append(header(comment) + text)
    return "---\n".join(parts)


def header(comment: str) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines()) if comment else ""


def plain(value: Any) -> Any:
    """A copy of round-trip data as builtins (dict, list, str, int, float, bool, None): its
    comments, quoting and flow styles left behind, so it is written as fresh data is."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    if value is None:
        return None
    raise TypeError(f"not plain data: {type(value).__name__}")


def literal_strings(value: Any) -> Any:
    """Multi-line strings become ``|`` blocks so scripts and configs stay readable, and
    strings a YAML 1.1 reader would take for booleans are quoted."""
    # Lazy: ruamel.yaml is 21 ms (median of 7); the plain readers use libyaml only.
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import LiteralScalarString, SingleQuotedScalarString

    if isinstance(value, dict):
        out = value if isinstance(value, CommentedMap) else CommentedMap()
        for k, v in list(value.items()):
            out[k] = literal_strings(v)
        return out
    if isinstance(value, list):
        out_seq = value if isinstance(value, CommentedSeq) else CommentedSeq()
        if out_seq is value:
            for i, v in enumerate(value):
                value[i] = literal_strings(v)
        else:
            out_seq.extend(literal_strings(v) for v in value)
        return out_seq
    if isinstance(value, str) and "\n" in value and not isinstance(value, LiteralScalarString):
        return LiteralScalarString(value)
    if isinstance(value, str) and type(value) is str and value.lower() in YAML11_BOOLEANS:
        return SingleQuotedScalarString(value)
    return value


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


def _dump_plain(doc: Any) -> str:
    """What ruamel writes for plain data with :func:`_yaml`'s settings: sequences indented under
    their key (``key:\\n  - a``); a string quoted where :func:`core_schema` reads another type
    (``'1e-06'``) or a YAML 1.1 reader a boolean (``'on'``); ``None`` an empty value; multi-line
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
