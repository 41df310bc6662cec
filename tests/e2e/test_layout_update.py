"""A repository synced in the layout of an earlier rlgen (each environment's runs listed in one
index; before that, the main environment's index in runs/ and each cluster's upstream roots in its
own infrastructure.yaml), updated with rlgen update to a folder per run:
every stage Ready at the new revision, and nothing re-created on the way (the same objects, the
same owner, so Flux prunes nothing)."""
from __future__ import annotations

import re

import pytest
from support.flux import NAMESPACE, reconcile
from support.repos import INDEX, commit_all, git, listed, ok, run_rlgen
from support.updates import as_index_layout, as_old_layout

pytestmark = pytest.mark.usefixtures("dump_on_failure")


def _uids(cp) -> dict[str, str]:
    found = {f"Kustomization/{k['metadata']['name']}": k["metadata"]["uid"]
             for k in cp.objects("kustomizations", "-n", "flux-system")}
    found |= {f"GitRepository/{g['metadata']['name']}": g["metadata"]["uid"]
              for g in cp.objects("gitrepositories", "-n", "flux-system")}
    found |= {f"RayJob/{r['metadata']['name']}": r["metadata"]["uid"] for r in cp.objects("rayjobs", "-n", NAMESPACE)}
    found |= {f"Namespace/{n['metadata']['name']}": n["metadata"]["uid"] for n in cp.objects("namespaces")}
    return found


@pytest.mark.parametrize("layout", [as_index_layout, as_old_layout], ids=["runs-index", "index-in-runs"])
def test_an_old_layout_updated_syncs_and_recreates_nothing(control_plane, synced, layout):
    cp, repo = control_plane, synced["repo"]
    git(repo, "checkout", "--quiet", "main")
    start = git(repo, "rev-parse", "HEAD").strip()
    # What flux bootstrap wrote on main; rlgen's renders have these files as `rlgen new` left them.
    rendered = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    bootstrapped = [str(p.relative_to(repo)) for p in sorted(repo.glob("clusters/*/flux-system/gotk-*.yaml"))]
    try:
        runs = listed(repo)
        layout(repo)
        for path in bootstrapped:
            (repo / path).write_text(git(repo, "show", f"{rendered}:{path}"))
        commit_all(repo, "The layout of an earlier rlgen")
        old = git(repo, "rev-parse", "HEAD").strip()
        # The branch the cluster follows keeps bootstrap's commits on top of that render.
        git(repo, "checkout", start, "--", *bootstrapped)
        # rlgen's last render, as that rlgen would have recorded it: the old layout itself.
        answers = repo / "rlgen.yaml"
        text = answers.read_text()
        answers.write_text(re.sub(r"^render: .*$", f"render: {old}", text, flags=re.M) if re.search(r"^render: ", text, re.M)
                           else text + f"render: {old}\n")
        commit_all(repo, "The render of that rlgen")
        git(repo, "push", "--quiet", "origin", "main")
        reconcile(cp)
        before = _uids(cp)

        ok(run_rlgen("update", "--no-branch", cwd=repo))
        assert not (repo / "runs/kustomization.yaml").exists() and not (repo / INDEX).exists()
        assert listed(repo) == runs
        validated = run_rlgen("validate", "--offline", cwd=repo)
        assert validated.returncode == 0, validated.stdout + validated.stderr
        assert (repo / "infrastructure/upstream/kustomization.yaml").is_file()
        git(repo, "push", "--quiet", "origin", "main")
        ks = reconcile(cp)

        assert ks["runs"]["spec"]["path"] == "./overlays/production/runs"
        after = _uids(cp)
        assert {k: v for k, v in after.items() if k in before} == before
    finally:
        git(repo, "read-tree", "--reset", "-u", start)
        commit_all(repo, "Back to the current layout")
        git(repo, "push", "--quiet", "origin", "main")
        reconcile(cp)
