"""verl's Hydra trainer config: the shared base, plugin fragments, and one run's changes."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from rlgen import sources
from rlgen.errors import RlgenError
from rlgen.spec import Spec
from rlgen.tools import yamlio


def deep_merge(into: dict, fragment: dict) -> dict:
    """Merge ``fragment`` into ``into`` in place; nested mappings merge, anything else wins."""
    for key, value in fragment.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            deep_merge(into[key], value)
        else:
            into[key] = value
    return into


#: A tool entry's ``config`` key bounding its answer (rlgen_verl_tools.sandbox: output and marker
#: together), and the rollout key past which verl's tool_agent cuts any tool answer (characters).
OUTPUT_LIMIT = "max_output_chars"
RESPONSE_LIMIT = "max_tool_response_length"
RESPONSE_NOTE = ("verl cuts any longer tool answer (characters; its default: 256). Here: the longest\n"
                 "answer a tool of tool_config.yaml gives (config.max_output_chars). Tool answers\n"
                 "count toward data.max_response_length (tokens).")


def tool_response_length(tools: list[dict]) -> int | None:
    """The longest answer a tool declares (``config.max_output_chars``); None when none does."""
    limits = [limit for tool in tools if isinstance(limit := (tool.get("config") or {}).get(OUTPUT_LIMIT), int)
              and not isinstance(limit, bool)]
    return max(limits, default=None)


def base_trainer_config(spec: Spec, fragments: list[dict], tools: list[dict]) -> Any:
    """``base/training/trainer.yaml``: the project's base, then plugin fragments, then the
    values that the spec owns (paths and GPU counts shared with Kubernetes objects) and the
    tools decide."""
    config = sources.load("base/training/trainer.yaml")
    for fragment in fragments:
        deep_merge(config, fragment)
    owned: dict[str, Any] = {
        "data": {"train_files": spec.data_file("train"), "val_files": spec.data_file("test")},
        "actor_rollout_ref": {"model": {"path": spec.model_path}},
        "trainer": {
            "n_gpus_per_node": spec.gpus_per_node,
            "nnodes": spec.nnodes,
            "project_name": f"{spec.namespace}-{spec.dataset}",
        },
    }
    longest = tool_response_length(tools)
    if tools:
        multi_turn: dict[str, Any] = {"tool_config_path": spec.config_path(spec.tool_config_key)}
        if longest is not None:
            multi_turn[RESPONSE_LIMIT] = longest
        owned["actor_rollout_ref"]["rollout"] = {"multi_turn": multi_turn}
    config = deep_merge(config, owned)
    if longest is not None:
        # Lazy: ruamel's comments are 21 ms (median of 7), only for a commented config.
        from ruamel.yaml.comments import CommentedMap

        rollout = config["actor_rollout_ref"]["rollout"]
        if not isinstance(rollout["multi_turn"], CommentedMap):
            rollout["multi_turn"] = CommentedMap(rollout["multi_turn"])
        rollout["multi_turn"].yaml_set_comment_before_after_key(RESPONSE_LIMIT, before=RESPONSE_NOTE, indent=6)
    return config


def tool_config(tools: list[dict]) -> str:
    return yamlio.dump({"tools": tools}, "verl tool config (the format of the repository's verl release, rlgen.verl).")


def run_config(spec: Spec, run: str, checkpoints: str | None = None) -> Any:
    """``runs/<run>/run.yaml`` of a new run: the Hydra entry point and the run's own names;
    what the run changes is set on it afterwards. ``checkpoints``: its checkpoint root
    (:mod:`rlgen.run.checkpoints`), else the run's folder of the checkpoints volume."""
    head = yamlio.load(
        "# Hydra entry point of this run: the shared base, then this file's changes.\n"
        "hydra:\n"
        "  searchpath:\n"
        "    # Relative to the RayJob's working_dir, which holds verl's package in the training image.\n"
        "    - file://verl/trainer/config\n"
        "defaults:\n"
        f"  - {spec.trainer_config_key.removesuffix('.yaml')}\n"
        "  - _self_\n"
    )
    # Each RayJob of the run saves in a folder of its own below default_local_dir, named as
    # the RayJob (resume.py): a retry resumes from it, a new RayJob starts from step 0.
    run_owned = {"trainer": {"experiment_name": run, "default_local_dir": checkpoints or spec.checkpoint_dir(run),
                             "resume_mode": "auto"}}
    return deep_merge(head, run_owned)


def effective_config(data: Mapping[str, str]) -> dict:
    """The config a run's pod composes from its ConfigMap ``data``: the base trainer config,
    then the run's file on top (its ``_self_`` comes last in the Hydra defaults).

    Parts neither file changes are shared with a cached parse: read the result, never change it."""
    return _merged(_parsed_file(data, Spec.trainer_config_key), _parsed_file(data, Spec.run_config_key))


def _merged(base: dict, top: dict) -> dict:
    # Like deep_merge, but new dicts only along the keys ``top`` sets: every run of one base
    # shares the base's parse instead of a deep copy each.
    out = dict(base)
    for key, value in top.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _parsed_file(data: Mapping[str, str], key: str) -> dict:
    """The parsed data of file ``key`` of ``data``, an empty mapping when there is none."""
    text = data.get(key)
    return {} if text is None else _parsed(key, text)


# Room for every run of a large repository: validate's rules ask for each run's config in
# several passes, and a cache smaller than the runs would miss on every one of them.
@lru_cache(maxsize=2048)
def _parsed(key: str, text: str) -> dict:
    try:
        doc = yamlio.read_plain12(text)
    except ValueError as exc:
        raise RlgenError(f"the trainer ConfigMap's {key} is not valid YAML: {' '.join(str(exc).split())}") from None
    doc = {} if doc is None else doc
    if not isinstance(doc, dict):
        raise RlgenError(f"the trainer ConfigMap's {key} is not a mapping of verl keys")
    return doc


def flatten(config: dict, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``: how reviewers and ``rlgen run`` name keys."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, path + "."))
        else:
            out[path] = value
    return out
