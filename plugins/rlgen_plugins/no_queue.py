"""Queue plugin: no queue. A run's RayJob starts as soon as the sync engine applies it; a run
larger than the free GPUs leaves its worker pods Pending until GPUs free up."""
from __future__ import annotations

from rlgen.plugin_api import PluginInfo, hookimpl

NAME = "no-queue"


@hookimpl
def rlgen_plugin():
    return PluginInfo(name=NAME, slot="queue", summary="No queue: every merged run starts at once")
