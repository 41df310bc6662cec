"""Each volume's name: its base name and a hash of what Kubernetes never changes in place on
its PersistentVolume and claim (the bucket, endpoint and credentials of its source, the claim's
spec, its namespace). A new bucket or role then gives a new volume and claim, which the sync
creates, instead of an update the API server refuses, which would hold back the platform stage
and the runs behind it. The RayJob's claimName follows through the Spec."""
from __future__ import annotations

from dataclasses import replace

from rlgen.contributions import Context
from rlgen.immutable_fields import digest
from rlgen.naming import hashed_name
from rlgen.plugin_host.manager import Hooks
from rlgen.spec import Spec

#: A claim's name is also the value of the label its volume is selected by: 63 characters.
MAX_NAME = 63
VOLUME_KINDS = ("PersistentVolume", "PersistentVolumeClaim")


def named(spec: Spec, hooks: Hooks, ctx: Context) -> Spec:
    """``spec`` with each volume named from the objects the plugins render for its base name
    (``ctx`` holds ``spec``); a volume no plugin renders keeps its base name."""
    objects = [r.obj for _, items in hooks.resources(ctx) for r in items
               if isinstance(r.obj, dict) and r.obj.get("kind") in VOLUME_KINDS]
    names = []
    for key, volume in spec.volumes.items():
        found = [o for o in objects if (o.get("metadata") or {}).get("name") == volume.base]
        if found:
            names.append((key, hashed_name(volume.base, digest(*found), MAX_NAME)))
    return replace(spec, volume_names=tuple(names))
