"""rlgen's YAML, one set of rules: generated files dumped with PyYAML's emitter are the bytes
ruamel.yaml writes with rlgen's settings, and every scalar reads back as it was written by both
emitters, through every YAML 1.2 reader."""
from __future__ import annotations

import copy
import datetime
import io
import random
from pathlib import Path

import pytest
from rlgen.errors import RlgenError
from rlgen.tools import yaml_writer, yamlio

VALUES = [None, 0, -3, 3e-06, 1e-06, 0.5, 1e20, float("inf"), True, False, "", "plain text", "1e-06", "3e-6",
          "0o17", "0x1F", "1_000", "12:30", ".5", "~", "null", "true", "True", "on", "Off", "yes", "y", "N", "=",
          "<<", "- x", "@x", "*", "#x", "a #b", "a: b", "{a}", "'q'", '"d"', "it's", "ünïcödé", " lead", "tail ",
          "multi\nline\n", "multi\nline", "x\n  indented\n", "[1, 2]", {}, [], [1, "x", {"k": "v"}],
          {"nested": {"list": [{"name": "a", "args": ["--x=1", "on"]}]}}, {"on": 1, "y": 2, "0": 3}]


def ruamel(doc) -> str:
    buf = io.StringIO()
    yamlio._yaml().dump(yamlio.literal_strings(copy.deepcopy(doc)), buf)
    return buf.getvalue()


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_plain_data_is_written_as_ruamel_writes_it(value):
    doc = {"key": value, "list": [value], "lists": [[value]], "nones": [None, value]}
    assert yamlio.dump(doc) == ruamel(doc)


def test_a_shared_object_is_written_twice_not_as_an_anchor():
    shared = {"name": "x"}
    assert "&" not in yamlio.dump({"a": shared, "b": shared})


#: Every scalar above, and the ones where YAML readers part ways: octal and binary forms, a
#: leading zero, underscores, signs, exponents without a sign, dates, YAML 1.1 sexagesimals.
SCALARS = [v for v in VALUES if not isinstance(v, (dict, list))] + [
    ".5e5", "+.5", ".5e+5", "-.5", "1.", "1e5", "+1", "-0", "017", "0777", "0b101", "0o8", "_1", "1__0",
    "0x_1F", "2024-01-01", "2024-01-01T10:00:00Z", "1:30", "190:20:30", ".inf", "-.Inf", ".NaN", "NULL",
    "FALSE", "Yes", "!", "&a", "%x", "`x", "|", ">", "?", "-", ":", ",", "[", "]", "{", "}",
    17, -0, 10**20, 1.5, -2.5e-10, 1e16, float("-inf"), 0.1 + 0.2,
]


def _same(a, b) -> bool:
    # ruamel's round trip gives a date its own subclass (it keeps the written form).
    alike = type(a) is type(b) or isinstance(a, datetime.date) and isinstance(b, datetime.date)
    return alike and a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


def _emitters(doc):
    """The two ways rlgen writes a document: plain data (PyYAML's emitter) and ruamel.yaml (a
    document that carries a comment or style goes there)."""
    return {"plain": yamlio.dump(doc), "ruamel": ruamel(doc)}


def _readers():
    return {"load": lambda t: _plain(yamlio.load(t)), "parse_value": yamlio.parse_value,
            "read_plain12": yamlio.read_plain12}


def _plain(value):
    # ruamel's round-trip types (ScalarFloat, CommentedMap...) as the builtins they stand for.
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_every_scalar_reads_back_as_written(value):
    doc = {"key": value, "list": [value]}
    for emitter, text in _emitters(doc).items():
        for reader, read in _readers().items():
            back = read(text)
            assert _same(back["key"], value) and _same(back["list"][0], value), (emitter, reader, text, back)


@pytest.mark.parametrize("text", [s for s in SCALARS if isinstance(s, str) and s not in ("=", "<<", "*", "!", "&a",
                                                                                    "%x", "`x", "|", ">", "?",
                                                                                    "- x", "[", "]", "{", "}", "a: b",
                                                                                    "@x", "#x", ":", ",", "-")])
def test_every_reader_types_a_plain_scalar_alike(text):
    """Unquoted, as a user writes it: the fast reader and ruamel's give the same type and value,
    or, for a date (no JSON value), both refuse it."""
    doc = f"key: {text}" if "\n" not in text else "key: |\n" + "".join(f"  {line}\n" for line in text.splitlines())
    if isinstance(yamlio.parse_value(doc)["key"], (datetime.date, datetime.datetime)):
        with pytest.raises(ValueError, match="date"):
            yamlio.read_plain12(doc)
        with pytest.raises(RlgenError, match="date"):
            yamlio.read_text(Path("run.yaml"), doc)
        return
    assert _same(yamlio.read_plain12(doc)["key"], yamlio.parse_value(doc)["key"])
    assert _same(yamlio.read_plain12(doc)["key"], _plain(yamlio.load(doc)["key"]))


#: Characters and runs where PyYAML's choice of style changes: indicators, document markers,
#: quotes, line breaks YAML knows beyond \n, a tab, non-ASCII text, words other types own.
PIECES = list("ab09 -?:#,[]{}&*!|>'\"%@`.~=+<$()/^_;\\\n\tü\u2028\x85😀") + [
    "---", "...", " #", ": ", "on", "yes", "1e-06", "0x1F", "null", "~", "true", "2024-01-01", "  ", "\n\n"]


def _documents(seed: int, count: int):
    rnd = random.Random(seed)

    def text():
        return "".join(rnd.choice(PIECES) for _ in range(rnd.choice([0, 1, 2, 3, 5, 8, 20])))

    def node(depth):
        if depth > 3 or rnd.random() < 0.3:
            return text() if rnd.random() < 0.6 else rnd.choice(
                [None, 0, -3, 10**20, 1.5, 1e-06, 0.1 + 0.2, float("inf"), float("nan"), True, {}, []])
        if rnd.random() < 0.5:
            return {text() if rnd.random() < 0.5 else rnd.choice(["name", "on", "1", "a b", "x:y", ""]): node(depth + 1)
                    for _ in range(rnd.randint(0, 4))}
        return [v for v in (node(depth + 1) for _ in range(rnd.randint(0, 4))) if type(v) is not list and v is not None]

    docs = [node(0) for _ in range(count)]
    return [d for d in docs if yamlio.is_plain(d)]


@pytest.mark.parametrize("seed", range(4))
def test_plain_data_is_written_as_pyyaml_writes_it(seed):
    """rlgen's own block writer (the fast path of :func:`yamlio.dump`) and PyYAML's emitter,
    set up as the tests above prove ruamel writes, give the same bytes for any plain data."""
    for doc in _documents(seed, 2500):
        assert yamlio.dump(doc) == yaml_writer._pyyaml_dump(doc), doc


def test_the_fast_path_writes_plain_only_what_pyyaml_would():
    rnd = random.Random(7)
    for _ in range(50000):
        text = "".join(rnd.choice(PIECES) for _ in range(rnd.choice([1, 2, 3, 5, 8])))
        if yaml_writer._PLAIN.fullmatch(text):
            analysis = yaml_writer._analysis(text)
            assert analysis.allow_block_plain and not analysis.multiline, repr(text)
