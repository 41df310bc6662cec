"""How a sync on the throwaway control plane ended, whichever engine ran it."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Synced:
    """Each stage's state by name (``status`` True, False or Unknown, ``reason``, ``message``,
    as the engine reports it), and the stage that failed and why (empty when none did)."""

    stages: dict = field(default_factory=dict)
    failed: str = ""
    problem: str = ""
