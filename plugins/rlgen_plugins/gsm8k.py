"""Dataset plugin: GSM8K grade-school math in verl's multi-turn tool-agent format, graded by
rlgen's GSM8K reward tool (verl 0.9 removed its own, ``verl.tools.gsm8k_tool``)."""
from __future__ import annotations

import re

from rlgen.plugin_api import DatasetFormat, PluginInfo, hookimpl, row_text, verl_release

NAME = "gsm8k"
SOURCE = "openai/gsm8k"
REWARD_TOOL = "calc_gsm8k_reward"
#: verl's agent loop that calls tools; rows without it run single_turn_agent, which never does.
AGENT = "tool_agent"

INSTRUCTION = "Let's think step by step and output the final answer after `####`."
SYSTEM_PROMPT = (
    "You are a math expert. You are given a question and you need to solve it step by step. "
    "Reasoning step by step before any tool call. "
    f"You should use the `{REWARD_TOOL}` tool after step by step solving the question, "
    "before generate final answer at least once and refine your answer if necessary. "
    "Put your final answer in the format of `#### <answer>`."
)

_FINAL_ANSWER = re.compile(r"####\s*(-?[0-9.,]+)")


def extract_solution(answer: str) -> str:
    """The number after the last ``####``, commas removed (verl's reward compares it
    as a plain string, so "1,234" would never score)."""
    found = _FINAL_ANSWER.findall(answer)
    if not found:
        raise ValueError("answer has no '#### <number>' line")
    solution = found[-1].replace(",", "").rstrip(".")
    # "#### ." or "#### -" leaves no number: a ground truth no answer could ever match.
    if not any(c.isdigit() for c in solution):
        raise ValueError("answer's '####' line holds no number")
    return solution


def map_row(row: dict, split: str, index: int) -> dict:
    question, answer = row_text(row, "question"), row_text(row, "answer")
    solution = extract_solution(answer)
    return {
        "data_source": SOURCE,
        "agent_name": AGENT,
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"{question} {INSTRUCTION}"},
        ],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": solution},
        "extra_info": {
            "split": split,
            "index": index,
            "answer": answer,
            "question": question,
            "need_tools_kwargs": True,
            "tools_kwargs": {REWARD_TOOL: {"create_kwargs": {"ground_truth": solution}}},
        },
    }


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="dataset",
        summary="GSM8K math word problems with rlgen's GSM8K reward tool",
    )


@hookimpl
def rlgen_dataset_format():
    return DatasetFormat(
        name=NAME,
        source=SOURCE,
        columns=("question", "answer"),
        map_row=map_row,
        default_model="Qwen/Qwen2.5-3B-Instruct",
        config="main",
        agent_name=AGENT,
        # ModelScope's copy of openai/gsm8k, with the same configs.
        modelscope_source="modelscope/gsm8k",
    )


@hookimpl
def rlgen_tools(ctx):
    return [{
        # rlgen's own tool, installed into the training image (images/training/rlgen_verl_tools).
        "class_name": "rlgen_verl_tools.rewards.Gsm8kRewardTool",
        "config": {"type": verl_release(ctx.spec).tool_type},
        "tool_schema": {
            "type": "function",
            "function": {
                "name": REWARD_TOOL,
                "description": "A tool for calculating the reward of gsm8k. (1.0 if parsed answer is "
                               "correct, 0.0 if parsed answer is incorrect or not correctly parsed)",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "answer": {"type": "string", "description": "The model's answer to the GSM8K math "
                                                                      "problem, must be a digits"},
                    },
                    "required": ["answer"],
                },
            },
        },
    }]


@hookimpl
def rlgen_readme(ctx):
    return [
        "## Dataset: GSM8K\n"
        f"The dataset Job maps `{ctx.spec.dataset_source}` to verl's tool-agent rows "
        f"(`calc_gsm8k_reward` tool, ground truth without thousands separators) and uploads "
        f"train/test parquet to `oss://<bucket>/{ctx.spec.dataset_bucket_prefix()}`, which the "
        f"trainer reads as `{ctx.spec.data_file('train')}`."
    ]
