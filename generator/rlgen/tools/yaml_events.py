"""Plain data built straight from libyaml's parse events, for the rendered manifests rlgen
reads in bulk (``validate`` reads every object of every run).

PyYAML's C loader parses in C but builds each value in Python through its node graph, its
resolver and its constructors, a call or more per node. kustomize writes plain block YAML: no
anchor, no alias, no tag, keys that are strings. For such text the events alone say enough, and
the many scalars that repeat (the keys, the same images, names and numbers in every run) are
resolved once each, by the loader's own resolver and constructors. Anything else (an anchor,
an alias, a tag, a merge key, a collection as a key, a type past str/int/float/bool/null) is
:class:`Unusual`, and the caller reads the text with PyYAML instead: same rules, same result.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml

#: The types a plain scalar of a manifest resolves to here; any other tag is left to PyYAML.
_SIMPLE = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null"))
#: Parse events, bound once: the loop below compares classes, not isinstance() chains.
_SCALAR, _MAP_START, _MAP_END = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.MappingEndEvent
_SEQ_START, _SEQ_END, _ALIAS = yaml.SequenceStartEvent, yaml.SequenceEndEvent, yaml.AliasEvent
_DOC_START = yaml.DocumentStartEvent
_NO_KEY = object()


class Unusual(Exception):
    """The text holds something this reader leaves to PyYAML."""


def load_all(text: str, loader_class: type) -> list[Any]:
    """Every document of ``text`` that is not empty, as ``yaml.load_all(text, loader_class)``
    builds it (``loader_class``: a safe loader, whose resolver and constructors are used).
    Raises :class:`Unusual` for what only PyYAML builds, and ``yaml.YAMLError`` for a defect.
    A key given twice is :class:`Unusual` too: PyYAML keeps the last value, a checking loader
    refuses it, and either says so its own way."""
    return _load(text, loader_class, single=False)


def load(text: str, loader_class: type) -> Any:
    """The one document of ``text`` (``None`` when empty), as ``yaml.load(text, loader_class)``
    builds it; a second document is :class:`Unusual` (``yaml.load`` refuses it)."""
    docs = _load(text, loader_class, single=True)
    return docs[0] if docs else None


# long: one loop over libyaml's events, the hot path of every read; a call per event would slow it.
def _load(text: str, loader_class: type, single: bool) -> list[Any]:
    scalar = _scalars(loader_class)
    docs: list[Any] = []
    stack: list[tuple[Any, Any]] = []
    # The open collection (None between documents) and, in a mapping, the key read last.
    current: Any = None
    key: Any = _NO_KEY
    documents = 0
    for event in yaml.parse(text, Loader=loader_class):
        kind = event.__class__
        if kind is _SCALAR:
            if event.anchor is not None or event.tag not in (None, "!"):
                raise Unusual
            value = scalar(event.value) if event.implicit[0] else event.value
        elif kind is _MAP_START or kind is _SEQ_START:
            if event.anchor is not None or event.tag not in (None, "!"):
                raise Unusual
            stack.append((current, key))
            current, key = ({} if kind is _MAP_START else []), _NO_KEY
            continue
        elif kind is _MAP_END or kind is _SEQ_END:
            value = current
            current, key = stack.pop()
        elif kind is _ALIAS:
            raise Unusual
        else:  # the starts and ends of the stream and of each document
            if kind is _DOC_START:
                if single and documents:
                    raise Unusual
                documents += 1
            continue
        if current is None:
            if value is not None:
                docs.append(value)
        elif current.__class__ is list:
            current.append(value)
        elif key is _NO_KEY:
            if value.__class__ is dict or value.__class__ is list or value in current:
                raise Unusual  # a collection as a key (PyYAML refuses it with its place), or a key twice
            key = value
        else:
            current[key] = value
            key = _NO_KEY
    return docs


#: Past this many texts a table of resolved scalars starts again: a long-lived process (a test
#: run) reads many repositories, a command a few thousand distinct scalars.
_MAX_SCALARS = 100_000


@lru_cache(maxsize=None)
def _scalars(loader_class: type):
    """A function from a plain scalar's text to its value, each text resolved once per process
    (for each loader class: rendered manifests and kustomization files share most of them)."""
    loader = loader_class("")
    values: dict[str, Any] = {}

    def scalar(text: str) -> Any:
        try:
            return values[text]
        except KeyError:
            tag = loader.resolve(yaml.ScalarNode, text, (True, False))
            if tag not in _SIMPLE:
                raise Unusual from None  # a merge key, a timestamp, YAML 1.1's "=" value
            if len(values) >= _MAX_SCALARS:
                values.clear()
            value = values[text] = loader.yaml_constructors[tag](loader, yaml.ScalarNode(tag, text))
            return value

    return scalar
