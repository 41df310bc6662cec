"""Option values are checked at the door: rlgen new refuses, with one line and nothing
written, a value that would render into a repository its own rlgen validate rejects."""
from __future__ import annotations

import pytest
from support.repos import REQUIRED, one_error_line, run_rlgen

BAD = [
    ("flux.interval=1m\nbad: true", "control character U+000A"),
    ("flux.platform_timeout=soon", "is not a positive duration"),
    ("ak-storage.bucket=", "is not an OSS bucket name"),
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
