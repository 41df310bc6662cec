"""Durations as commands take them (``--timeout`` of ``rlgen status`` and ``rlgen e2e``)."""
from __future__ import annotations

import re


def parse_duration(text: str) -> float:
    """Seconds of ``90``, ``90s``, ``5m``, ``1h30m``; ``ValueError`` otherwise."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or not match:
        raise ValueError(text)
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds
