"""A sync-engine swap (rlgen update --plugin argo on a Flux repository, and back) takes the old
engine's files out of clusters/: the update and the README say how to stop the old engine first
without deleting what it applied, and what its sync of the merge would delete otherwise."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.repos import ok, rlgen_in
from support.updates import copy_of

RETIRE = {"flux": "flux uninstall --keep-namespace",
          "argo": "kubectl -n argocd get applications -o name | xargs -r -I{} kubectl -n argocd patch {} "
                  "--type=merge -p '{\"metadata\":{\"finalizers\":null}}' && kubectl -n argocd delete applications --all"}
NAMES = {"flux": "Flux", "argo": "Argo CD"}


@pytest.mark.parametrize(("old", "new"), [("flux", "argo"), ("argo", "flux")])
def test_the_update_says_how_to_stop_the_old_engine_before_the_merge(generate, tmp_path, old, new):
    repo = copy_of(generate, tmp_path, "--plugin", old)
    out = ok(rlgen_in(repo, "update", "--plugin", new, "--dry-run", "-o", "table"))
    (line,) = [line for line in out.splitlines() if line.startswith("Sync engine ")]
    assert line.startswith(f"Sync engine {NAMES[old]} -> {NAMES[new]}: before the merge, stop {NAMES[old]} "
                           f"without deleting what it applied: {RETIRE[old]} (merged while {NAMES[old]} runs, ")
    assert "runs included" in line and f"then install {NAMES[new]}" in line

    doc = json.loads(ok(rlgen_in(repo, "update", "--plugin", new, "--dry-run", "-o", "json")))
    assert doc["sync_engine"] == {"from": NAMES[old], "to": NAMES[new], "before_merge": RETIRE[old]}


def test_an_update_on_the_same_engine_names_no_swap(generate, tmp_path):
    repo = copy_of(generate, tmp_path)
    doc = json.loads(ok(rlgen_in(repo, "update", "--set", "flux.interval=5m", "--dry-run", "-o", "json")))
    assert doc["sync_engine"] is None and doc["files"]["changed"]


@pytest.mark.parametrize("engine", ["flux", "argo"])
def test_the_readme_says_how_to_stop_its_engine_and_the_command_is_sound_shell(generate, engine):
    readme = (generate("--plugin", engine) / "README.md").read_text()
    section = readme[readme.index("## Updating the repository\n"):].split("\n## ", 1)[0]
    other = "argo" if engine == "flux" else "flux"
    assert f"Changing the sync engine (`rlgen update --plugin {other}`)" in section
    block = section.split("Changing the sync engine", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert block.strip() == RETIRE[engine]
    # shellcheck (the tests' own, as for the generated workflows) finds nothing to say.
    tool = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")
    assert tool, "shellcheck is missing: pip install -e '.[test]'"
    checked = subprocess.run([tool, "--shell=bash", "-"], input=block, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout
