"""verl 0.9.1, the current line (facts and source files in ``docs/upstream.md``)."""
from rlgen.verl.releases import Release
from rlgen.verl.releases.keys_0_9_1 import DEFAULTS

RELEASE = Release(
    version="0.9.1",
    defaults=DEFAULTS,
    # docker/README.md of the 0.9 line (release/v0.9.0): the stable vLLM 0.24 and SGLang 0.5.12 images.
    base_images={"vllm": "vllm024.latest", "sglang": "sgl0512.latest"},
    # verl/workers/engine_workers.py train_mini_batch: the engine splits the mini batch over DP ranks.
    mini_batch_split="engine_workers",
    # verl/tools/tool_registry.py: ToolType has NATIVE only ("MCP tool is removed for now").
    tool_types=("native",),
    # The wheel's METADATA; the 0.9 images install verl v0.7.1's dependencies
    # (docker/Dockerfile.stable.* of release/v0.9.0: VERL_VERSION=v0.7.1, hence numpy<2,
    # TRANSFORMERS_VERSION=5.3.0, TRANSFER_QUEUE_VERSION=0.1.8).
    image_requirements=("numpy>=2.0.0", "transformers!=5.6.0,<5.11,>=5.5.3", "TransferQueue>=0.1.10"),
    # main_ppo runs the V1 trainer (verl/trainer/ppo/v1), which imports transfer_queue.
    trainer_modules=("verl.trainer.ppo.v1",),
)
