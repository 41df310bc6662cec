"""YAML in and out with ruamel.yaml: comments kept, key order kept, output stable."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Iterable

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString, SingleQuotedScalarString

from rlgen.errors import RlgenError
from rlgen.tools import yamldump

#: Plain in YAML 1.2 but booleans to YAML 1.1 readers (kubectl's and Go's older parsers).
_YAML11_BOOLEANS = {"y", "n", "yes", "no", "on", "off"}
_YAML11_BOOLEANS_SET = frozenset(_YAML11_BOOLEANS)


def _yaml() -> YAML:
    y = YAML()
    y.indent(mapping=2, sequence=4, offset=2)
    y.width = 4096  # never fold long strings: a folded entrypoint is hard to review
    y.preserve_quotes = True
    return y


def load(text: str) -> Any:
    return _yaml().load(text)


def read_file(path: Path) -> Any:
    """A YAML file a user may have edited, parsed with its comments; any defect (unreadable,
    not UTF-8, not YAML, a duplicate key) is one line naming the file and the place."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RlgenError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise RlgenError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise RlgenError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise RlgenError(f"{path}: {where}{' '.join(str(exc.problem or exc.context).split())}") from None
    except YAMLError as exc:
        raise RlgenError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None


def load_all(text: str) -> list[Any]:
    return [d for d in _yaml().load_all(text) if d is not None]


def read_plain_all(text: str) -> list[Any]:
    """Plain data of every document, for reading rendered manifests that are never written
    back: libyaml through PyYAML is many times faster than a round-trip parser. A defect
    raises ``ValueError``."""
    import yaml

    try:
        return [d for d in yaml.load_all(text, Loader=_c_loader()) if d is not None]
    except yaml.YAMLError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


def read_manifests_all(text: str) -> list[Any]:
    """Rendered Kubernetes objects as :func:`read_plain_all` reads them, but with an unquoted
    date or time kept as the text it is: the API server and kubeconform (sigs.k8s.io/yaml) read
    it as a string, and JSON has no date. A defect raises ``ValueError``."""
    import yaml

    class Loader(_c_loader()):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in _c_loader().yaml_implicit_resolvers.items()
    }
    try:
        return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]
    except yaml.YAMLError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


def read_plain(text: str) -> Any:
    """The first document of ``text`` as plain data (``None`` when empty); see :func:`read_plain_all`."""
    docs = read_plain_all(text)
    return docs[0] if docs else None


def read_yaml11_all(text: str) -> list[Any]:
    """Every document read by YAML 1.1 rules, like the API server's go-yaml v2 and kubeconform's
    CRD converter (an unquoted ``on`` in an enum is a boolean). A defect raises ``ValueError``."""
    import yaml

    class Loader(_c_loader()):
        """YAML 1.1 reads a bare ``=`` as a "value" tag that safe loaders cannot build; like
        kubeconform's converter (PyYAML issue 89), read it as the string."""

    Loader.add_constructor("tag:yaml.org,2002:value", yaml.SafeLoader.construct_yaml_str)
    try:
        return list(yaml.load_all(text, Loader=Loader))
    except yaml.YAMLError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


def read_plain12(text: str) -> Any:
    """The first document of ``text`` as plain data by YAML 1.2 rules, like :func:`parse_value`
    (``3e-6`` is a number, ``yes`` a string), at libyaml speed: for the trainer configs
    ``diff`` and ``validate`` read for every run. A defect raises ``ValueError``."""
    import yaml

    try:
        return yaml.load(text, Loader=_core_schema_loader())
    except yaml.YAMLError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


#: The YAML 1.2 core schema (yaml.org/spec/1.2.2 section 10.3.2): tag -> (pattern, first characters).
_CORE_SCHEMA = {
    "tag:yaml.org,2002:bool": (r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    "tag:yaml.org,2002:null": (r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    # Underscores and 0b as ruamel.yaml's 1.2 resolver allows them.
    "tag:yaml.org,2002:int": (r"^(?:[-+]?0b[01_]+|[-+]?0o[0-7_]+|[-+]?[0-9][0-9_]*|[-+]?0x[0-9a-fA-F_]+)$",
                              list("-+0123456789")),
    "tag:yaml.org,2002:float": (
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
        r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+0123456789.")),
}


def _core_schema_loader():
    import re

    import yaml

    global _CORE_LOADER
    if _CORE_LOADER is None:
        class Loader(_c_loader()):
            yaml_implicit_resolvers: dict = {}

        for tag, (pattern, first) in _CORE_SCHEMA.items():
            Loader.add_implicit_resolver(tag, re.compile(pattern), first)
        Loader.add_constructor("tag:yaml.org,2002:int", _core_int)
        Loader.add_constructor("tag:yaml.org,2002:bool", lambda loader, node: node.value.lower() == "true")
        _CORE_LOADER = Loader
    return _CORE_LOADER


_CORE_LOADER = None


def _core_int(loader, node) -> int:
    value = node.value.replace("_", "")
    sign, digits = (-1, value[1:]) if value[:1] == "-" else (1, value.lstrip("+"))
    base = {"0b": 2, "0o": 8, "0x": 16}.get(digits[:2])
    return sign * (int(digits[2:], base) if base else int(digits, 10))


def _c_loader():
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_value(raw: str) -> Any:
    """A value a user typed (``--set k=3e-6``) or a config file they wrote, as plain data by
    YAML 1.2 rules, as Hydra and a reviewer read it (``3e-6`` is a number, ``yes`` a string).
    A defect raises ``ValueError`` with the problem."""
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe").load(raw)
    except YAMLError as exc:
        raise ValueError(getattr(exc, "problem", None) or type(exc).__name__) from None


def literal_strings(value: Any) -> Any:
    """Multi-line strings become ``|`` blocks so scripts and configs stay readable, and
    strings a YAML 1.1 reader would take for booleans are quoted."""
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
    if isinstance(value, str) and type(value) is str and value.lower() in _YAML11_BOOLEANS:
        return SingleQuotedScalarString(value)
    return value


def dump(doc: Any, comment: str = "") -> str:
    """One document, with ``comment`` as ``#`` lines above it."""
    return dump_all([doc], [comment])


def dump_all(docs: Iterable[Any], comments: Iterable[str] = ()) -> str:
    docs = list(docs)
    comments = list(comments) + [""] * (len(docs) - len(list(comments)))
    parts = []
    for doc, comment in zip(docs, comments):
        if yamldump.is_plain(doc):
            text = yamldump.dump(doc, _YAML11_BOOLEANS_SET)
        else:
            buf = io.StringIO()
            _yaml().dump(literal_strings(doc), buf)
            text = buf.getvalue()
        parts.append(header(comment) + text)
    return "---\n".join(parts)


def header(comment: str) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines()) if comment else ""
