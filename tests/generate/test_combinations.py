"""All 32 selections (2 sandbox x 2 storage x 2 dataset x 2 rollout x 2 sync) generate,
build with kustomize, validate strictly and compose in verl's config tree. The tracking slot
is paired rather than multiplied: mlflow in the 16 selections whose choices add up to an odd
number, so it meets each plugin of every other slot 8 times, and the matrix stays at 32."""
from __future__ import annotations

import pytest
from rlgen.tools.yamlio import load
from rlgen.rules import Rendered, check
from support.combinations import COMBOS, args_for
from support.repos import all_objects, build
from support.verl_config import (
    compose_run,
    mounted_configs,
    unknown_keys,
    verl_defaults,
)


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: "+".join(p[0] for p in c))
def test_combination(generate, schemas, tmp_path, combo):
    repo = generate(*args_for(combo))
    objects = all_objects(repo)
    assert [p for o in objects for p in schemas(o)] == []
    external = load((repo / "rlgen.yaml").read_text())["external"]["secrets"]
    assert check([Rendered("repo", o) for o in objects], external) == []
    assert sum(o["kind"] == "RayJob" for o in build(repo / "overlays/production/runs")) == 1
    configs, overrides = mounted_configs(repo, "baseline", tmp_path)
    cfg = compose_run(configs, overrides)
    reference = verl_defaults()
    for name in ("trainer.yaml", "run.yaml"):
        assert unknown_keys(load((configs / name).read_text()), reference) == [], name
    assert cfg.actor_rollout_ref.rollout.name == combo[3][0]
    assert ("mlflow" in cfg.trainer.logger) == (combo[5][0] == "mlflow")
