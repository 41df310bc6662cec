"""Start verl only once every GPU of the run has joined the Ray cluster.

The RayJob's submitter starts with the head, before the GPU worker pods are scheduled, and
verl stops at once when fewer GPUs than trainer.nnodes x trainer.n_gpus_per_node are there.
This waits for them, reading the size from the same config files verl composes.
"""
import os
import sys
import time

import ray
import yaml

CONFIGS = os.path.dirname(os.path.abspath(__file__))


def size():
    trainer = {}
    for name in ("trainer.yaml", "run.yaml"):
        path = os.path.join(CONFIGS, name)
        if os.path.exists(path):
            with open(path) as f:
                trainer.update((yaml.safe_load(f) or {}).get("trainer") or {})
    return int(trainer.get("nnodes", 1)) * int(trainer.get("n_gpus_per_node", 8))


def main():
    wanted = size()
    ray.init()
    waited = 0
    while (found := ray.cluster_resources().get("GPU", 0)) < wanted:
        if waited % 60 == 0:
            print(f"waiting for {wanted} GPUs in the Ray cluster, {found:g} joined: GPU worker pods still "
                  "Pending wait for free GPUs (kubectl get pods)", flush=True)
        time.sleep(5)
        waited += 5
    print(f"{wanted} GPUs joined: starting verl", flush=True)
    ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
