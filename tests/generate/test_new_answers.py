"""rlgen new's required answers (the team's registry, the repository's Git URL), the branch it
commits on, and its refusal to commit a repository that rlgen validate would reject."""
from __future__ import annotations

import re
import subprocess

import pytest
from rlgen.tools import yamlio
from rlgen_plugins._sandbox_common import SANDBOX_IMAGE
from support.repos import (POOL, POOL_ANSWERS, 
    BUCKET,
    GIT_URL,
    INSTALL,
    REGION,
    REGISTRY,
    REQUIRED,
    required_for,
    error_list,
    git,
    one_error_line,
    ok,
    rlgen_in,
    run_rlgen,
    storage_answers,
)
from support.terminal import answering

MARKETPLACE = ("--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.example.com")


def test_every_missing_answer_is_listed_at_once_without_input(tmp_path):
    """A short list: one line saying what is missing, then one line per answer, starting with
    the --set that gives it, and what it is."""
    line, items = error_list(run_rlgen("new", str(tmp_path / "demo"), "--plugin", "marketplace-sandbox",
                                       "--plugin", "external-secrets", "--no-input"))
    assert line == ("rlgen: error: 12 required answers are missing: give each with --set "
                    "(on a terminal rlgen new asks for them)")
    # The install source first (this rlgen is an editable install, no source an image build
    # can reach), then the others in the order they are asked; the bucket and its region have
    # no default (OSS bucket names are global); the ARNs auth=rrsa (the default) needs.
    names = [re.match(r"--set (\S+)=VALUE \(", item).group(1) for item in items]
    assert names == ["rlgen.install", "rlgen.registry", "rlgen.git_url", "rlgen.node_pool", "rlgen.node_cpu",
                     "rlgen.node_memory", "marketplace-sandbox.domain",
                     "ak-storage.bucket", "ak-storage.region", "external-secrets.region",
                     "external-secrets.role_arn", "external-secrets.oidc_provider_arn"], items
    assert "editable install" in items[0] and "needed when auth=rrsa" in items[-1]
    assert items[7] == "--set ak-storage.bucket=VALUE (OSS bucket holding datasets, models and checkpoints)"
    assert all(len(item) < 240 for item in items), items
    line, items = error_list(run_rlgen("new", str(tmp_path / "demo"), *REQUIRED[:2], "--no-input"))
    assert line.startswith("rlgen: error: 7 required answers are missing")
    assert items[0].startswith("--set rlgen.install=VALUE (") and not any("rlgen.registry" in i for i in items)
    assert list(tmp_path.iterdir()) == []


def test_bucket_region_and_endpoint_are_recorded(generate):
    answers = yamlio.load((generate() / "rlgen.yaml").read_text())
    assert answers["options"]["ak-storage"] == {"bucket": BUCKET, "region": REGION, "endpoint": ""}
    assert answers["options"]["opensource-sandbox"] == {"kuberay_namespace": "kuberay-system",
                                                        "sandbox_image": SANDBOX_IMAGE}


def test_interactive_new_asks_the_install_source_first_and_the_rrsa_arns_after_their_condition(tmp_path):
    """On a terminal nothing is refused at the end: rlgen.install is the first question, the
    ARNs auth=rrsa needs are asked right after the KMS region, an OIDC provider of another
    account than the role is asked again, and rlgen.yaml records every answer."""
    import os

    role, provider = "acs:ram::1111111111:role/eso", "acs:ram::1111111111:oidc-provider/ack-rrsa-c0ffee"
    replies = {"rlgen.install": [INSTALL], "rlgen.registry": [REGISTRY], "rlgen.git_url": [GIT_URL],
               **{f"rlgen.{k}": [v] for k, v in POOL_ANSWERS.items()},
               "rlgen.git_host": ["github"], "ak-storage.bucket": [BUCKET], "ak-storage.region": ["cn-hangzou", REGION],
               "external-secrets.region": [REGION], "external-secrets.role_arn": [role],
               "external-secrets.oidc_provider_arn": [provider.replace("1111111111", "2222222222"), provider]}
    target = tmp_path / "repo"
    code, _, screen, asked = answering("new", str(target), "--plugin", "external-secrets", replies=replies,
                                       env=dict(os.environ))
    assert code == 0, screen.decode(errors="replace")
    # The Git host's kind right after the URL whose host does not tell it.
    assert asked[:4] == ["rlgen.install", "rlgen.registry", "rlgen.git_url", "rlgen.git_host"], asked
    eso = [a for a in asked if a.startswith("external-secrets.")]
    assert eso == ["external-secrets.region", "external-secrets.role_arn", "external-secrets.oidc_provider_arn",
                   "external-secrets.oidc_provider_arn"], asked
    assert b"did you mean 'cn-hangzhou'" in screen and b"is in account 2222222222" in screen
    options = yamlio.load((target / "rlgen.yaml").read_text())["options"]
    assert options["rlgen"]["install"] == INSTALL
    assert options["ak-storage"] == {"bucket": BUCKET, "region": REGION, "endpoint": ""}
    assert options["external-secrets"] == {"region": REGION, "role_arn": role, "oidc_provider_arn": provider}


def test_interactive_new_asks_bucket_and_region_and_asks_again_after_a_bad_answer(tmp_path):
    from rlgen.plugin_host.discovery import discover
    from rlgen.plugin_host.selection import select

    asked, replies = [], {"ak-storage.bucket": ["Bad_Bucket", "team-bucket"], "ak-storage.region": ["cn-hangzhou"],
                          "ak-storage.endpoint": [""], "opensource-sandbox.kuberay_namespace": ["ray-system"],
                          "opensource-sandbox.sandbox_image": ["registry.rl.test/mirror/code-interpreter:v1.6"]}

    def ask(plugin, option):
        asked.append(f"{plugin}.{option.name}")
        return replies[asked[-1]].pop(0)

    selection = select(discover(), [], {"rlgen": {"registry": REGISTRY, "git_url": GIT_URL, "install": INSTALL, "git_host": "github",
                                                  **POOL_ANSWERS}}, ask)
    assert [a for a in asked if a.startswith("ak-storage.")] == [
        "ak-storage.bucket", "ak-storage.bucket", "ak-storage.region", "ak-storage.endpoint"]
    assert selection.answers["ak-storage"] == {"bucket": "team-bucket", "region": "cn-hangzhou", "endpoint": ""}
    # Where KubeRay runs decides who the Ray head's dashboard admits: asked, and recorded.
    assert "opensource-sandbox.kuberay_namespace" in asked
    assert selection.answers["opensource-sandbox"] == {
        "kuberay_namespace": "ray-system", "sandbox_image": "registry.rl.test/mirror/code-interpreter:v1.6"}


@pytest.mark.parametrize("option, value", [
    ("rlgen.registry", "registry.example.com/rl"),
    ("rlgen.git_url", "ssh://git@example.org/platform/rl-repo.git"),
    ("opensource-sandbox.controller_image", "registry.example.net/agents/controller:v0.3.0"),
    ("rlgen.data_image", "registry.example.com/rl/rlgen-data:0.1.0"),
])
def test_example_domains_are_refused(tmp_path, option, value):
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, "--set", f"{option}={value}", "--no-input"))
    assert option in line and "reserved example domain" in line
    assert list(tmp_path.iterdir()) == []


def test_images_come_from_the_team_registry(generate):
    repo = generate()
    assert f"pushed to {REGISTRY}/rlgen-data under a tag" in (repo / "images" / "data" / "Dockerfile").read_text()
    assert f"pushed to {REGISTRY}/verl-training under a tag" in (repo / "images" / "training" / "Dockerfile").read_text()
    assert "example.com" not in "".join(p.read_text() for p in repo.rglob("*.yaml") if ".git" not in p.parts)


def test_branch_answer_is_the_branch_committed_and_diffed(generate, tmp_path):
    target = tmp_path / "repo"
    ok(run_rlgen("new", str(target), *REQUIRED, "--set", "rlgen.git_branch=develop", "--no-input"))
    assert git(target, "branch", "--show-current").strip() == "develop"
    assert git(target, "branch", "--list", "main") == ""
    ok(rlgen_in(target, "diff"))


def test_empty_clone_gets_the_commit_and_its_origin_is_the_git_url(tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(remote), str(target)], check=True, capture_output=True)
    answers = ("--set", f"rlgen.registry={REGISTRY}", *POOL, "--set", f"rlgen.install={INSTALL}", *storage_answers(),
               "--set", "rlgen.git_host=github", "--no-input")
    # A token in the origin URL never reaches the files: refused, nothing written.
    git(target, "remote", "set-url", "origin", "https://oauth2:glpat-abcdefghij0123456789@git.rl.test/p/r.git")
    line = one_error_line(run_rlgen("new", str(target), *answers))
    assert "origin remote" in line and "carries credentials" in line and "glpat-" not in line
    assert sorted(p.name for p in target.iterdir()) == [".git"]
    git(target, "remote", "set-url", "origin", GIT_URL)
    ok(run_rlgen("new", str(target), *answers))
    answers = yamlio.load((target / "rlgen.yaml").read_text())
    assert answers["options"]["rlgen"]["git_url"] == GIT_URL
    assert git(target, "remote", "get-url", "origin").strip() == GIT_URL
    assert git(target, "rev-list", "--count", "HEAD").strip() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clone", "remote.git"]


def test_a_selection_validate_rejects_is_never_committed(tmp_path):
    # 64 GPUs a node: verl packs 3 CPUs per GPU, more than the GPU pod gives Ray.
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, "--set", "rlgen.gpus_per_node=64", "--no-input"))
    assert "rlgen validate rejects" in line and "RayJob/" in line
    assert list(tmp_path.iterdir()) == []


def test_git_url_reaches_the_sync_entry_points(generate):
    argo = generate("--plugin", "argo")
    assert GIT_URL in (argo / "clusters" / "production" / "root.yaml").read_text()
    assert f"--url={GIT_URL}" in (generate() / "README.md").read_text()


def test_texts_match_the_selection(generate):
    opensource = (generate() / "README.md").read_text()
    table = opensource.split("## What syncs where", 1)[1].split("##", 1)[0]
    assert "`infrastructure/`" not in table and "upstream `sandbox-operator`" in table
    assert "`opensource-sandbox`" in table
    market = generate(*MARKETPLACE)
    table = (market / "README.md").read_text().split("## What syncs where", 1)[1].split("##", 1)[0]
    assert "`infrastructure/`" in table and "`marketplace-sandbox`" in table and "sandbox-operator" not in table
    infra = (market / "clusters" / "production" / "infrastructure.yaml").read_text()
    assert "dataset Job" not in infra
    assert "dataset Job" in (market / "clusters" / "production" / "platform.yaml").read_text()
    dockerfile = (generate() / "images" / "training" / "Dockerfile").read_text()
    # verl from PyPI at the pinned release: no Git ref of either home (volcengine/verl, verl-project/verl).
    assert '"verl==${VERL_VERSION}"' in dockerfile and "github.com" not in dockerfile


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_upstream_roots_come_from_the_mirror_when_one_is_set(generate, sync):
    """A cluster that cannot reach GitHub fetches upstream roots from the team's mirror, at the
    same owner/name and tag, and the sandbox-manager is built from the mirror too (a new build
    script, so a new tag of its image); nothing else changes."""
    plain = generate("--plugin", sync)
    mirrored = generate("--plugin", sync, "--set", "rlgen.upstream_mirror=https://git.rl-team.cn/mirrors/")
    def sync_files(repo):
        return "".join(p.read_text() for folder in ("clusters", "infrastructure")
                       for p in sorted((repo / folder).rglob("*.yaml")))
    def manager_tag(repo):
        return re.search(r"sandbox-manager:(\S+)`", (repo / "README.md").read_text())[1]
    before, after = sync_files(plain), sync_files(mirrored)
    assert "https://github.com/openkruise/agents" in before
    assert manager_tag(plain) != manager_tag(mirrored)
    assert after == before.replace("https://github.com/openkruise/agents",
                                   "https://git.rl-team.cn/mirrors/openkruise/agents").replace(
                                       manager_tag(plain), manager_tag(mirrored))
    build = (mirrored / "images" / "sandbox-manager" / "build.sh").read_text()
    assert "git clone --quiet https://git.rl-team.cn/mirrors/openkruise/agents.git" in build


def test_the_readme_quick_start_gives_every_answer_rlgen_new_needs(tmp_path):
    """Each `rlgen new` of the README's quick start that needs nothing of the reader's machine
    (no age key, no template, no placeholder) runs off a terminal as written; this checkout is
    an editable install, so the install source is added, as the README says."""
    import shlex

    from support.repos import REPO

    block = (REPO / "README.md").read_text().split("```sh", 2)[2].split("```", 1)[0].replace("\\\n", " ")
    exported = dict(re.findall(r'^export (\w+)="([^"]*)"$', block, re.M))
    lines = [line.split("#", 1)[0] for line in block.splitlines()
             if line.startswith("rlgen new ") and not re.search(r"<|\$\(|--template", line)]
    assert len(lines) >= 3, lines
    for i, line in enumerate(lines):
        for name, value in exported.items():
            line = line.replace(f"${name}", value)
        args = shlex.split(line)[3:]
        ok(run_rlgen("new", str(tmp_path / f"repo-{i}"), *args, "--set", f"rlgen.install={INSTALL}", "--no-input"))


@pytest.mark.parametrize("url, kind", [("https://gitlab.com/team/rl-repo.git", ()),
                                       ("git@gitlab.rl.test:team/rl-repo.git", ("--set", "rlgen.git_host=gitlab"))])
def test_a_gitlab_repository_is_told_its_github_workflows_do_not_run(tmp_path, url, kind):
    # gitlab.com by its name, a self-managed GitLab by the answer rlgen asks for it.
    args = ("--set", f"rlgen.git_url={url}", *kind)
    result = run_rlgen("new", str(tmp_path / "repo"), *required_for(*args), *args, "--no-input", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "rlgen.git_url is on GitLab, which does not run the GitHub Actions workflows rlgen writes "
        "(.github/workflows/: checks, image builds, updates): run their commands from a .gitlab-ci.yml "
        "of your own (the README's Checks section)"]
    readme = (tmp_path / "repo" / "README.md").read_text()
    checks = readme[readme.index("## Checks\n"):].split("\n## ", 1)[0]
    assert "**This repository is on GitLab** (`rlgen.git_url`), which does not run the GitHub Actions" in checks


def test_a_github_repository_hears_nothing_of_gitlab(generate):
    readme = (generate() / "README.md").read_text()
    assert "GitLab**" not in readme
    result = run_rlgen("new", str(generate().parent / "again"), *REQUIRED, "--no-input", "-o", "json")
    assert result.returncode == 0 and "GitLab" not in result.stderr, result.stderr
