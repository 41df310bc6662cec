"""Start verl only once every GPU of the run has joined the Ray cluster.

KubeRay submits the job once every pod of the Ray cluster is Ready, which does not promise
that every worker's GPUs are registered yet, and verl stops at once when fewer GPUs than
trainer.nnodes x trainer.n_gpus_per_node are there. This waits for them, reading the size
from the same config files verl composes.
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


def memlock_problems(nodes):
    """The GPU nodes that would fail RDMA memory registration, from (host, NCCL_IB_HCA, soft
    RLIMIT_MEMLOCK) per node. NCCL pins its buffers with the NIC; an unprivileged process may
    pin only up to RLIMIT_MEMLOCK: capabilities such as IPC_LOCK given to a non-root container
    land in its bounding set only, never in effect. So the node's container runtime must give
    containers an unlimited memlock limit (containerd: LimitMEMLOCK=infinity)."""
    import resource

    return [f"{host}: memlock limit {limit} bytes, RDMA needs unlimited (NCCL_IB_HCA={hca})"
            for host, hca, limit in nodes if hca and limit != resource.RLIM_INFINITY]


def node_limits():
    """(host, NCCL_IB_HCA, soft RLIMIT_MEMLOCK) as a Ray task sees them on each GPU node."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    def limits():
        import resource
        import socket

        return socket.gethostname(), os.environ.get("NCCL_IB_HCA", ""), resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]

    nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("GPU")]
    return ray.get([limits.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote()
                    for n in nodes])


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
    problems = memlock_problems(node_limits())
    ray.shutdown()
    if problems:
        print("RDMA cannot register memory on: " + "; ".join(problems), flush=True)
        return 1
    print(f"{wanted} GPUs joined: starting verl", flush=True)


if __name__ == "__main__":
    sys.exit(main())
