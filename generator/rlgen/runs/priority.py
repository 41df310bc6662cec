"""``rlgen run new --priority``: one run's Kueue priority, the label Kueue reads the
WorkloadPriorityClass of a job from (``kueue.x-k8s.io/priority-class``)."""
from __future__ import annotations

from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.naming import dns1123_label_error
from rlgen.repo import answers
from rlgen.repo.layout import PRIORITY_LABEL


def run_labels(root: Path, priority: str | None) -> dict[str, str]:
    """``{PRIORITY_LABEL: priority}``, refused in a repository whose runs Kueue does not queue."""
    if priority is None:
        return {}
    queue = answers.read(root).get("plugins", {}).get("queue", "no-queue")
    if queue != "kueue":
        raise RlgenError(f"--priority needs the kueue queue plugin (this repository: {queue}); "
                         "add it with rlgen update --plugin kueue --set kueue.gpu_quota=N")
    if problem := dns1123_label_error(priority):
        raise RlgenError(f"--priority: {problem}")
    return {PRIORITY_LABEL: priority}
