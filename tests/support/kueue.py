"""Kueue on the tests' control plane: rlgen.e2e.kueue, which ``rlgen e2e`` runs too, and what
the tests read of it."""
from __future__ import annotations

from rlgen.e2e.kueue import start_kueue  # noqa: F401 - the name conftest imports from here
from support.controlplane import ControlPlane


def workloads(cp: ControlPlane, namespace: str) -> list[dict]:
    return cp.objects("workloads.kueue.x-k8s.io", "-n", namespace)
