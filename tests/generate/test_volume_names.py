"""The OSS volumes and their claims are named from what Kubernetes never changes in place, so
another bucket, role or namespace gives new objects (which the sync creates) instead of an
update the API server refuses; the RayJob's claims follow, and Retain keeps the data."""
from __future__ import annotations

import re

from rlgen.tools import yamlio

VOLUME = re.compile(r"^(rl-(?:datasets|models|checkpoints))-[0-9a-f]{7}$")


def _volumes(repo) -> dict[str, dict[str, dict]]:
    """base name -> {kind: object} of the storage component's volume files."""
    out: dict[str, dict[str, dict]] = {}
    for path in sorted(repo.glob("components/*-storage/platform/volume-*.yaml")):
        for obj in yamlio.read_plain_all(path.read_text()):
            base = VOLUME.match(obj["metadata"]["name"])[1]
            assert path.name == f"volume-{base}.yaml"  # the file keeps its name
            out.setdefault(base, {})[obj["kind"]] = obj
    return out


def _names(repo) -> dict[str, str]:
    return {base: objs["PersistentVolumeClaim"]["metadata"]["name"] for base, objs in _volumes(repo).items()}


def _claims(repo) -> set[str]:
    rayjob = yamlio.read_plain((repo / "base/training/rayjob.yaml").read_text())
    text = yamlio.dump(rayjob)
    return set(re.findall(r"claimName: (\S+)", text))


def test_each_volume_and_claim_share_a_hashed_name_the_rayjob_mounts(generate):
    repo = generate()
    volumes = _volumes(repo)
    assert set(volumes) == {"rl-datasets", "rl-models", "rl-checkpoints"}
    for objs in volumes.values():
        pv, pvc = objs["PersistentVolume"], objs["PersistentVolumeClaim"]
        name = pvc["metadata"]["name"]
        assert pv["metadata"]["name"] == pv["spec"]["csi"]["volumeHandle"] == name
        assert pvc["spec"]["selector"]["matchLabels"] == pv["metadata"]["labels"] == {"alicloud-pvname": name}
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert _claims(repo) == set(_names(repo).values())
    text = (repo / "components/ak-storage/platform/volume-rl-checkpoints.yaml").read_text()
    assert "Retain" in text.split("apiVersion:")[0]  # the comment says why


def test_a_new_bucket_region_or_endpoint_renames_every_volume(generate):
    before = _names(generate())
    # The public endpoint of the bucket's own region: one of another region is refused.
    for option in ("bucket=mlteam-rl-data", "region=cn-beijing", "endpoint=oss-cn-hangzhou.aliyuncs.com"):
        after = _names(generate("--set", f"ak-storage.{option}"))
        assert set(after) == set(before)
        assert all(after[k] != before[k] for k in before), option


def test_another_role_or_namespace_renames_and_an_unrelated_answer_does_not(generate):
    rrsa = ("--plugin", "rrsa-storage", "--set", "rrsa-storage.role_name=rl-oss")
    first = _names(generate(*rrsa))
    assert all(v != first[k] for k, v in _names(generate("--plugin", "rrsa-storage",
                                                          "--set", "rrsa-storage.role_name=rl-oss-2")).items())
    assert all(v != first[k] for k, v in _names(generate(*rrsa, "--set", "rlgen.namespace=rl-team")).items())
    # The model a run trains touches no volume: the names stay.
    assert _names(generate(*rrsa, "--set", "rlgen.model=Qwen/Qwen2.5-1.5B-Instruct")) == first
