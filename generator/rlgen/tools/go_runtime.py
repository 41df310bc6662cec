"""The environment of the Go programs rlgen runs (kustomize, kubeconform): a render or a schema
check lasts seconds and allocates briefly, and Go's collector, at its default (GOGC=100),
spends a fifth of kustomize's CPU on a build of ``runs/``. A user's own GOGC stands."""
from __future__ import annotations

import os

#: The heap grows to five times what is live before a collection: about 20 % less CPU for a
#: build of 50 runs, 60 MB of memory instead of 35 (docs/upstream.md).
GOGC = "400"


def environment() -> dict[str, str] | None:
    """The environment for a Go program, or None (this process's) when GOGC is set already."""
    if "GOGC" in os.environ:
        return None
    return {**os.environ, "GOGC": GOGC}
