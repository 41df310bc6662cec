"""An image folder is what its tag says. A hand edit of ``images/data/Dockerfile`` (or of the
sandbox-manager's build script), merged as it is, keeps the tag every object runs, and
``images/build.sh`` refuses to build it only after the merge: ``rlgen validate`` (the pull
request's gate) fails on it first, naming the folder, the tag and the hash its files give, with
build.sh's advice. Untracked files (``__pycache__`` of a local run) do not count, as they do
not for build.sh."""
from __future__ import annotations

import json
import shutil

from support.repos import commit_all, run_rlgen

from rlgen.naming import context_hash
from rlgen.repo import image_tags
from rlgen.validate.image_folders import image_findings


def validate(repo, *args):
    return run_rlgen("validate", str(repo), "--offline", *args)


def image_problems(result) -> list[dict]:
    return [p for p in json.loads(result.stdout)["problems"] if p["obj"].startswith("image ")]


def listed(repo) -> dict[str, str]:
    return dict(image_tags.listed((repo / image_tags.SCRIPT).read_text()))


def test_an_untouched_repository_and_an_untracked_pycache_stay_clean(repo):
    cache = repo / "images/training/rlgen_verl_tools/__pycache__"
    cache.mkdir(parents=True)
    (cache / "sandbox.cpython-311.pyc").write_bytes(b"\0compiled")
    result = validate(repo, "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert image_problems(result) == []


def test_a_hand_edited_dockerfile_fails_validate_with_the_folder_tag_and_hash(repo):
    ref = listed(repo)["images/data"]
    tag = ref.rpartition(":")[2]
    with (repo / "images/data/Dockerfile").open("a") as dockerfile:
        dockerfile.write("RUN pip install something-else\n")
    # Not committed yet: a tracked file is read from the working tree, as sha256sum reads it.
    uncommitted = validate(repo, "-o", "json")
    commit_all(repo, "data: one more package")

    result = validate(repo, "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert image_problems(uncommitted) == image_problems(result)
    (problem,) = image_problems(result)
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in (repo / "images/data").rglob("*") if p.is_file()}
    digest = context_hash(files, "images/data")[:12]
    assert problem["source"] == "images/data/" and problem["obj"] == f"image {ref}"
    assert f"no longer matches its tag {tag} (its files hash to {digest})" in problem["message"]
    assert problem["fix"] == "change it through rlgen (rlgen update; a plugin's packages), not by hand"

    lines = [line for line in validate(repo, "-o", "table").stdout.splitlines() if "images/data/" in line]
    assert len(lines) == 1 and "rlgen update" in lines[0], lines
    # Validating another folder leaves it out; the folder itself (or the file) names it.
    assert image_problems(validate(repo / "runs/baseline", "-o", "json")) == []
    assert image_problems(validate(repo / "images/data/Dockerfile", "-o", "json")) == [problem]


def test_a_hand_edited_sandbox_manager_script_is_named_too(repo):
    script = repo / "images/sandbox-manager/build.sh"
    script.write_text(script.read_text().replace("set -eu\n", "set -eu\necho patched by hand\n"))
    commit_all(repo, "manager: one more line")
    result = validate(repo, "-o", "json")
    assert result.returncode == 1
    (problem,) = image_problems(result)
    assert problem["source"] == "images/sandbox-manager/"
    assert problem["obj"] == f"image {listed(repo)['images/sandbox-manager']}"


def test_given_no_git_listing_every_file_of_the_folder_counts(repo):
    # rlgen validate itself stops outside a git checkout (its conflict scan asks git); the rule
    # alone then reads the folder as it is.
    shutil.rmtree(repo / ".git")
    assert image_findings(repo) == []
    (repo / "images/data/notes.txt").write_text("not in git, yet in the folder\n")
    (finding,) = image_findings(repo)
    assert finding.source == "images/data/"
