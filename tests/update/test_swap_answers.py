"""A plugin swap within a slot keeps the answers both plugins share (the bucket a repository
mounts, the sandbox pool it keeps), and an answer that cannot carry over is asked for or
refused by name, never defaulted."""
from __future__ import annotations

import dataclasses

import pytest
from support.repos import CORE_ANSWERS, commit_all, git, ok, one_error_line, rlgen_in
from support.updates import copy_of

from rlgen.errors import RlgenError
from rlgen.plugin_host.discovery import Installed, discover
from rlgen.plugin_info import Option
from rlgen.tools import yamlio
from rlgen.update.answers_change import Change, new_selection

#: An age public key (age-keygen's format) nobody holds the private key of.
RECIPIENT = "age1vngvum279s0kwxpjqddg0rnkt3ckfuuxpp2rf3hddfh9kuq70q7sqyxhuw"
SOPS = ("--plugin", "sops", "--set", f"sops.age_recipients={RECIPIENT}")
ARGO_SOPS_REFUSED = "rlgen: error: sops + argo: Argo CD cannot decrypt SOPS"
BEIJING = ("--set", "ak-storage.bucket=mlteam-rl-data", "--set", "ak-storage.region=cn-beijing")


def _options(repo) -> dict:
    return yamlio.load((repo / "rlgen.yaml").read_text())["options"]


def test_ak_to_rrsa_keeps_the_bucket_and_region(generate, tmp_path):
    repo = copy_of(generate, tmp_path, *BEIJING)

    ok(rlgen_in(repo, "update", "--no-branch", "--plugin", "rrsa-storage", "--set", "rrsa-storage.role_name=rl-oss"))

    recorded = _options(repo)["rrsa-storage"]
    assert (recorded["bucket"], recorded["region"], recorded["role_name"]) == ("mlteam-rl-data", "cn-beijing", "rl-oss")
    assert "ak-storage" not in _options(repo)
    volume = (repo / "components/rrsa-storage/platform").glob("volume-*.yaml")
    assert all("bucket: mlteam-rl-data" in p.read_text() for p in volume)


def test_rrsa_to_ak_keeps_the_bucket_region_and_endpoint(generate, tmp_path):
    repo = copy_of(generate, tmp_path, "--plugin", "rrsa-storage", "--set", "rrsa-storage.role_name=rl-oss",
                   "--set", "rrsa-storage.bucket=mlteam-rl-data", "--set", "rrsa-storage.region=cn-beijing",
                   "--set", "rrsa-storage.endpoint=oss-cn-beijing.aliyuncs.com")

    ok(rlgen_in(repo, "update", "--no-branch", "--plugin", "ak-storage"))

    recorded = _options(repo)["ak-storage"]
    assert {k: recorded[k] for k in ("bucket", "region", "endpoint")} == {
        "bucket": "mlteam-rl-data", "region": "cn-beijing", "endpoint": "oss-cn-beijing.aliyuncs.com"}
    # role_name means nothing to the AccessKey plugin: it is not carried.
    assert "role_name" not in recorded


def test_sandbox_swap_keeps_the_pool_answers_and_asks_for_the_domain(generate, tmp_path):
    repo = copy_of(generate, tmp_path, "--set", "opensource-sandbox.warm_pool=7",
                   "--set", "opensource-sandbox.kuberay_namespace=ray-system")

    refused = rlgen_in(repo, "update", "--no-branch", "--plugin", "marketplace-sandbox")
    assert refused.returncode == 2
    assert "--set marketplace-sandbox.domain=VALUE" in one_error_line(refused)

    ok(rlgen_in(repo, "update", "--no-branch", "--plugin", "marketplace-sandbox",
                "--set", "marketplace-sandbox.domain=sandbox.example.com"))
    recorded = _options(repo)["marketplace-sandbox"]
    assert (recorded["warm_pool"], recorded["kuberay_namespace"]) == (7, "ray-system")
    assert "controller_image" not in recorded


def _recorded(storage: str, answers: dict) -> dict:
    plugins = {"sandbox": "opensource-sandbox", "storage": storage, "dataset": "gsm8k", "rollout": "vllm",
               "sync": "flux", "tracking": "no-tracking", "secrets": "manual-secrets"}
    return {"plugins": plugins, "options": {**CORE_ANSWERS, storage: answers}, "clusters": {}}


def _with_other_bucket(installed) -> dict:
    """rrsa-storage, but its ``bucket`` means something else (another help): no carry-over."""
    real = installed["rrsa-storage"]
    options = tuple(dataclasses.replace(o, help="a bucket of logs only") if o.name == "bucket" else o
                    for o in real.info.options)
    plugins = {name: installed[name] for name in ("opensource-sandbox", "ak-storage", "gsm8k", "vllm", "flux",
                                                    "no-tracking", "manual-secrets", "no-queue")}
    plugins["rrsa-storage"] = Installed(real.module, dataclasses.replace(real.info, options=options), real.version,
                                        real.distribution)
    return plugins


def test_an_answer_of_another_meaning_is_refused_by_name_without_a_terminal():
    installed = _with_other_bucket(discover())
    recorded = _recorded("ak-storage", {"bucket": "mlteam-rl-data", "region": "cn-beijing", "endpoint": ""})

    with pytest.raises(RlgenError) as refused:
        new_selection(installed, recorded, Change(["rrsa-storage"], ["rrsa-storage.role_name=rl-oss"]))

    assert "--set rrsa-storage.bucket=VALUE" in str(refused.value)
    assert "region" not in str(refused.value)


def test_an_answer_of_another_meaning_is_asked_on_a_terminal():
    installed = _with_other_bucket(discover())
    recorded = _recorded("ak-storage", {"bucket": "mlteam-rl-data", "region": "cn-beijing", "endpoint": ""})
    asked: list[str] = []

    def prompt(plugin: str, option: Option) -> str:
        asked.append(f"{plugin}.{option.name}")
        return "mlteam-logs"

    selection = new_selection(installed, recorded, Change(["rrsa-storage"], ["rrsa-storage.role_name=rl-oss"],
                                                          prompt=prompt))

    assert asked == ["rrsa-storage.bucket"]
    values = selection.values["rrsa-storage"]
    assert (values["bucket"], values["region"]) == ("mlteam-logs", "cn-beijing")


def test_a_swap_to_external_secrets_asks_the_arns_its_default_auth_needs():
    recorded = _recorded("ak-storage", {"bucket": "mlteam-rl-data", "region": "cn-beijing", "endpoint": ""})
    replies = {"external-secrets.region": "cn-beijing", "external-secrets.role_arn": "acs:ram::1111:role/eso",
               "external-secrets.oidc_provider_arn": "acs:ram::1111:oidc-provider/ack-rrsa-c0ffee"}
    asked: list[str] = []

    def prompt(plugin: str, option: Option) -> str:
        asked.append(f"{plugin}.{option.name}")
        return replies[asked[-1]]

    selection = new_selection(discover(), recorded, Change(["external-secrets"], [], prompt=prompt))
    assert asked == list(replies)
    assert selection.values["external-secrets"]["role_arn"] == "acs:ram::1111:role/eso"
    with pytest.raises(RlgenError, match="--set external-secrets.oidc_provider_arn=VALUE"):
        new_selection(discover(), recorded, Change(["external-secrets"], ["external-secrets.region=cn-beijing"]))


def test_a_swap_on_a_terminal_asks_what_does_not_carry_over(generate, tmp_path):
    """On a real pseudo-terminal the marketplace domain is asked; the pool answers carry over."""
    import os
    import pty
    import select
    import sys
    import time

    repo = copy_of(generate, tmp_path, "--set", "opensource-sandbox.warm_pool=7")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(repo)
        os.execv(sys.executable, [sys.executable, "-m", "rlgen", "update", "--no-branch",
                                  "--plugin", "marketplace-sandbox"])
    output, asked = b"", []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
        last = output.rsplit(b"\n", 1)[-1]
        if last.rstrip(b" ").endswith(b":") and b"marketplace-sandbox." in last and last not in asked:
            asked.append(last)
            os.write(fd, b"sandbox.example.com\n")
    _, status = os.waitpid(pid, 0)
    text = output.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert [a.split(b" ")[0] for a in asked] == [b"marketplace-sandbox.domain"], text
    recorded = _options(repo)["marketplace-sandbox"]
    assert (recorded["domain"], recorded["warm_pool"]) == ("sandbox.example.com", 7)


def _everything(repo) -> tuple:
    """HEAD, every ref, git's status (ignored files too) and every file's bytes outside .git."""
    files = {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
             if p.is_file() and ".git" not in p.relative_to(repo).parts}
    return (git(repo, "rev-parse", "HEAD"), git(repo, "for-each-ref"),
            git(repo, "status", "--porcelain", "--ignored"), files)


def _refused_as_argo_with_sops(repo, *args: str) -> None:
    before = _everything(repo)
    result = rlgen_in(repo, *args)
    line = one_error_line(result)
    assert line.startswith(ARGO_SOPS_REFUSED), line
    assert all(name in line for name in ("external-secrets", "manual-secrets", "flux")), line
    assert result.stdout == "" and _everything(repo) == before, args


def test_an_argo_repository_swapped_to_sops_is_refused_and_left_as_it_was(generate, tmp_path):
    repo = copy_of(generate, tmp_path, "--plugin", "argo")
    for flags in ((), ("--no-branch",), ("--dry-run",)):
        _refused_as_argo_with_sops(repo, "update", *flags, *SOPS, "--no-input")
    assert git(repo, "status", "--porcelain") == ""


def test_a_sops_repository_swapped_to_argo_is_refused_and_left_as_it_was(generate, tmp_path):
    repo = copy_of(generate, tmp_path, *SOPS)
    for flags in ((), ("--no-branch",), ("--dry-run",)):
        _refused_as_argo_with_sops(repo, "update", *flags, "--plugin", "argo", "--no-input")
    assert git(repo, "status", "--porcelain") == ""


def test_a_repository_recorded_with_argo_and_sops_is_refused_until_it_swaps_one(generate, tmp_path):
    """An older rlgen generated argo with sops: every command that renders the answers again
    refuses them, and swapping the secrets plugin is the way out."""
    repo = copy_of(generate, tmp_path, *SOPS)
    answers = repo / "rlgen.yaml"
    answers.write_text(answers.read_text().replace("  sync: flux\n", "  sync: argo\n", 1))
    commit_all(repo, "Argo CD syncs this repository")
    _refused_as_argo_with_sops(repo, "update")
    _refused_as_argo_with_sops(repo, "update", "--set", "rlgen.gpus_per_node=4")
    _refused_as_argo_with_sops(repo, "cluster", "add", "second", "--env", "staging")
    _refused_as_argo_with_sops(repo, "cluster", "add", "second", "--env", "staging", "--dry-run")

    ok(rlgen_in(repo, "update", "--no-branch", "--plugin", "manual-secrets", "--no-input"))

    recorded = yamlio.load(answers.read_text())
    assert (recorded["plugins"]["sync"], recorded["plugins"]["secrets"]) == ("argo", "manual-secrets")
    assert "sops" not in recorded["options"] and not (repo / ".sops.yaml").exists()
    assert git(repo, "status", "--porcelain") == ""
