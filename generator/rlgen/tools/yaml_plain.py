"""Plain data read from YAML text at libyaml's speed (through PyYAML), many times faster than a
round-trip parser: by YAML 1.2 (:func:`read_plain12`, :func:`read_checked12`, by the table of
:mod:`rlgen.tools.yaml_schema`) or, for rendered manifests and what the API server reads, by YAML
1.1 (:func:`read_plain_all`, :func:`read_yaml11_all`).

Every reader is strict alike (:func:`_strict`): a key given twice, or a value JSON has not
(``!!binary``, ``!!set``, a date where a config is read), is a defect with its line, as
kustomize, the sync engines and Hydra refuse or misread them. A defect raises ``ValueError``
with the problem and its line.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from rlgen.tools.yaml_bounds import bounded
from rlgen.tools.yaml_schema import c_loader, core_schema


def read_checked12(text: str) -> Any:
    """The first document of ``text`` as :func:`read_plain12` reads it, refusing what the
    round-trip reader of :func:`rlgen.tools.yamlio.read_file` refuses and libyaml lets through (a key given twice),
    for checking many hand-editable files at libyaml speed. A defect raises ``ValueError``;
    :func:`rlgen.tools.yamlio.read_file` then says where it is."""
    bounded(text)
    return _read_one(text, _strict(_core_loader()))


def read_plain12(text: str) -> Any:
    """The first document of ``text`` as plain data by the rules of :func:`rlgen.tools.yamlio.parse_value`, at
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
    sync engines read them (an unquoted date is its text). Text with an anchor and an alias is
    bounded first: PyYAML shares an alias's node, so the read is quick, but every reader that
    walks the data (a kustomization's paths, a diff) would visit each expansion."""
    if "&" in text and "*" in text:  # no alias without an anchor; kustomize writes neither
        bounded(text)
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
    class Loader(c_loader()):
        yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in c_loader().yaml_implicit_resolvers.items()
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

    class Loader(c_loader()):
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


@lru_cache(maxsize=1)
def _core_loader():
    class Loader(c_loader()):
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
