"""The table rlgen update moves keys by is what the two releases' config trees give."""
from __future__ import annotations

import importlib.util

from rlgen.verl import releases
from rlgen.verl.releases.moves import MOVES
from support.verl_config import CHECKOUT


def _script():
    spec = importlib.util.spec_from_file_location("make_verl_moves", CHECKOUT / "scripts" / "make_verl_moves.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_shipped_table_is_generated_from_the_key_lists():
    assert _script().module_text() == (CHECKOUT / "generator/rlgen/verl/releases/moves.py").read_text(), \
        "moves.py is stale: run scripts/make_verl_moves.py"


def test_every_move_lands_on_a_key_of_the_new_release_and_back():
    for (old, new), table in MOVES.items():
        before, after = releases.get(old).defaults, releases.get(new).defaults
        assert all(k in before and k not in after and v in after for k, v in table["renamed"].items())
        assert all(k in before and k not in after for k in table["removed"])
        assert set(table["renamed"]) | set(table["removed"]) == set(before) - set(after)
    # 0.9 moved the critic's FSDP settings out of its model section, and back is the inverse.
    assert MOVES[("0.7.1", "0.9.1")]["renamed"]["critic.model.fsdp_config.param_offload"] == "critic.fsdp.param_offload"
    assert MOVES[("0.9.1", "0.7.1")]["renamed"]["critic.fsdp.param_offload"] == "critic.model.fsdp_config.param_offload"
    assert "trainer.use_legacy_worker_impl" in MOVES[("0.7.1", "0.9.1")]["removed"]
