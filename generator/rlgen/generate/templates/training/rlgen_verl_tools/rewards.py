"""Reward tools of the data sets: the model submits its answer, the tool scores it against the
row's ground truth (``tools_kwargs.<tool>.create_kwargs.ground_truth``) and says how it did.

Each reply depends on that call alone, and the step reward is always 0: verl's ``tool_agent``
creates and releases the tool around every single call, so no state outlives a call, and the
step rewards it collects (``tool_rewards``) reach no reward manager. The trajectory's score is
the data set's reward function on the final response; the tool only tells the model where it
stands.
"""
from __future__ import annotations

import re
from typing import Any, Optional
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse

_NUMBER = re.compile(r"-?[0-9][0-9,]*\.?[0-9]*")


def gsm8k_score(answer: str, ground_truth: str) -> float:
    """1.0 when the last number of ``answer`` (after ``####`` if there is one) is the ground truth."""
    tail = answer.rsplit("####", 1)[-1]
    found = _NUMBER.findall(tail)
    if not found:
        return 0.0
    number = found[-1].replace(",", "").rstrip(".")
    return 1.0 if number == str(ground_truth).replace(",", "").strip() else 0.0


def geo3k_score(answer: str, ground_truth: str) -> float:
    """1.0 when ``answer``, boxed or not, is the ground truth up to spaces and case."""
    boxed = re.findall(r"\\boxed\{([^{}]*)\}", answer)
    given = boxed[-1] if boxed else answer

    def norm(s: str) -> str:
        return re.sub(r"\s+", "", str(s)).lower().rstrip(".")

    if norm(given) == norm(ground_truth):
        return 1.0
    try:
        return 1.0 if abs(float(norm(given)) - float(norm(ground_truth))) < 1e-6 else 0.0
    except ValueError:
        return 0.0


class _RewardTool(BaseTool):
    score = staticmethod(gsm8k_score)

    def __init__(self, config: dict, tool_schema):
        super().__init__(config, tool_schema)
        # The row's ground truth from create to execute of one call; release drops it.
        self._ground_truth: dict[str, Optional[str]] = {}

    async def create(self, instance_id: Optional[str] = None, ground_truth: Optional[str] = None,
                     **kwargs) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        if ground_truth is None:
            ground_truth = (kwargs.get("create_kwargs") or {}).get("ground_truth")
        self._ground_truth[instance_id] = ground_truth
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        ground_truth = self._ground_truth.get(instance_id)
        answer = parameters.get("answer")
        if ground_truth is None:
            return ToolResponse(text="Error: this question has no ground truth to check against."), 0.0, {}
        if not isinstance(answer, str):
            answer = "" if answer is None else str(answer)
        reward = self.score(answer, ground_truth)
        verdict = "correct" if reward == 1.0 else "not correct"
        return ToolResponse(text=f"The answer {answer!r} is {verdict} (reward {reward:g})."), 0.0, {}

    async def release(self, instance_id: str, **kwargs) -> None:
        self._ground_truth.pop(instance_id, None)


class Gsm8kRewardTool(_RewardTool):
    score = staticmethod(gsm8k_score)


class Geo3kRewardTool(_RewardTool):
    score = staticmethod(geo3k_score)
