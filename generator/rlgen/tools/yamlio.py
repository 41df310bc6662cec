"""All YAML reading and writing of rlgen, by one set of rules: YAML 1.2 as ruamel.yaml reads
and writes it (:func:`~rlgen.tools.yaml_schema.core_schema`), whichever parser or emitter does
the work. This module is the one door; each job is a module of its own:

- Round trip (comments, key order and quoting kept): ruamel.yaml, for files a user edits (here).
- Plain data out: exactly what ruamel writes, several times faster (:mod:`rlgen.tools.yaml_writer`,
  which :func:`dump_all` picks for data no user file carried in).
- Plain data in: libyaml through PyYAML, strict alike for every reader
  (:mod:`rlgen.tools.yaml_plain`: :func:`read_checked12`, :func:`read_plain_all`, ...).
- Bounds on any text before it is parsed (:mod:`rlgen.tools.yaml_bounds`).

Files are read by :mod:`rlgen.tools.repo_files` (a regular file of the repository, bounded, UTF-8).

Errors: a defect in text is a ``ValueError`` with the problem and its line; :func:`read_file`,
the one reader of a file, turns it into an :class:`RlgenError` naming the file and the place.
"""
from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from rlgen.errors import RlgenError
from rlgen.tools.repo_files import read_text as read_repository_file
from rlgen.tools.yaml_bounds import bounded
from rlgen.tools.yaml_plain import (
    read_checked12,
    read_manifests_all,
    read_plain,
    read_plain12,
    read_plain_all,
    read_yaml11_all,
)
from rlgen.tools.yaml_schema import YAML11_BOOLEANS
from rlgen.tools.yaml_writer import dump_plain

__all__ = ["bounded", "dump", "dump_all", "header", "is_plain", "literal_strings", "load", "load_all", "parse_value",
           "plain", "read_checked12", "read_file", "read_manifests_all", "read_plain", "read_plain12", "read_plain_all",
           "read_text", "read_yaml11_all"]

if TYPE_CHECKING:
    from ruamel.yaml import YAML

# ruamel.yaml is imported where it is used: importing it costs more than most commands' own
# work before their first kustomize build, and reading plain data needs only libyaml.


def _yaml() -> YAML:
    # Lazy: ruamel.yaml is 21 ms (median of 7); the plain readers use libyaml only.
    from ruamel.yaml import YAML

    y = YAML()
    y.indent(mapping=2, sequence=4, offset=2)
    y.width = 4096  # never fold long strings: a folded entrypoint is hard to review
    y.preserve_quotes = True
    return y


# -- reading

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
    rules every reader of a repository's YAML shares (:func:`rlgen.tools.yaml_plain._strict`) are checked first, at
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
            text = dump_plain(doc)
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
