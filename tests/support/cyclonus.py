"""NetworkPolicy verdicts from cyclonus (the pinned toolchain's ``cyclonus``), not from rlgen's own reading.

``cyclonus analyze --mode query-traffic`` reads policies from files and a JSON list of traffic
(source and destination: a pod's namespace, namespace labels and pod labels, or an IP; a port
and protocol) and prints, per traffic, a table whose footer says whether it is allowed. Nothing
is read from a cluster: no namespace is given on the command line.
"""
from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from support.toolchain import tool

#: kube-apiserver sets this label on every Namespace (its value is the name): the one a
#: namespaceSelector of the generated policies matches, and which cyclonus takes only as given.
NAME_LABEL = "kubernetes.io/metadata.name"
_VERDICT = re.compile(r"^\|\s*IS ALLOWED\?\s*\|\s*(TRUE|FALSE)\s*\|", re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict = field(default_factory=dict)
    ip: str = ""

    def peer(self) -> dict:
        return {"Internal": {"Namespace": self.namespace, "NamespaceLabels": {NAME_LABEL: self.namespace},
                             "PodLabels": dict(self.labels)}, "IP": self.ip}


@dataclass(frozen=True)
class Host:
    """An address outside the cluster's pods (the API server, the metadata service, the internet)."""

    ip: str

    def peer(self) -> dict:
        return {"IP": self.ip}


#: Names KubeRay gives the head's container ports (utils/constant.go): a policy may name them.
PORT_NAMES = {8265: "dashboard", 6379: "gcs-server", 10001: "client", 8080: "metrics"}


def allowed(policies: list[dict], traffic: list[tuple[object, object, int, str]], workdir: Path) -> list[bool]:
    """Whether each ``(source, destination, port, protocol)`` is allowed by ``policies``, in order;
    a port of a Ray head carries the name KubeRay gives it."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "policies.json").write_text(json.dumps(
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicyList", "items": policies}))
    (workdir / "traffic.json").write_text(json.dumps([
        {"Source": src.peer(), "Destination": dst.peer(), "ResolvedPort": port,
         "ResolvedPortName": PORT_NAMES.get(port, "") if "ray.io/node-type" in getattr(dst, "labels", {}) else "",
         "Protocol": protocol} for src, dst, port, protocol in traffic]))
    result = subprocess.run(
        [tool("cyclonus"), "analyze", "--mode", "query-traffic", "--policy-path", str(workdir / "policies.json"),
         "--traffic-path", str(workdir / "traffic.json")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    verdicts = [v.upper() == "TRUE" for v in _VERDICT.findall(result.stdout)]
    assert len(verdicts) == len(traffic), result.stdout
    return verdicts
