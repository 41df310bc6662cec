"""Core options (``--set rlgen.NAME=...``): one named like a Spec field is that field, so a new
core option is its Option and the field plugins read, nothing else to wire; ``rlgen plugins``
lists them as it lists the plugins' options."""
from __future__ import annotations

import dataclasses
import json
import os

from rlgen.plugin_host.discovery import discover
from rlgen.plugin_host.selection import CORE, select
from rlgen.spec import Spec
from support.repos import CORE_ANSWERS, ok, run_rlgen

#: Core options that are not a Spec field of the same name, and why.
NOT_FIELDS = {
    "run": "names the first run; runs are folders, not shared names",
    "install": "read by the generator as Spec.rlgen_install (Spec.install would read as an action)",
    "verl": "read by the generator as Spec.verl_version (the answer names the project, the field its release)",
    "researchers_team": "read from the answers by the one file that names it, .github/CODEOWNERS",
    "platform_team": "read from the answers by the one file that names it, .github/CODEOWNERS",
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


def test_rlgen_plugins_lists_rlgens_own_options_with_type_allowed_values_and_default():
    """`rlgen plugins -o json`: every core option, as the plugins' options are listed."""
    core = {o["name"]: o for o in json.loads(ok(run_rlgen("plugins", "-o", "json")))["core_options"]}
    assert list(core) == [o.name for o in CORE.options]
    assert all(o["help"] and o["type"] for o in core.values())
    assert core["nnodes"] | {"help": ""} == {"name": "nnodes", "type": "integer", "allowed": "1 to 100000", "default": 1,
                                            "required": False, "required_when": None, "help": ""}
    assert core["network"]["allowed"] == "one of tcp, rdma, erdma" and core["network"]["default"] == "tcp"
    assert core["registry"]["required"] is True and core["registry"]["default"] is None
    assert core["rdma_host_network"]["type"] == "true or false" and core["plugin_packages"]["type"] == "list"
    assert core["plugin_packages"]["default"] == []


def test_rlgen_plugins_table_starts_with_rlgens_own_options():
    out = ok(run_rlgen("plugins", "-o", "table", env={**os.environ, "COLUMNS": "200"}))
    own = out[:out.index("\nsandbox\n")]
    assert own.startswith("rlgen: Repository-wide settings")
    for line in ("--set rlgen.gpus_per_node=8  (integer, 1 to 1024)", "--set rlgen.registry=REQUIRED  (text)",
                 "--set rlgen.model_source=''  (text, one of huggingface, modelscope)",
                 "--set rlgen.dataset_source=''  (text)"):
        assert line in own, own
    # A condition that tests the answer is said by its name, not as a Python object.
    assert "--set rlgen.upstream_mirror=REQUIRED when region in mainland china  (text)" in own, own
    assert "<function" not in out
