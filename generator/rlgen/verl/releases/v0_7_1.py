"""verl 0.7.1, the tutorial's release (facts and source files in ``docs/upstream.md``)."""
from rlgen.verl.releases import Release
from rlgen.verl.releases.keys_0_7_1 import DEFAULTS

RELEASE = Release(
    version="0.7.1",
    defaults=DEFAULTS,
    # docker/README.md at v0.7.1.
    base_images={"vllm": "vllm017.latest", "sglang": "sgl059.latest"},
    # verl/workers/fsdp_workers.py at v0.7.1: the legacy worker normalizes the mini batch.
    mini_batch_split="fsdp_workers",
    # verl/tools/utils/tool_registry.py at v0.7.1: ToolType NATIVE and MCP.
    tool_types=("native", "mcp"),
    # No image_requirements: its images install verl v0.7.0's dependencies, whose
    # install_requires are 0.7.1's (docker/Dockerfile.stable.* at v0.7.1).
)
