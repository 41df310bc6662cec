"""Rendered manifests read from libyaml's events are the objects PyYAML's loader builds from
the same text, for anything kustomize or a user can put in a render; what the events reader
leaves (anchors, tags, merge keys) is read by PyYAML, and a defect is the same one line."""
from __future__ import annotations

import math
import random

import pytest
import yaml
from rlgen.tools import yaml_events, yaml_plain, yamlio

#: Scalars where YAML 1.1's resolver (the API server's) picks a type other than a string, or
#: almost does: kustomize writes them plain or quoted as its own rules say.
WORDS = ["on", "off", "yes", "No", "y", "true", "False", "null", "~", "", "0", "017", "0o17", "0x1F", "1_000",
         "12:30", "190:20:30", "1e-06", "3e-6", ".5", "+.5", "-.inf", ".NaN", "1.0", "2024-01-01",
         "2024-01-01T10:00:00Z", "=", "<<", "a b", "x:y", "- x", "#x", "'q'", "it's", "ünï", "multi\nline\n",
         "name", "apiVersion", "v1", "8Gi", "500m", "--lr=3e-6"]


def _documents(seed: int, count: int):
    rnd = random.Random(seed)

    def scalar():
        return rnd.choice(WORDS) if rnd.random() < 0.7 else rnd.choice(
            [None, 0, -3, 10**20, 1.5, 1e-06, float("inf"), float("nan"), True, False])

    def node(depth):
        if depth > 4 or rnd.random() < 0.3:
            return scalar()
        if rnd.random() < 0.6:
            return {rnd.choice(WORDS[:30] + [0, 1.5, True, None]): node(depth + 1) for _ in range(rnd.randint(0, 5))}
        return [node(depth + 1) for _ in range(rnd.randint(0, 5))]

    return [node(0) for _ in range(count)]


def _pyyaml(text: str):
    return [d for d in yaml.load_all(text, Loader=yaml_plain._manifests_loader()) if d is not None]


def _same(a, b) -> bool:
    """Equal, NaN included, and of the same types throughout (True is not 1 here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("style", ["block", "flow", "kustomize"])
def test_every_document_reads_as_pyyaml_reads_it(seed, style):
    docs = _documents(seed, 150)
    if style == "kustomize":
        # As kustomize writes: block style, lists not indented under their key, "---" between.
        text = "---\n".join(yaml.safe_dump(d, default_flow_style=False, allow_unicode=True) for d in docs)
    else:
        text = yaml.safe_dump_all(docs, default_flow_style=style == "flow", allow_unicode=True)
    fast = yaml_events.load_all(text, yaml_plain._manifests_loader())
    assert _same(fast, _pyyaml(text))
    assert _same(yamlio.read_manifests_all(text), _pyyaml(text))
    assert _same(yamlio.read_plain_all(text), _pyyaml(text))


def test_a_render_is_read_from_the_events():
    """The plain text kustomize writes takes the fast path: nothing in it is left to PyYAML."""
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    on: \"yes\"\ndata:\n"
            "  run.yaml: |\n    lr: 3e-6\n  when: 2024-01-01\n---\napiVersion: ray.io/v1\nkind: RayJob\n"
            "spec:\n  entrypoint: python3 -m verl.trainer.main_ppo\n  replicas: 2\n  suspend: false\n"
            "  ports:\n  - containerPort: 8265\n    name: dashboard\n")
    docs = yaml_events.load_all(text, yaml_plain._manifests_loader())
    assert docs == _pyyaml(text)
    assert docs[0]["data"]["when"] == "2024-01-01"  # a date stays the text the API server reads
    assert docs[0]["metadata"]["labels"] == {True: "yes"}
    assert docs[1]["spec"]["replicas"] == 2 and docs[1]["spec"]["suspend"] is False


@pytest.mark.parametrize("text, refused", [
    ("a: &x {b: 1}\nc: *x\n", None),                      # an anchor and an alias
    ("base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n", None),    # a merge key
    ("a: !!str 1\nb: !!float 2\n", None),                 # tags of JSON's types
    ("a: !!str 1\nb: !!binary aGk=\n", "line 2, column 4: the YAML tag !!binary is not plain data"),
    ("a: !!set {x, y}\n", "line 1, column 4: the YAML tag !!set is not plain data"),
    ("a: !!timestamp 2024-01-01\n", "line 1, column 4: an unquoted date or time is not plain data"),
    ("? [1, 2]\n: pair\n", "line 1, column 3: found unhashable key"),   # a list as a key
    ("a: 2024-01-01\n---\n- !custom x\n", "line 3, column 3: could not determine a constructor for the tag '!custom'"),
    ("a: 1\nb: 2\na: 3\n", "line 3, column 1: duplicate key 'a'"),
])
def test_what_the_events_reader_leaves_is_read_by_pyyaml(text, refused):
    """Read by PyYAML's loader, and by the strict rules every repository file is read by: no key
    twice (kustomize refuses it), no value JSON has not; a refusal says where."""
    with pytest.raises(yaml_events.Unusual):
        yaml_events.load_all(text, yaml_plain._manifests_loader())
    if refused is None:
        assert _same(yamlio.read_manifests_all(text), _pyyaml(text))
        return
    with pytest.raises(ValueError) as error:
        yamlio.read_manifests_all(text)
    assert str(error.value).startswith(refused), str(error.value)


@pytest.mark.parametrize("text", ["a: [1, 2\n", "a: 1\na: [\n", "a: b: c\n", "- a\nb: c\n", "a:\n\t- b\n"])
def test_a_defect_is_one_line_with_its_place(text):
    with pytest.raises(ValueError) as refused:
        yamlio.read_manifests_all(text)
    message = str(refused.value)
    assert "\n" not in message and "line" in message


def test_a_date_is_text_in_a_manifest_and_refused_in_a_config():
    """The API server and kustomize read an unquoted date as its text; Hydra would build a date
    verl cannot take, so the configs' reader refuses it, saying where."""
    assert yamlio.read_plain_all("when: 2024-01-01\nn: 1\n") == [{"when": "2024-01-01", "n": 1}]
    assert yamlio.read_manifests_all("when: 2024-01-01\nn: 1\n") == [{"when": "2024-01-01", "n": 1}]
    for read in (yamlio.read_plain12, yamlio.read_checked12):
        with pytest.raises(ValueError, match="line 2, column 7: an unquoted date or time"):
            read("n: 1\nwhen: 2024-01-01\n")
