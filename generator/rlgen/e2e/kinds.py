"""What serves each kind a repository renders, beyond KubeRay and its sync engine, started on the
throwaway control plane before the sync: the controllers rlgen builds where a stage waits for
what they do (Kueue and its RayJob webhook: rlgen.e2e.kueue; External Secrets against the KMS
and STS stand-ins: rlgen.e2e.external_secrets), the RRSA pod identity webhook
(rlgen.e2e.pod_identity), what ACK's add-ons leave (rlgen.e2e.ack_addons), and a CRD for every
kind still not served (rlgen.e2e.crds), each of those named "not checked here"."""
from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from rlgen.e2e import ack_addons, crds, external_secrets, kueue
from rlgen.e2e.controlplane import ControlPlane
from rlgen.e2e.pod_identity import PodIdentityWebhook
from rlgen.e2e.programs import pinned
from rlgen.kube.needs import KUEUE_GROUP, custom_group


@dataclass
class Served:
    """What was started, one line each; the kinds no controller serves, one line each; the
    token file External Secrets' RRSA stores are pointed at (None without External Secrets)."""

    running: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    token_file: Path | None = None
    #: The pods the RRSA pod identity webhook gave credentials to, as it gives them (namespace/name).
    rrsa_pods: list[str] = field(default_factory=list)


def groups(needs) -> set[str]:
    return {g for api in needs.kinds if (g := custom_group(api))}


def serve(cp: ControlPlane, needs, work: Path, services: ExitStack, placeholder: str) -> Served:
    """Start what the repository's kinds need on ``cp``; servers of this process stop with ``services``."""
    used = groups(needs)
    served = Served()
    if KUEUE_GROUP in used:
        kueue.start_kueue(cp)
        served.running.append(f"Kueue {pinned(kueue.MODULE)} with its RayJob webhook (a queued run stays "
                              "suspended until admitted)")
    if external_secrets.GROUP in used:
        running = external_secrets.start(cp, needs, work / "external-secrets", services, placeholder)
        served.token_file = running.token_file
        served.running.append(f"External Secrets {pinned(external_secrets.MODULE)} reading KMS Secrets Manager "
                              f"and STS stand-ins ({len(running.cloud.secrets)} KMS secret(s) of placeholders)")
    if needs.rrsa:
        served.rrsa_pods = services.enter_context(PodIdentityWebhook(cp, work)).mutated
        served.running.append("ack-pod-identity-webhook stand-in (RRSA variables and token in labelled namespaces)")
    served.running += ack_addons.install(cp, needs)
    served.unchecked = crds.install_missing(cp, needs).unchecked
    return served
