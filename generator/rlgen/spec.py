"""Every name and path that two generated objects share, defined once.

A PVC name appears in the PVC and in the RayJob's volumes; the dataset path appears in the
dataset Job and in the trainer's ``data.train_files``; the MCP Service appears in its
manifest and in ``mcp_server.json``. Plugins read these from :class:`Spec`, never type them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

#: The environments that have a platform overlay (``overlays/<env>/platform``).
ENVIRONMENTS = ("production", "staging")
#: How GPU pods reach each other for NCCL (rlgen.network), and who starts a run's pods together.
NETWORKS = ("tcp", "rdma", "erdma")
GANG_SCHEDULERS = ("off", "volcano", "coscheduling")
#: The branch the sync engine follows when ``rlgen.git_branch`` is not answered.
DEFAULT_GIT_BRANCH = "main"
#: The hubs the model Job downloads from (rlgen.model_source, rlgen data model --source).
MODEL_SOURCES = ("huggingface", "modelscope")
#: What a ``dataset_source`` starts with when the dataset Job loads it from ModelScope.
MODELSCOPE_PREFIX = "modelscope:"


def in_mainland_china(region: str) -> bool:
    """A region whose clusters reach neither the Hugging Face Hub nor github.com: ModelScope and
    the team's mirror serve them instead. cn-hongkong is no mainland region (both are reachable)."""
    return region.startswith("cn-") and region != "cn-hongkong"


@dataclass(frozen=True)
class Volume:
    """One OSS-backed volume: PV/PVC name, bucket prefix, and where pods mount it."""

    name: str
    bucket_prefix: str
    mount_path: str
    read_only: bool
    #: The name before the hash of its immutable fields (its file keeps this name).
    base: str = ""


#: (key, base name, bucket prefix, mount path, read-only in the trainer) of each OSS volume.
_VOLUMES = (
    ("datasets", "rl-datasets", "datasets", "/var/datasets", True),
    ("models", "rl-models", "models", "/var/models", True),
    ("checkpoints", "rl-checkpoints", "checkpoints", "/var/checkpoints", False),
)


@dataclass(frozen=True)
class Spec:
    namespace: str
    cluster: str
    git_url: str
    git_branch: str
    dataset: str
    dataset_source: str
    model: str
    verl_version: str
    gpus_per_node: int
    nnodes: int
    #: The repository of the training image; ``data_image``: the data image, once generated
    #: with the tag hashed from its files (rlgen.generate.image_builds).
    training_image: str
    data_image: str
    environment: str = "production"
    # rlgen.install: how the repository's CI and the data image install rlgen ("" = this version).
    rlgen_install: str = ""
    #: ``rlgen.plugin_packages`` as given, and the distributions of the selected plugins rlgen
    #: does not ship (their default source: where each was installed from).
    plugin_packages: tuple[str, ...] = ()
    plugin_distributions: tuple[str, ...] = ()
    sandbox_namespace: str = "sandbox-system"
    #: The cluster's region (``rlgen.region``); empty: not said.
    region: str = ""
    #: Hub the model Job downloads ``model`` from: huggingface or modelscope.
    model_source: str = "huggingface"
    #: Branch, tag or commit of the model; empty: the hub's default branch.
    model_revision: str = ""
    #: The team's image registry (``rlgen.registry``): images this repository builds go there.
    registry: str = ""
    # How a run's GPU pods talk NCCL across nodes, and how its pods are scheduled together.
    network: str = "tcp"
    rdma_host_network: bool = True
    gang_scheduling: str = "off"
    queue: str = ""
    priority_class: str = ""
    #: How git_url's host signs push webhooks (rlgen.naming.GIT_HOSTS): ``rlgen.git_host``, or
    #: what the host's name tells.
    git_host: str = ""
    #: The GPU node pool (rlgen.pool reads them): its kind, ECS node pool ID, CPU cores and GiB
    #: of a node the training pods may take, the team's labels and taints as answered, its nodes.
    node_pool: str = "lingjun"
    node_pool_id: str = ""
    node_cpu: int = 0
    node_memory: int = 0
    node_labels: str = ""
    node_taints: str = ""
    pool_nodes: int = 0
    #: Git URL in place of https://github.com for upstream roots (``rlgen.upstream_mirror``).
    upstream_mirror: str = ""
    #: (volume key, name) once the generator named each volume from what Kubernetes never
    #: changes in place (rlgen.generate.volume_names); empty: the base names.
    volume_names: tuple[tuple[str, str], ...] = ()
    #: The training image's tag, hashed from images/training by the generator (rlgen.generate.image_builds).
    training_tag: str = ""

    # The training layer's fixed object names (runs prefix them with the run name).
    rayjob_name: str = "trainer"
    trainer_configmap: str = "trainer-config"
    trainer_config_key: str = "trainer.yaml"
    run_config_key: str = "run.yaml"
    configs_mount: str = "/var/configs"

    # Dataset pipeline.
    dataset_job: str = "dataset-pipeline"
    dataset_configmap: str = "dataset-pipeline"
    dataset_service_account: str = "dataset-pipeline"
    model_job: str = "model-pipeline"
    #: Label (value "true") of the Jobs that write to the bucket; storage plugins patch by it.
    bucket_writer_label: str = "rlgen.io/bucket-writer"

    # MCP sandbox service the trainer's tools call.
    mcp_service: str = "mcp-sandbox"
    mcp_port: int = 8000
    mcp_config_key: str = "mcp_server.json"
    tool_config_key: str = "tool_config.yaml"

    @property
    def volumes(self) -> dict[str, Volume]:
        names = dict(self.volume_names)
        return {key: Volume(names.get(key, base), prefix, mount, read_only, base)
                for key, base, prefix, mount, read_only in _VOLUMES}

    @property
    def mainland_china(self) -> bool:
        """The cluster reaches neither the Hugging Face Hub nor github.com (``rlgen.region``)."""
        return in_mainland_china(self.region)

    def mirrored(self, url: str) -> str:
        """``url`` as the cluster fetches it: a GitHub repository from ``rlgen.upstream_mirror``
        when one is set, at the same owner/name; any other URL as it is."""
        github = "https://github.com/"
        if not self.upstream_mirror or not url.startswith(github):
            return url
        return f"{self.upstream_mirror.rstrip('/')}/{url.removeprefix(github)}"

    def dataset_dir(self, dataset: str | None = None) -> str:
        """Where the trainer reads the prepared parquet files (inside the datasets volume)."""
        return str(PurePosixPath(self.volumes["datasets"].mount_path) / (dataset or self.dataset))

    def dataset_bucket_prefix(self, dataset: str | None = None) -> str:
        """The OSS prefix the dataset Job uploads to: the same folder, seen from the bucket."""
        return f"{self.volumes['datasets'].bucket_prefix}/{dataset or self.dataset}/"

    def data_file(self, split: str) -> str:
        return f"{self.dataset_dir()}/{split}.parquet"

    @property
    def model_path(self) -> str:
        """Where the trainer loads the model: the models volume, one folder per model."""
        return str(PurePosixPath(self.volumes["models"].mount_path) / self.model_folder)

    @property
    def model_bucket_path(self) -> str:
        """The same folder seen from the bucket, where the model Job uploads the model."""
        return f"{self.volumes['models'].bucket_prefix}/{self.model_folder}"

    @property
    def model_folder(self) -> str:
        return self.model.split("/")[-1]

    def checkpoint_dir(self, run: str) -> str:
        return str(PurePosixPath(self.volumes["checkpoints"].mount_path) / run)

    def config_path(self, key: str) -> str:
        return str(PurePosixPath(self.configs_mount) / key)

    @property
    def mcp_host(self) -> str:
        # The Service lives beside the sandbox-manager pods it selects.
        return f"{self.mcp_service}.{self.sandbox_namespace}.svc.cluster.local"
