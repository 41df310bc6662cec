"""Option values are checked at the door: rlgen new refuses, with one line and nothing
written, a value that would render into a repository its own rlgen validate rejects."""
from __future__ import annotations

import pytest
from support.repos import REQUIRED, one_error_line, run_rlgen, storage_answers

BAD = [
    ("flux.interval=1m\nbad: true", "control character U+000A"),
    ("flux.platform_timeout=soon", "is not a positive duration"),
    ("ak-storage.bucket=", "a value is required"),
    ("ak-storage.bucket=UPPER_bucket", "is not an OSS bucket name"),
    ("ak-storage.bucket=my bucket", "is not an OSS bucket name"),
    ("rlgen.training_image=registry.rl.test/rl/verl training", "is not an image reference"),
    ("opensource-sandbox.envoy_image=envoy proxy:v1", "is not an image reference"),
    ("rlgen.git_branch=my branch", "is not a git branch name"),
    ("rlgen.git_branch=release..1", "is not a git branch name"),
    ("rlgen.gpus_per_node=100000000000000000000", "is not between 1 and"),
    ("vllm.tensor_parallel_size=0", "is not between 1 and"),
    ("opensource-sandbox.warm_pool=-1", "is not between 0 and"),
    # Each kind of answer by its own rules.
    ("rlgen.registry=not a registry!", "is not a registry path"),
    ("rlgen.registry=registry.rl.test/" + "a" * 200, "image names below it would pass 255"),
    ("rlgen.git_url=notaurl", "is not a Git URL"),
    ("rlgen.git_url=https://git.rl.test/o/r.git;curl${IFS}x|sh", "is not a Git URL"),
    ("rlgen.model=Qwen/Qwen 7B", "is not a hub id"),
    ("rlgen.model_revision=main\tx", "control character U+0009"),
    ("rlgen.dataset_source=../../etc", "is not a hub id"),
    # A bare word names no repository on either hub: the owner is part of the id.
    ("rlgen.dataset_source=foo", "is not a hub id owner/name"),
    ("rlgen.model=Qwen2.5-3B-Instruct", "is not a hub id owner/name"),
    ("rlgen.network=infiniband", "is not one of tcp, rdma, erdma"),
    ("rlgen.model_source=github", "is not one of huggingface, modelscope"),
    ("rlgen.nnodes=0", "is not between 1 and 100000"),
    ("ak-storage.region=Mars 1", "is not a region id"),
    ("ak-storage.endpoint=oss.rl.test/path;x", "is not an endpoint"),
    ("rlgen.gpus_per_node=4.9", "is not a valid int"),
    ("vllm.gpu_memory_utilization=nan", "is not a finite number"),
    ("vllm.gpu_memory_utilization=1e400", "is not a finite number"),
]


@pytest.mark.parametrize("assignment,problem", BAD, ids=[b[0].split("=")[0] + "-" + str(i) for i, b in enumerate(BAD)])
def test_rlgen_new_refuses_a_bad_option_value(assignment, problem, tmp_path):
    target = tmp_path / "repo"
    option = assignment.split("=")[0]
    # The one answer under test, beside the other required ones.
    others = [a for pair in zip(REQUIRED[::2], REQUIRED[1::2]) if not pair[1].startswith(option + "=") for a in pair]
    line = one_error_line(run_rlgen("new", str(target), *others, "--set", assignment, "--no-input"))
    assert assignment.split("=")[0] in line and problem in line
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_the_same_plugin_twice_is_refused(tmp_path):
    line = one_error_line(run_rlgen("new", str(tmp_path / "repo"), "--plugin", "vllm", "--plugin", "vllm", *REQUIRED, "--no-input"))
    assert "vllm" in line


ESO = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou")
#: Answers each of the right shape, wrong against the world or against each other.
CROSS = [
    (("--set", "ak-storage.region=cn-atlantis-9"), "ak-storage.region", "is no Alibaba Cloud region"),
    (("--set", "ak-storage.region=cn-hangzou"), "ak-storage.region", "did you mean 'cn-hangzhou'"),
    (("--set", "ak-storage.endpoint=oss-cn-beijing-internal.aliyuncs.com"), "ak-storage.endpoint",
     "is an endpoint of cn-beijing, but the bucket's region is cn-hangzhou"),
    (("--set", "ak-storage.endpoint=https://cn-beijing.oss.aliyuncs.com"), "ak-storage.endpoint",
     "is an endpoint of cn-beijing"),
    ((*ESO, "--set", "external-secrets.role_arn=acs:ram::1111111111:role/eso",
      "--set", "external-secrets.oidc_provider_arn=acs:ram::2222222222:oidc-provider/ack-rrsa-c0ffee"),
     "external-secrets.oidc_provider_arn", "is in account 2222222222, but external-secrets.role_arn is in account"),
    ((*ESO, "--set", "external-secrets.role_arn=acs:ram::1111111111:oidc-provider/ack-rrsa-c0ffee"),
     "external-secrets.role_arn", "is not a RAM role ARN"),
    (("--plugin", "external-secrets", "--set", "external-secrets.region=eu-atlantis-1"),
     "external-secrets.region", "is no Alibaba Cloud region"),
    (("--plugin", "rrsa-storage", *storage_answers("rrsa-storage"), "--set", "rrsa-storage.role_name=cn-beijing"),
     "rrsa-storage.role_name", "is a region id, not a RAM role name"),
    (("--set", "rlgen.git_url=http://git.rl.test/platform/rl-repo.git"), "rlgen.git_url", "is plain http"),
    (("--set", "rlgen.upstream_mirror=http://git.rl.test/mirrors"), "rlgen.upstream_mirror", "is plain http"),
]


@pytest.mark.parametrize("args,option,problem", CROSS, ids=[f"{c[1]}-{i}" for i, c in enumerate(CROSS)])
def test_answers_are_checked_against_the_region_list_and_each_other(args, option, problem, tmp_path):
    target = tmp_path / "repo"
    given = {a.split("=")[0] for a in args if "=" in a}
    # The answers under test, beside the other required ones (those of ak-storage only with it).
    others = [a for pair in zip(REQUIRED[::2], REQUIRED[1::2]) if pair[1].split("=")[0] not in given
              and not ("rrsa-storage" in args and pair[1].startswith("ak-storage.")) for a in pair]
    line = one_error_line(run_rlgen("new", str(target), *others, *args, "--no-input"))
    assert line.startswith(f"rlgen: error: {option}: ") and problem in line, line
    assert not target.exists()


def test_a_loopback_or_in_cluster_http_git_url_and_a_proxy_endpoint_pass():
    from rlgen.option_checks import endpoint_region_error, plain_http_error, region_error

    assert plain_http_error("http://127.0.0.1:8080/team/rl-repo.git") is None
    assert plain_http_error("http://gitea.gitea.svc.cluster.local:3000/team/rl-repo.git") is None
    assert plain_http_error("https://git.rl.test/team/rl-repo.git") is None
    assert endpoint_region_error("oss-proxy.rl.test", {"region": "cn-hangzhou"}) is None
    assert endpoint_region_error("oss-cn-hangzhou-internal.aliyuncs.com", {"region": "cn-hangzhou"}) is None
    assert endpoint_region_error("oss-cn-shanghai-finance-1-internal.aliyuncs.com",
                                 {"region": "cn-shanghai-finance-1"}) is None
    assert region_error("cn-wulanchabu") is None and region_error("ap-southeast-7") is None
