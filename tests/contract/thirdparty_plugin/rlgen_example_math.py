"""Dataset plugin shipped outside rlgen: MATH competition problems in the row format of
verl's own ``examples/data_preprocess/math_dataset.py``, scored by verl's MATH reward."""
from __future__ import annotations

from rlgen.plugin_api import DatasetFormat, Finding, PluginInfo, hookimpl

NAME = "example-math"
#: verl picks its MATH reward function from this data_source.
SOURCE = "DigitalLearningGmbH/MATH-lighteval"
INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}."


def last_boxed(solution: str) -> str:
    """The content of the last ``\\boxed{...}``, braces balanced."""
    start = solution.rfind("\\boxed{")
    if start < 0:
        raise ValueError("solution has no \\boxed{} answer")
    depth, begin = 0, start + len("\\boxed{")
    for pos in range(begin - 1, len(solution)):
        depth += {"{": 1, "}": -1}.get(solution[pos], 0)
        if depth == 0:
            return solution[begin:pos]
    raise ValueError("unbalanced \\boxed{")


def map_row(row: dict, split: str, index: int) -> dict:
    return {
        "data_source": SOURCE,
        "prompt": [{"role": "user", "content": f"{row['problem']} {INSTRUCTION}"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": last_boxed(row["solution"])},
        "extra_info": {"split": split, "index": index},
    }


@hookimpl
def rlgen_plugin():
    return PluginInfo(name=NAME, slot="dataset", summary="MATH competition problems (example third-party plugin)")


@hookimpl
def rlgen_dataset_format():
    return DatasetFormat(NAME, SOURCE, ("problem", "solution"), map_row, default_model="Qwen/Qwen2.5-3B-Instruct")


@hookimpl
def rlgen_trainer_config(ctx):
    # The rows name no agent loop; verl's default (single_turn_agent) would never call the
    # sandbox tool the repository deploys.
    return {"actor_rollout_ref": {"rollout": {"agent": {"default_agent_loop": "tool_agent"}}}}


@hookimpl
def rlgen_readme(ctx):
    return [
        "## Dataset: MATH (example-math plugin)\n"
        f"Rows of `{ctx.spec.dataset_source}` with the final `\\boxed{{}}` answer as ground truth, read by "
        f"the trainer from `{ctx.spec.dataset_dir()}`. The dataset Job's image must have the "
        "`rlgen-example-math` distribution installed beside rlgen."
    ]


#: Versions before 0.3 wrote this page as docs/math.md.
DOC = "docs/example-math.md"
OLD_DOC = "docs/math.md"


@hookimpl
def rlgen_files(ctx):
    return {DOC: "# MATH\n\nCompetition problems; the ground truth is the last \\boxed{} answer.\n"}


@hookimpl
def rlgen_migrate(ctx, from_version, to_version, files):
    # The page moved in 0.3: the team's edits of it move along instead of conflicting.
    major, minor = (int(part) for part in from_version.split(".")[:2])
    if (major, minor) < (0, 3) and OLD_DOC in files and DOC not in files:
        return {OLD_DOC: None, DOC: files[OLD_DOC]}
    return {}


#: MATH solutions reason at length before their \\boxed{} answer.
MIN_RESPONSE = 1024


@hookimpl
def rlgen_validate_rules(ctx, objects):
    # A response cut before its \\boxed{} answer scores 0 whatever the reasoning.
    found = []
    for o in objects:
        if o.kind == "RayJob" and o.trainer_config:
            length = (o.trainer_config.get("data") or {}).get("max_response_length", 0)
            if length < MIN_RESPONSE:
                found.append(Finding(o.source, o.label, f"data.max_response_length {length} cuts MATH solutions before "
                                                        "their boxed answer",
                                     fix=f"rlgen run set {o.source.split('/')[1]} data.max_response_length={MIN_RESPONSE}"))
    return found
