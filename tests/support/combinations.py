"""The 32 plugin selections every test of "all combinations" walks (tests/generate/test_combinations.py
says how they are chosen)."""
from __future__ import annotations

import itertools

SLOTS = [
    [("opensource-sandbox",), ("marketplace-sandbox", "marketplace-sandbox.domain=sandbox.example.com")],
    [("ak-storage",), ("rrsa-storage", "rrsa-storage.role_name=rl-oss-reader")],
    [("gsm8k",), ("geometry3k",)],
    [("vllm",), ("sglang",)],
    [("flux",), ("argo",)],
]


def args_for(combo) -> tuple[str, ...]:
    args = []
    for plugin, *sets in combo:
        args += ["--plugin", plugin]
        for item in sets:
            args += ["--set", item]
    return tuple(args)


TRACKING = [("no-tracking",), ("mlflow", "mlflow.tracking_uri=http://mlflow.mlops.svc.cluster.local:5000")]


def with_tracking(choice: tuple[int, ...]):
    return tuple(SLOTS[slot][i] for slot, i in enumerate(choice)) + (TRACKING[sum(choice) % 2],)


COMBOS = [with_tracking(choice) for choice in itertools.product(*(range(len(s)) for s in SLOTS))]
