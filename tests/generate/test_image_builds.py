"""Each image's tag ends in a hash of its folder's files: the same answers give the same tags;
a plugin's training packages give a new training tag, which the RayJob's image and name follow,
and leave the data image alone; rlgen.install changes the data image's tag and renames the Jobs
that run it, and leaves the RayJob alone. A plugin's image (the sandbox-manager, built by its
own script) follows its folder the same way, wherever the repository names it."""
from __future__ import annotations

import hashlib
import subprocess

import pytest
from rlgen_plugins import opensource_sandbox
from support.plugins import with_hooks
from support.repos import CORE_ANSWERS

from rlgen.contributions import ImageBuild
from rlgen.errors import PluginFailed
from rlgen.generate import image_builds
from rlgen.generate.pipeline import generate
from rlgen.hookspecs import hookimpl
from rlgen.plugin_host.discovery import discover
from rlgen.plugin_host.selection import select
from rlgen.repo import image_tags


def _generate(installed=None, options=None, **rlgen):
    answers = {**CORE_ANSWERS, **(options or {}), "rlgen": {**CORE_ANSWERS["rlgen"], **rlgen}}
    return generate(select(installed or discover(), [], answers, None))


def _with_training_packages(packages: list[str]) -> dict:
    """The installed plugins, vllm also asking the training image for ``packages``."""
    return with_hooks(discover(), "vllm", rlgen_training_packages=hookimpl(lambda ctx: list(packages)))


def _text(b, path: str) -> str:
    return b.tree.files[path].decode()


def test_same_answers_same_tags():
    assert [i.ref for i in _generate().images] == [i.ref for i in _generate().images]


def test_training_packages_give_a_new_training_tag_and_rayjob_name():
    before, after = _generate(), _generate(_with_training_packages(["mathruler==0.1.0"]))
    (old_training, old_data, *old_plugins), (training, data, *plugins) = before.images, after.images
    assert training.tag.startswith("0.9.1-vllm-") and training.tag != old_training.tag
    assert data == old_data and plugins == old_plugins
    assert f"newTag: {training.tag}\n" in _text(after, "base/training/kustomization.yaml")
    assert f'"images/training {training.ref}"' in _text(after, image_tags.SCRIPT)
    assert after.rayjob != before.rayjob


def test_rlgen_install_gives_a_new_data_tag_and_job_names():
    before, after = _generate(), _generate(install="rlgen==0.1.1")
    assert before.images[0] == after.images[0] and before.rayjob == after.rayjob
    assert after.images[1].tag != before.images[1].tag
    old_job, new_job = (_text(b, "base/platform/dataset-job.yaml") for b in (before, after))
    assert f"image: {after.images[1].ref}\n" in new_job
    name = "\n  name: "
    assert old_job.split(name)[1].split("\n")[0] != new_job.split(name)[1].split("\n")[0]


def test_a_data_image_answer_keeps_its_tag_as_the_start():
    b = _generate(data_image=f"{CORE_ANSWERS['rlgen']['registry']}/pipeline:2.0@sha256:{'a' * 64}")
    data = b.images[1]
    assert data.repository == f"{CORE_ANSWERS['rlgen']['registry']}/pipeline" and data.tag.startswith("2.0-")


def test_the_hash_is_sha256sum_of_the_tracked_files_then_of_that_list(tmp_path):
    files = {"images/x/Dockerfile": b"FROM scratch\n", "images/x/pkg/a.py": b"a\n", "images/x/B.txt": b"b\n",
             "images/y/Dockerfile": b"other\n"}
    for path, content in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(content)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    # Left by a local run, untracked: not part of the image's identity.
    (tmp_path / "images/x/pkg/__pycache__").mkdir()
    (tmp_path / "images/x/pkg/__pycache__/a.pyc").write_bytes(b"\0")
    shell = subprocess.run("git ls-files -z | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum",
                           shell=True, cwd=tmp_path / "images/x", capture_output=True, text=True, check=True)
    assert image_builds.context_hash(files, "images/x") == shell.stdout.split()[0]
    listing = "".join(f"{hashlib.sha256(files['images/x/' + p]).hexdigest()}  {p}\n"
                      for p in ("B.txt", "Dockerfile", "pkg/a.py"))
    assert image_builds.context_hash(files, "images/x") == hashlib.sha256(listing.encode()).hexdigest()


def _manager(b) -> ImageBuild:
    (image,) = [i for i in b.images if i.context == "images/sandbox-manager"]
    return image


def _everywhere(b, ref: str) -> set[str]:
    """The files that name ``ref``."""
    return {path for path, content in b.tree.files.items() if ref.encode() in content}


def test_the_sandbox_manager_tag_follows_its_build_script(monkeypatch):
    before = _generate()
    old = _manager(before)
    assert old.ref == f"{CORE_ANSWERS['rlgen']['registry']}/sandbox-manager:mcp-136236a8-" + \
        image_builds.context_hash(before.tree.files, "images/sandbox-manager")[:12]
    # The script cannot name its own tag (it would hash itself): it takes it as an argument.
    assert old.tag not in _text(before, "images/sandbox-manager/build.sh")
    assert _everywhere(before, old.ref) == {"images/build.sh", "README.md"}
    assert f"newTag: {old.tag}\n" in _text(before, "infrastructure/upstream/openkruise-agents.yaml")

    # rlgen changes the script (one more patch line): a new tag wherever the manager is named.
    monkeypatch.setattr(opensource_sandbox, "KEY_LOG_EDITS",
                        (*opensource_sandbox.KEY_LOG_EDITS, ('"token", t)', '"id", t.ID)')))
    after = _generate()
    new = _manager(after)
    assert new.tag.startswith("mcp-136236a8-") and new.tag != old.tag
    assert f'"images/sandbox-manager {new.ref}"' in _text(after, image_tags.SCRIPT)
    assert f"newTag: {new.tag}\n" in _text(after, "infrastructure/upstream/openkruise-agents.yaml")
    assert f"`{new.ref}`" in _text(after, "README.md")
    assert not _everywhere(after, old.ref) and after.images[:2] == before.images[:2]


def test_a_manager_image_answer_is_used_as_it_is_and_not_built_here():
    theirs = "registry.rl.test/ours/sandbox-manager:v7"
    b = _generate(options={"opensource-sandbox": {"manager_image": theirs}})
    assert [i.context for i in b.images] == ["images/training", "images/data"]
    assert image_tags.listed(_text(b, image_tags.SCRIPT)) == [(i.context, i.ref) for i in b.images]
    upstream = _text(b, "infrastructure/upstream/openkruise-agents.yaml")
    assert "newName: registry.rl.test/ours/sandbox-manager\n" in upstream and "newTag: v7\n" in upstream
    assert f"sh images/sandbox-manager/build.sh {theirs}" in _text(b, "README.md")


def test_a_plugin_image_whose_tag_does_not_follow_its_folder_is_the_plugins_bug():
    stale = hookimpl(lambda ctx: [ImageBuild("images/sandbox-manager", "r.test/m", "mcp-136236a8")])
    with pytest.raises(PluginFailed, match="opensource-sandbox.*rlgen_images.*not tagged with the hash of "
                                           "images/sandbox-manager"):
        _generate(with_hooks(discover(), "opensource-sandbox", rlgen_images=stale))
