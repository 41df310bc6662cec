"""rlgen diff on real generated repositories: git worktrees, real kustomize, the CLI output."""
from __future__ import annotations

import base64
import re

from rlgen.diff import report
from rlgen.diff.compare import Comparison, Key, ObjectChange
from ruamel.yaml import YAML
from support.repos import commit_all, git, ok, pinned, rlgen_in, run_rlgen

LR = "actor_rollout_ref.actor.optim.lr"
OBJECT_LINE = re.compile(r"^  ([+~-]) (\S+): (\w+) (\S+)", re.M)






def objects(text: str) -> set[tuple[str, str, str]]:
    """``{(sign, kind, namespace/name)}`` from the Objects section of the text output."""
    return {(sign, kind, name) for sign, _, kind, name in OBJECT_LINE.findall(text.split("Objects:")[-1])}


def configmap_of(text: str, run: str, sign: str) -> str:
    return next(n for s, k, n in objects(text) if s == sign and k == "ConfigMap" and f"/{run}-trainer-config-" in n)


def test_a_new_run_on_a_branch_adds_one_rayjob_and_one_configmap(repo):
    ok(rlgen_in(repo, "run", "new", "exp", "--set", f"{LR}=3e-6"))
    out = ok(rlgen_in(repo, "diff", "-o", "table"))
    assert out.splitlines()[0] == "rlgen diff main@" + git(repo, "rev-parse", "--short=7", "main").strip() + \
        " -> working tree: 2 added, 0 removed, 0 changed"
    assert objects(out) == {("+", "RayJob", f"rl-training/{pinned(repo, 'exp')}"),
                            ("+", "ConfigMap", configmap_of(out, "exp", "+"))}
    assert f"+ exp: RayJob {pinned(repo, 'exp')}\n      {LR}: 3e-06\n" in out
    # The same with explicit revisions, and git's exit-code convention.
    assert objects(ok(rlgen_in(repo, "diff", "--base", "main", "--head", "run/exp", "-o", "table"))) == objects(out)
    assert run_rlgen("diff", "--exit-code", cwd=repo).returncode == 1


def test_editing_a_run_removes_its_rayjob_and_adds_a_new_one(repo):
    ok(rlgen_in(repo, "run", "new", "exp", "--no-branch", "--set", f"{LR}=3e-6"))
    old = pinned(repo, "exp")
    git(repo, "switch", "-q", "-c", "run/exp-lr")
    ok(rlgen_in(repo, "run", "set", "exp", f"{LR}=1e-5"))
    new = pinned(repo, "exp")
    out = ok(rlgen_in(repo, "diff", "-o", "table"))
    assert "2 added, 2 removed, 0 changed" in out.splitlines()[0]
    assert {("-", "RayJob", f"rl-training/{old}"), ("+", "RayJob", f"rl-training/{new}")} <= objects(out)
    assert f"~ exp: RayJob {old} -> {new}\n      {LR}: 3e-06 -> 1e-05\n" in out
    # The replacing RayJob is shown as a diff against the one it replaces.
    assert f"-  name: {old}\n" in out and f"+  name: {new}\n" in out


def test_removing_a_run_removes_its_rayjob_and_configmap(repo):
    ok(rlgen_in(repo, "run", "new", "exp", "--no-branch"))
    rayjob = pinned(repo, "exp")
    git(repo, "switch", "-q", "-c", "run/rm-exp")
    ok(rlgen_in(repo, "run", "rm", "exp", "--no-branch"))
    out = ok(rlgen_in(repo, "diff", "-o", "table"))
    assert "0 added, 2 removed, 0 changed" in out.splitlines()[0]
    assert objects(out) == {("-", "RayJob", f"rl-training/{rayjob}"), ("-", "ConfigMap", configmap_of(out, "exp", "-"))}
    assert f"- exp: RayJob {rayjob}" in out


def test_no_differences_exit_zero(repo):
    # Rendered output in the ignored rendered/ folder is not part of the repository.
    ok(rlgen_in(repo, "render", ".", "--out", "rendered"))
    assert "no differences" in ok(rlgen_in(repo, "diff", "--exit-code", "-o", "table"))
    assert "no differences" in ok(rlgen_in(repo, "diff", "-o", "markdown"))
    # The spelling of workflows generated before -o/--output.
    assert "no differences" in ok(rlgen_in(repo, "diff", "--format", "markdown"))


def test_a_base_config_edit_keeps_rayjob_names_and_says_so(repo):
    trainer = repo / "base" / "training" / "trainer.yaml"
    trainer.write_text(trainer.read_text().replace("lr: 1.0e-06", "lr: 2.0e-06"))
    out = ok(rlgen_in(repo, "diff", "-o", "table"))
    rayjob = pinned(repo, "baseline")
    assert ("~", "RayJob", f"rl-training/{rayjob}") in objects(out)
    assert f"~ baseline: RayJob {rayjob} keeps its name: KubeRay does not re-run a started RayJob" in out
    assert f"      {LR}: 1e-06 -> 2e-06\n" in out


def test_a_changed_platform_object_shows_a_unified_diff(repo):
    namespace = repo / "base" / "platform" / "namespace.yaml"
    doc = YAML().load(namespace.read_text())
    doc["metadata"].setdefault("labels", {})["team"] = "rl"
    with namespace.open("w") as f:
        YAML().dump(doc, f)
    out = ok(rlgen_in(repo, "diff", "-o", "table"))
    assert objects(out) == {("~", "Namespace", "rl-training")}
    assert "~ overlays/production/platform: Namespace rl-training" in out
    # The repository has no staging overlay: no cluster syncs it.
    assert "overlays/staging" not in out
    assert "+    team: rl" in out


def test_markdown_puts_counts_first_and_collapses_details(repo):
    ok(rlgen_in(repo, "run", "new", "exp", "--set", f"{LR}=3e-6"))
    md = ok(rlgen_in(repo, "diff", "-o", "markdown"))
    assert md.splitlines()[0] == "### rlgen diff: 2 added, 0 removed, 0 changed"
    assert f"- **`exp`** added: RayJob `{pinned(repo, 'exp')}`\n  - `{LR}`: `3e-06`\n" in md
    assert md.index("**Runs**") < md.index("**Objects**") < md.index("<details>")
    assert md.count("<details>") == md.count("</details>") == 2
    assert f"| + | RayJob `rl-training/{pinned(repo, 'exp')}` | `overlays/production/runs` |" in md


def test_markdown_fits_a_github_comment():
    # Each its own content: objects alike are shown as their differences from the first.
    changes = [ObjectChange("added", Key("runs", "ConfigMap", "ns", f"big-{i}", ""), None,
                            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                             "data": {"x": f"y{i}\n" * 4000}}) for i in range(20)]
    md = report.markdown(Comparison(changes, []), "a", "b")
    assert len(md) < 65536
    assert md.startswith("### rlgen diff: 20 added, 0 removed, 0 changed")
    assert "object details left out to fit a comment" in md and md.count("| + | ConfigMap") == 20


def secret(values: dict[str, str]) -> str:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: demo\n  namespace: flux-system\n"
            + "data:\n" + "".join(f"  {k}: {v}\n" for k, v in data.items())
            + "stringData:\n  plain: plain-secret-value\n")


def test_secret_values_never_appear(repo):
    path = repo / "clusters" / "production" / "demo-secret.yaml"
    path.write_text(secret({"token": "first-token-value", "same": "unchanged-value"}))
    added = ok(rlgen_in(repo, "diff", "-o", "markdown"))
    commit_all(repo, "a secret")
    path.write_text(secret({"token": "second-token-value", "same": "unchanged-value"}))
    changed = ok(rlgen_in(repo, "diff", "--base", "HEAD", "-o", "table"))
    changed_md = ok(rlgen_in(repo, "diff", "--base", "HEAD", "-o", "markdown"))
    for out in (added, changed, changed_md):
        for value in ("first-token-value", "second-token-value", "unchanged-value", "plain-secret-value"):
            assert value not in out and base64.b64encode(value.encode()).decode() not in out
    assert ("~", "Secret", "flux-system/demo") in objects(changed)
    assert "+  token: <redacted, changed>" in changed and "   same: <redacted>" in changed
    assert "| + | Secret `flux-system/demo` | `clusters/production/demo-secret.yaml` |" in added


def test_bad_revisions_and_failed_renders_are_one_line_and_leave_no_worktree(repo):
    result = run_rlgen("diff", "--base", "no-such-ref", cwd=repo)
    assert result.returncode == 2 and result.stderr.strip() == "rlgen: error: 'no-such-ref' is not a commit of this repository"
    (repo / "base" / "training" / "rayjob.yaml").unlink()
    commit_all(repo, "break the training base")
    result = run_rlgen("diff", "--base", "HEAD~1", "--head", "HEAD", cwd=repo)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "kustomize failed on ./runs" in result.stderr and "HEAD@" in result.stderr
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert git(repo, "status", "--porcelain") == ""


def test_the_generated_workflow_posts_one_comment_per_pull_request(repo):
    workflow = YAML(typ="safe").load((repo / ".github" / "workflows" / "diff.yaml").read_text())
    assert "pull_request" in workflow["on"] and workflow["permissions"]["pull-requests"] == "write"
    steps = workflow["jobs"]["diff"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    run = next(s["run"] for s in steps if "rlgen diff" in s.get("run", ""))
    assert 'rlgen diff --base "origin/$BASE_REF" --head HEAD -o markdown' in run
    script = next(s["with"]["script"] for s in steps if s.get("uses", "").startswith("actions/github-script"))
    assert "<!-- rlgen-diff -->" in script and "updateComment" in script and "createComment" in script
