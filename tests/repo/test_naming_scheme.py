"""RayJob naming schemes: new repositories hash a run's inputs in memory (scheme 2); a
repository from before ``run_naming`` keeps scheme 1, and no run it did not touch is renamed."""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess

from ruamel.yaml import YAML
from support.counting import builds, counting_kustomize
from support.repos import REQUIRED, commit_all, git, ok, pinned, rlgen_in, run_rlgen

LR = "actor_rollout_ref.actor.optim.lr"
KUSTOMIZE = [shutil.which("kustomize"), "build"] if shutil.which("kustomize") else ["kubectl", "kustomize"]
TRANSFORMERS = re.compile(r"^transformers:\n(?:  .*\n|    .*\n)*", re.M)


def scheme_1_name(repo, run: str) -> str:
    """The name scheme 1 gives: a hash of the RayJob spec kustomize renders for the run
    without its rename transformer (worked out here without rlgen)."""
    kustomization = repo / "runs" / run / "kustomization.yaml"
    named = kustomization.read_text()
    kustomization.write_text(TRANSFORMERS.sub("", named))
    try:
        rendered = subprocess.run([*KUSTOMIZE, str(kustomization.parent)], capture_output=True, text=True,
                                  check=True).stdout
    finally:
        kustomization.write_text(named)
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.preserve_quotes = True
    spec = next(d for d in yaml.load_all(rendered) if d and d["kind"] == "RayJob")["spec"]
    buf = io.StringIO()
    yaml.dump(spec, buf)
    return f"{run}-{hashlib.sha256(buf.getvalue().encode()).hexdigest()[:7]}"


def test_new_names_its_run_without_kustomize_and_rlgen_run_agrees(tmp_path):
    env, log = counting_kustomize(tmp_path)
    repo = tmp_path / "repo"
    ok(run_rlgen("new", str(repo), *REQUIRED, "--no-input", env={**os.environ, **env}))
    # The only builds are of the top roots, checked before the first commit: none names the run.
    assert not [b for b in builds(log) if "/runs/" in b]
    assert "\nrun_naming: 2\n" in (repo / "rlgen.yaml").read_text()

    from rlgen.repo.workspace import open_workspace
    from rlgen.run import naming

    # Naming the first run again from the files on disk gives the name new gave it in memory.
    first = pinned(repo, "baseline")
    assert naming.name_run(repo, open_workspace(repo).spec, "baseline") == first
    assert git(repo, "status", "--porcelain") == ""

    ok(rlgen_in(repo, "run", "set", "baseline", f"{LR}=3e-6"))
    renamed = pinned(repo, "baseline")
    assert renamed != first
    assert "is unchanged: RayJob " + renamed in ok(rlgen_in(repo, "run", "set", "baseline", f"{LR}=3e-6", "-o", "table"))


def test_a_repository_without_run_naming_keeps_scheme_1(repo):
    answers = repo / "rlgen.yaml"
    answers.write_text(answers.read_text().replace("run_naming: 2\n", ""))
    commit_all(repo, "a repository from before run_naming")
    ok(rlgen_in(repo, "run", "new", "old", "--no-branch", "--set", f"{LR}=3e-6"))
    assert pinned(repo, "old") == scheme_1_name(repo, "old")
    untouched = {run: (repo / "runs" / run / "kustomization.yaml").read_bytes() for run in ("baseline", "old")}
    names = {run: pinned(repo, run) for run in untouched}

    ok(rlgen_in(repo, "run", "new", "fresh", "--no-branch", "--set", f"{LR}=1e-5"))
    ok(rlgen_in(repo, "run", "set", "fresh", "trainer.total_epochs=3"))
    assert pinned(repo, "fresh") == scheme_1_name(repo, "fresh")
    listing = ok(rlgen_in(repo, "run", "list", "-o", "table"))
    ok(rlgen_in(repo, "run", "rm", "fresh", "--no-branch"))

    for run, text in untouched.items():
        assert (repo / "runs" / run / "kustomization.yaml").read_bytes() == text
        assert f"{run}" in listing and names[run] in listing
    assert "\nrun_naming:" not in answers.read_text()
