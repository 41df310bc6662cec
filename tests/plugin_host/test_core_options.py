"""Core options (``--set rlgen.NAME=...``): one named like a Spec field is that field, so a new
core option is its Option and the field plugins read, nothing else to wire."""
from __future__ import annotations

import dataclasses

from rlgen.plugin_host.discovery import discover
from rlgen.plugin_host.selection import CORE, select
from rlgen.spec import Spec
from support.repos import CORE_ANSWERS

#: Core options that are not a Spec field of the same name, and why.
NOT_FIELDS = {
    "run": "names the first run; runs are folders, not shared names",
    "install": "read by the generator as Spec.rlgen_install (Spec.install would read as an action)",
    "verl": "read by the generator as Spec.verl_version (the answer names the project, the field its release)",
}


def test_every_core_option_is_a_spec_field_or_said_otherwise():
    fields = {f.name for f in dataclasses.fields(Spec)}
    assert sorted(o.name for o in CORE.options if o.name not in fields) == sorted(NOT_FIELDS)


def test_a_core_value_reaches_the_spec():
    answers = {**CORE_ANSWERS,
               "rlgen": {**CORE_ANSWERS["rlgen"], "queue": "team-a", "gang_scheduling": "volcano", "nnodes": "2"}}
    selection = select(discover(), [], answers, None)
    spec = selection.spec(selection.hooks())
    assert (spec.queue, spec.gang_scheduling, spec.nnodes) == ("team-a", "volcano", 2)
