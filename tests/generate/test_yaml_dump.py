"""Generated files are dumped with PyYAML's emitter; they must be the bytes ruamel.yaml
writes with rlgen's settings, which earlier repositories were made with."""
from __future__ import annotations

import copy
import io

import pytest
from rlgen.tools import yamlio

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
