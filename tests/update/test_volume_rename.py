"""A repository generated before the volumes were named from their immutable fields (plain
rl-datasets, rl-models, rl-checkpoints) gets the new names through rlgen update, cleanly: the
volumes, their claims and the RayJob's claimName together."""
from __future__ import annotations

import re

from support.repos import git, ok, rlgen_in
from support.updates import status, validate

HASHED = re.compile(r"\b(rl-(?:datasets|models|checkpoints))-[0-9a-f]{7}\b")


def _as_before(repo) -> None:
    """The repository as earlier rlgen versions generated it: the volumes' base names."""
    for path in repo.rglob("*.yaml"):
        if ".git" not in path.parts and HASHED.search(text := path.read_text()):
            path.write_text(HASHED.sub(r"\1", text))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--amend", "--no-edit")


def test_a_repository_with_plain_volume_names_gets_the_hashed_ones(repo):
    _as_before(repo)
    assert "claimName: rl-datasets\n" in (repo / "base/training/rayjob.yaml").read_text()

    ok(rlgen_in(repo, "update", "--no-branch"))

    assert status(repo) == ""
    rayjob = (repo / "base/training/rayjob.yaml").read_text()
    volumes = (repo / "components/ak-storage/platform/volume-rl-datasets.yaml").read_text()
    claims = set(HASHED.findall(rayjob))
    assert claims == {"rl-datasets", "rl-models", "rl-checkpoints"}
    name = re.search(r"claimName: (rl-datasets-[0-9a-f]{7})", rayjob)[1]
    assert f"name: {name}\n" in volumes and f"volumeHandle: {name}\n" in volumes
    assert "claimName: rl-datasets\n" not in rayjob
    result = validate(repo)
    assert result.returncode == 0, result.stdout + result.stderr
