"""Dataset plugin: Geometry3K diagram problems in verl's vision-language tool-agent format.

The rows follow verl's ``examples/data_preprocess/geo3k_multiturn_w_tool.py`` (a system
prompt that asks for tool use, the problem and instruction as the user turn) and name
verl's ``tool_agent`` loop, so the sandbox tool the repository deploys is actually called.
The ``calc_geo3k_reward`` tool is rlgen's (``rlgen_verl_tools.rewards``): verl 0.9 removed its
own, and in verl 0.7.1 ``Geo3kTool.create`` reads ``ground_truth`` only as a keyword, while
``tool_agent`` passes it inside ``create_kwargs``, so it graded every answer against ``None``."""
from __future__ import annotations

import re

from rlgen.plugin_api import DatasetFormat, PluginInfo, Problem, hookimpl, row_text, verl_release

NAME = "geometry3k"
SOURCE = "hiyouga/geometry3k"
DEFAULT_MODEL = "Qwen/Qwen2.5-VL-3B-Instruct"
IMAGE = "<image>"
#: verl's agent loop that calls tools; rows without it run single_turn_agent, which never does.
AGENT = "tool_agent"
REWARD_TOOL = "calc_geo3k_reward"

INSTRUCTION = (
    "You FIRST think about the reasoning process as an internal monologue and then provide the final answer. "
    "The reasoning process MUST BE enclosed within <think> </think> tags. "
    r"The final answer MUST BE put in \boxed{}."
)

SYSTEM_PROMPT = (
    "You are a math expert. You are given a question and you need to solve it step by step. "
    "Reasoning step by step before any tool call. "
    "You should use the tools you are given to check your calculations before you generate the final answer, "
    "and refine your answer if necessary."
)

_VISION_MODEL = re.compile(r"vl|vision", re.IGNORECASE)


def map_row(row: dict, split: str, index: int) -> dict:
    problem, images = row_text(row, "problem"), list(row["images"] or [])
    answer = row_text(row, "answer", numbers=True).strip()
    if not all(isinstance(image, dict) and image.get("bytes") for image in images):
        raise ValueError("an image has no bytes")
    # verl puts image i where the i-th placeholder stands; a count that differs breaks the
    # processor's token alignment for the whole batch.
    if problem.count(IMAGE) != len(images):
        raise ValueError("the number of <image> placeholders differs from the number of images")
    return {
        "data_source": SOURCE,
        "agent_name": AGENT,
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"{problem} {INSTRUCTION}"},
        ],
        "images": [{"bytes": image["bytes"], "path": image.get("path")} for image in images],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {
            "split": split, "index": index, "answer": answer, "question": problem,
            "need_tools_kwargs": True,
            "tools_kwargs": {REWARD_TOOL: {"create_kwargs": {"ground_truth": answer}}},
        },
    }


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="dataset",
        summary="Geometry3K diagram problems for a vision-language model",
    )


@hookimpl
def rlgen_dataset_format():
    return DatasetFormat(
        name=NAME,
        source=SOURCE,
        columns=("problem", "answer", "images"),
        map_row=map_row,
        default_model=DEFAULT_MODEL,
        vision=True,
        agent_name=AGENT,
    )


@hookimpl
def rlgen_check(ctx):
    if not _VISION_MODEL.search(ctx.spec.model.split("/")[-1]):
        return [Problem(
            f"geometry3k prompts carry images, but model '{ctx.spec.model}' looks text-only: pick a "
            f"vision-language model, e.g. --set rlgen.model={DEFAULT_MODEL}", (NAME, "rlgen"))]
    return []


@hookimpl
def rlgen_tools(ctx):
    return [{
        # rlgen's own tool, installed into the training image (images/training/rlgen_verl_tools).
        "class_name": "rlgen_verl_tools.rewards.Geo3kRewardTool",
        "config": {"type": verl_release(ctx.spec).tool_type},
        "tool_schema": {
            "type": "function",
            "function": {
                "name": REWARD_TOOL,
                "description": "Check the final answer to the geometry problem: 1.0 if it is correct, else 0.0.",
                "parameters": {
                    "type": "object",
                    "properties": {"answer": {"type": "string", "description": "The final answer, e.g. 12 or 3\\sqrt{2}"}},
                    "required": ["answer"],
                },
            },
        },
    }]


@hookimpl
def rlgen_readme(ctx):
    return [
        "## Dataset: Geometry3K\n"
        f"The dataset Job maps `{ctx.spec.dataset_source}` to verl's vision tool-agent rows (`agent_name: {AGENT}`, "
        "so rollouts call the sandbox tool; the diagram as an image, "
        f"one `<image>` placeholder per image, the answer in `\\boxed{{}}`) and uploads train/test parquet to "
        f"`oss://<bucket>/{ctx.spec.dataset_bucket_prefix()}`, which the trainer reads as "
        f"`{ctx.spec.data_file('train')}`. Rows whose placeholders and images disagree are dropped and listed "
        f"in the uploaded `manifest.json`. The model, `{ctx.spec.model}`, must be a vision-language model; "
        "verl's geo3k reward grades with the `mathruler` package, which the training image installs."
    ]


@hookimpl
def rlgen_training_packages(ctx):
    # verl's geo3k reward (0.9 accuracy + 0.1 format) grades answers with mathruler.
    return ["mathruler==0.1.0"]
