"""``KEY=VALUE`` for verl's Hydra config: parse the value as YAML, and refuse a key the pinned
verl does not have (naming the closest one) or a value of another type than the default.

The keys come from the repository's release (:mod:`rlgen.verl.releases`), generated from that
release's config tree, so a user's laptop needs no verl to get the same answer as Hydra would
give in the cluster.
"""
from __future__ import annotations

import difflib
import json
import math
import re
from typing import Any, Iterable, Mapping

from rlgen.errors import RlgenError
from rlgen.tools import yamlio
from rlgen.verl import releases
from rlgen.verl.trainer_config import flatten

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def parse(assignment: str) -> tuple[str, Any]:
    """``"a.b=3e-6"`` -> ``("a.b", 3e-06)``: YAML 1.2 types, as a reviewer reads them."""
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not _KEY.fullmatch(key):
        raise RlgenError(f"expected KEY=VALUE with a dotted verl key, got '{assignment}'")
    try:
        value = yamlio.parse_value(raw)
    except ValueError as exc:
        raise RlgenError(f"{key}: '{raw}' is not a YAML value ({exc})") from None
    return key, value


def check(assignments: dict[str, Any], verl_version: str, in_use: Iterable[str] = ()) -> dict[str, Any]:
    """The flat ``{key: value}`` to write, after checking each key and value against verl.

    A mapping value stands for its keys (``optim={lr: 1e-6}`` is ``optim.lr=1e-6``).
    ``in_use``: keys the repository's trainer config sets, preferred when naming the closest key.
    """
    release = releases.get(verl_version)
    # A mapping says what the repository sets: the example a wrong type is shown against.
    current = dict(in_use) if isinstance(in_use, Mapping) else {}
    out: dict[str, Any] = {}
    for key, value in assignments.items():
        flat = flatten({key: value}) if isinstance(value, dict) and value else {key: value}
        for name, item in flat.items():
            _check_one(name, item, release, set(in_use), current)
            out[name] = item
    return out


def _check_one(key: str, value: Any, release: releases.Release, in_use: set[str], current: Mapping) -> None:
    defaults = release.defaults
    if key in defaults:
        if (problem := type_error(value, defaults[key], current.get(key)) or range_error(key, value)) is not None:
            raise RlgenError(f"{key}: {problem}")
        return
    if any(k.startswith(key + ".") for k in defaults):
        raise RlgenError(f"'{key}' is a section of verl's config: set one of its keys, e.g. "
                         f"'{min(k for k in defaults if k.startswith(key + '.'))}'")
    if problem := unknown_key_error(key, release, in_use):
        raise RlgenError(problem)


def unknown_key_error(key: str, release: releases.Release, in_use: Iterable[str] = ()) -> str | None:
    """Why verl's struct config would refuse ``key`` when the job starts (naming the closest
    key), or None when the release has it or it lies below an open mapping."""
    defaults = release.defaults
    if key in defaults:
        return None
    # An empty mapping in verl is open (engine_kwargs.vllm, override_config): any key below it.
    parts = key.split(".")
    if any(defaults.get(".".join(parts[:i])) == {} for i in range(1, len(parts))):
        return None
    return f"verl {release.version} has no config key '{key}' (closest: '{closest(key, defaults, set(in_use))}')"


#: Ranges verl's code needs of a number, by the last part of the key: a learning rate of 0 or a
#: negative length trains nothing or fails deep inside a Ray worker, long after the pull request.
_POSITIVE = ("lr",)
_AT_LEAST_ONE = ("total_epochs", "n", "tensor_model_parallel_size", "ppo_epochs")
#: Where 0 means "share the trainer's nodes" (a rollout's or reward model's nnodes), only the trainer's count.
_AT_LEAST_ONE_KEYS = ("trainer.nnodes", "trainer.n_gpus_per_node")
_UNIT_OPEN = ("gpu_memory_utilization",)


def range_error(key: str, value: Any) -> str | None:
    """Why verl cannot use the number ``value`` for ``key``: never a NaN or an infinity, and the
    range verl's code assumes for learning rates, epochs, sizes, lengths and memory fractions."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    leaf = key.rsplit(".", 1)[-1]
    if not math.isfinite(value):
        return f"{_show(value)} is not a finite number"
    if leaf in _POSITIVE and value <= 0:
        return f"{_show(value)}: a learning rate must be above 0"
    if leaf in _UNIT_OPEN and not 0 < value <= 1:
        return f"{_show(value)}: a fraction of GPU memory must be in (0, 1]"
    if (leaf in _AT_LEAST_ONE or key in _AT_LEAST_ONE_KEYS or leaf.endswith(("_length", "batch_size", "batch_size_per_gpu"))) and value < 1:
        return f"{_show(value)}: must be at least 1"
    if leaf.endswith(("_steps", "_freq", "_ratio", "temperature")) and value < 0 and value != -1:
        return f"{_show(value)}: must not be negative"
    return None


#: What other trainers call a key, by verl's own last part.
VERL_NAMES = {"learning_rate": "lr", "max_grad_norm": "clip_grad", "grad_clip": "clip_grad", "epochs": "total_epochs",
              "num_epochs": "total_epochs", "num_train_epochs": "total_epochs", "batch_size": "train_batch_size",
              "warmup_steps": "lr_warmup_steps", "nodes": "nnodes", "gpus_per_node": "n_gpus_per_node"}


def closest(key: str, known: Iterable[str], in_use: set[str]) -> str:
    """The known key most like ``key``, by its last part in verl's words (``learning_rate`` is
    verl's ``lr``): among keys with that last part first (``trainer.lr`` means an ``lr``, not
    ``trainer.logger``), the ones the repository already sets (a GRPO repository means the
    actor's ``optim.lr``, not the critic's); else the key of the same section whose last part is
    most like it; else the most like it of all."""
    known = list(known)
    parent, _, last = key.rpartition(".")
    last = VERL_NAMES.get(last, last)
    same_leaf = [k for k in known if k.rsplit(".", 1)[-1] == last]
    siblings = [k.rsplit(".", 1)[-1] for k in known if k.rpartition(".")[0] == parent]
    if not same_leaf and siblings:
        return f"{parent}.{difflib.get_close_matches(last, siblings, n=1, cutoff=0.0)[0]}".lstrip(".")
    candidates = [k for k in same_leaf if k in in_use] or same_leaf or known
    return difflib.get_close_matches(f"{parent}.{last}".lstrip("."), candidates, n=1, cutoff=0.0)[0]


def type_error(value: Any, default: Any, current: Any = None) -> str | None:
    """Why ``value`` cannot replace ``default``; ``None`` when it can or there is nothing to
    compare (a null on either side). ``current``: what the repository sets, the example shown."""
    if value is None or default is None:
        return None
    if isinstance(default, bool):
        ok, expected = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, expected = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, expected = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif isinstance(default, str):
        # verl's file keys (data.train_files) take one path or a list of paths.
        ok, expected = isinstance(value, str) or _list_of_str(value), "a string"
    elif isinstance(default, list):
        ok, expected = isinstance(value, list), "a list"
        if ok and (problem := _element_error(value, default)):
            return problem
    else:
        ok, expected = isinstance(value, dict), "a mapping"
    if ok:
        return None
    hint = " (quote it to pass a string)" if isinstance(default, str) and not isinstance(value, (list, dict)) else ""
    like = f"{_show(current)}, the repository's value" if current is not None else f"the default {_show(default)}"
    return f"expects {expected} like {like}, got {_show(value)}{hint}"


def _element_error(value: list, default: list) -> str | None:
    """Why an element of ``value`` cannot stand where the default's elements stand: verl reads
    ``trainer.logger`` as names and ``optim.betas`` as numbers, one type for the whole list (an
    empty default says nothing)."""
    kinds = {_kind(d) for d in default if d is not None}
    if len(kinds) != 1:
        return None
    sample = next(d for d in default if d is not None)
    for index, item in enumerate(value):
        if item is not None and not (isinstance(item, str) if isinstance(sample, str) else
                                     type_error(item, sample) is None):
            return (f"expects a list of {_kind(sample)} like the default {_show(default)}, "
                    f"got {_show(item)} at position {index + 1}")
    return None


def _kind(value: Any) -> str:
    for kind, name in ((bool, "true or false values"), (int, "numbers"), (float, "numbers"), (str, "strings"),
                       (list, "lists"), (dict, "mappings")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _list_of_str(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _show(value: Any) -> str:
    # JSON is also YAML: what the user would type back.
    return json.dumps(value)
