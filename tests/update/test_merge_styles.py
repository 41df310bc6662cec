"""Every merge style of an update branch leaves rlgen update working: a squash or rebase merge
leaves the render commit out of the history (a clone never has it), and the same rlgen makes
it again from rlgen.yaml; another rlgen says in one line how to recover."""
from __future__ import annotations

import json
import re
import subprocess

from support.repos import commit_all, git, ok, one_error_line, rlgen_in


def _squash_merged(repo, tmp_path):
    """A clone of ``repo`` whose update branch was squash-merged into main: the render commit
    is in no history it has."""
    ok(rlgen_in(repo, "update", "--set", "flux.interval=7m"))
    branch = git(repo, "branch", "--show-current").strip()
    assert branch.startswith("rlgen/update-")
    render = json.loads(ok(rlgen_in(repo, "update", "--check", "-o", "json")))["render"]
    git(repo, "switch", "-q", "main")
    git(repo, "merge", "-q", "--squash", branch)
    commit_all(repo, "Update (squashed)")
    git(repo, "branch", "-q", "-D", branch)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-local", str(repo), str(clone)], check=True)
    assert subprocess.run(["git", "cat-file", "-e", f"{render}^{{commit}}"], cwd=clone).returncode != 0
    return clone


def test_update_after_a_squash_merge_keeps_working(repo, tmp_path):
    clone = _squash_merged(repo, tmp_path)
    assert "interval: 7m" in (clone / "clusters/production/platform.yaml").read_text()
    assert "Up to date" in ok(rlgen_in(clone, "update", "--check", "-o", "table"))
    ok(rlgen_in(clone, "update", "--set", "flux.interval=9m", "--no-branch"))
    assert "interval: 9m" in (clone / "clusters/production/platform.yaml").read_text()
    assert git(clone, "status", "--porcelain") == ""
    assert "Up to date" in ok(rlgen_in(clone, "update", "--check", "-o", "table"))


def test_another_rlgen_version_says_how_to_recover(repo, tmp_path):
    clone = _squash_merged(repo, tmp_path)
    path = clone / "rlgen.yaml"
    path.write_text(re.sub(r"(?m)^rlgen_version: .*$", "rlgen_version: 0.0.9", path.read_text()))
    commit_all(clone, "An older rlgen's render")
    line = one_error_line(rlgen_in(clone, "update", "--check", "-o", "table"))
    assert "is not in this repository (a squash or rebase merge leaves it out)" in line
    assert "pip install 'rlgen==0.0.9'" in line
