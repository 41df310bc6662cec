"""How a run's GPU pods talk NCCL to each other (``rlgen.network``), on the GPU worker pods only:
the head runs no NCCL.

- ``tcp``: the pod network; NCCL finds no RDMA device and uses sockets.
- ``rdma``: ACK Lingjun nodes with the ``ack-rdma-device-plugin`` add-on (resource ``rdma/hca``,
  shared mode). Unless the add-on enables RDMA for non-hostNetwork pods, pods use the host network.
- ``erdma``: ECS GPU instances with the ACK eRDMA Controller add-on (resource ``aliyun/erdma``),
  on the pod network.

The NCCL values and their sources are listed in the project's docs/upstream.md.
"""
from __future__ import annotations

from rlgen.spec import Spec

RESOURCES = {"rdma": "rdma/hca", "erdma": "aliyun/erdma"}

#: PAI's presets for Lingjun RDMA (the same hardware ACK Lingjun node pools run on).
LINGJUN_NCCL = (
    ("NCCL_IB_HCA", "mlx5"),
    ("NCCL_IB_GID_INDEX", "3"),
    ("NCCL_IB_TC", "136"),
    ("NCCL_IB_SL", "5"),
    ("NCCL_IB_TIMEOUT", "22"),
    ("NCCL_IB_QPS_PER_CONNECTION", "8"),
    ("NCCL_SOCKET_IFNAME", "eth"),
)
#: The eRDMA controller's NCCL settings; the GID is left to NCCL (>= 2.21 picks the RoCEv2 IPv4 one).
ERDMA_NCCL = (
    ("NCCL_IB_HCA", "erdma"),
    ("NCCL_IB_ADDR_FAMILY", "AF_INET"),
    ("NCCL_IB_ROCE_VERSION_NUM", "2"),
    ("NCCL_NET_GDR_LEVEL", "SYS"),
    ("NCCL_SOCKET_IFNAME", "eth0"),
)

_NOTES = {
    "rdma": "NCCL over RDMA on ACK Lingjun nodes: needs the ack-rdma-device-plugin add-on and an\n"
            "unlimited memlock limit for containers (the run stops early without one).",
    "erdma": "NCCL over eRDMA: needs the ACK eRDMA Controller add-on (preferDriver ofed), the eRDMA\n"
             "user-space driver in the image and an unlimited memlock limit for containers.",
}

_ENV_NOTES = {
    "rdma": "NCCL over the Lingjun RDMA NICs (mlx5): PAI's presets for Lingjun resources.",
    "erdma": "NCCL over eRDMA, bootstrap on the pod network (eth0); NCCL >= 2.21 picks the RoCEv2 GID.",
}


def apply(pod: dict, spec: Spec) -> None:
    """Give a GPU worker pod spec the device, the network mode and the NCCL environment."""
    if spec.network == "tcp":
        return
    container = pod["containers"][0]
    container["resources"]["limits"][RESOURCES[spec.network]] = "1"
    container["resources"].yaml_set_comment_before_after_key("limits", before=_NOTES[spec.network], indent=18)
    values = LINGJUN_NCCL if spec.network == "rdma" else ERDMA_NCCL
    container["env"] = [*container["env"], *({"name": k, "value": v} for k, v in values)]
    container.yaml_set_comment_before_after_key("env", before=_ENV_NOTES[spec.network], indent=16)
    # No IPC_LOCK/SYS_RESOURCE (ACK's RDMA examples run as root): added to a non-root container
    # they reach only its bounding set (kubernetes#56374). Pinning memory for the NIC needs the
    # node to give containers an unlimited memlock limit; wait_for_gpus.py checks every GPU node.
    if spec.network == "rdma" and spec.rdma_host_network:
        pod.insert(0, "hostNetwork", True)
        pod.yaml_set_comment_before_after_key(
            "hostNetwork", before="Shared-mode RDMA reaches the NIC from the host network only; the\n"
                                  "pod still resolves the head's Service through cluster DNS.", indent=12)
        pod.insert(1, "dnsPolicy", "ClusterFirstWithHostNet")
