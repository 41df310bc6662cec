"""rlgen's own answers (``--set rlgen.NAME=VALUE``), each with its help, type, default and check:
what ``rlgen plugins`` lists beside the plugins' options, and what every selection starts from."""
from __future__ import annotations

from rlgen.naming import (
    GIT_HOSTS,
    HASH_LENGTH,
    MAX_RAYJOB_NAME,
    dns1035_label_error,
    git_host_error,
    dns1123_label_error,
    image_host,
    is_example_host,
    unknown_git_host,
    url_host,
)
from rlgen.option_checks import (
    dataset_source_error,
    git_branch_error,
    git_url_error,
    hub_id_error,
    image_reference_error,
    int_range,
    plain_http_error,
    region_error,
    registry_error,
    revision_error,
)
from rlgen import pool
from rlgen.plugin_host import install
from rlgen.plugin_info import Option, PluginInfo
from rlgen.spec import DEFAULT_GIT_BRANCH, ENVIRONMENTS, GANG_SCHEDULERS, MODEL_SOURCES, NETWORKS, in_mainland_china
from rlgen.verl import releases

def _run_name_error(run: str) -> str | None:
    # The RayJob is named <run>-<hash>; KubeRay refuses names over 47 characters.
    limit = MAX_RAYJOB_NAME - HASH_LENGTH - 1
    if len(run) > limit:
        return f"'{run}' gives a RayJob name over {MAX_RAYJOB_NAME} characters (use at most {limit})"
    return dns1035_label_error(run)


def _registry_error(value: str) -> str | None:
    if "://" in value or value.endswith("/") or ":" in value.rpartition("/")[2] or "@" in value:
        return f"'{value}' is not a registry path like registry.<region>.aliyuncs.com/team (no scheme, tag or digest)"
    return registry_error(value) or _example_domain(value.split("/")[0].split(":")[0])


def _git_url_error(value: str) -> str | None:
    return git_url_error(value) or plain_http_error(value) or _example_domain(url_host(value))


def _mirror_error(value: str) -> str | None:
    """A prefix, not a repository: rlgen appends each upstream repository's /<owner>/<repo>."""
    if not value:
        return None
    if problem := plain_http_error(value):
        return problem
    if _git_url_error(value.rstrip("/") + "/owner/repo.git") or value.startswith("git@"):
        return f"'{value}' is not a Git URL prefix like https://git.my-team.com/mirrors"
    return None


def _image_error(value: str) -> str | None:
    return (image_reference_error(value) or _example_domain(image_host(value))) if value else None


def _example_domain(host: str) -> str | None:
    if is_example_host(host):
        return f"'{host}' is a reserved example domain: nothing can be pulled from it"
    return None


def _label_value_error(value: str) -> str | None:
    # Both end up as label values on the RayJob.
    return dns1123_label_error(value) if value else None


#: Options of the generator itself, set as ``--set rlgen.NAME=VALUE``.
CORE = PluginInfo(
    name="rlgen",
    slot="",
    summary="Repository-wide settings",
    options=(
        Option("namespace", "Namespace of the training objects", "rl-training", check=dns1123_label_error),
        Option("cluster", "Cluster name (clusters/<cluster>/ holds the sync entry points)", "production",
               check=dns1123_label_error),
        # The team's own registry: images/training and images/data are built and pushed there.
        Option("registry", "Image registry and namespace the team pushes to, e.g. registry.<region>.aliyuncs.com/rl",
               required=True, check=_registry_error),
        # No default: a placeholder URL would give a repository the sync engine can never fetch.
        Option("git_url", "URL the sync engine pulls this repository from (default: the target's origin)",
               required=True, check=_git_url_error),
        # The push webhook's signature follows the host's kind, which only github.com's and
        # gitlab.com's names tell: any other host is asked, never guessed.
        Option("git_host", "Kind of Git host serving git_url, which decides how its push webhooks are signed "
               "(github: GitHub, GitHub Enterprise, Gitea; gitlab: GitLab, self-managed too; generic-hmac: "
               "X-Signature: sha256=<HMAC of the body>; default: told by github.com and gitlab.com)", "",
               choices=GIT_HOSTS,
               required_when=("git_url", unknown_git_host), cross_check=git_host_error),
        Option("git_branch", "Branch the sync engine follows", DEFAULT_GIT_BRANCH, check=git_branch_error),
        # Mainland China's clusters reach neither the Hugging Face Hub nor github.com: the region
        # picks ModelScope for the model and the dataset, and makes the mirror below required.
        Option("region", "Region of the cluster, e.g. cn-shanghai; in mainland China (cn-*, not cn-hongkong) "
               "the model and dataset come from ModelScope and upstream repositories from rlgen.upstream_mirror "
               "(empty: not said)", "", check=lambda v: region_error(v) if v else None),
        # Clusters that cannot reach GitHub (common on ACK in mainland China) fetch upstream
        # roots from a mirror that keeps GitHub's owner/name paths.
        Option("upstream_mirror", "Git URL that replaces https://github.com in the upstream repositories the "
               "cluster fetches (e.g. https://git.my-team.com/mirrors); empty: GitHub itself", "",
               check=_mirror_error, required_when=("region", in_mainland_china)),
        Option("model", "Model to train, owner/name on the model hub (default: the dataset plugin's)", "",
               check=lambda v: hub_id_error(v) if v else None),
        Option("model_source", "Hub the model Job downloads the model from (default: modelscope in "
               "mainland-China regions, else huggingface)", "", choices=MODEL_SOURCES),
        Option("model_revision", "Branch, tag or commit of the model (default: the hub's default branch)", "",
               check=lambda v: revision_error(v) if v else None),
        Option("dataset_source", "Dataset the dataset Job loads: a Hugging Face id, or modelscope:OWNER/NAME "
               "(default: the dataset plugin's, its ModelScope copy in mainland-China regions)", "",
               check=lambda v: dataset_source_error(v) if v else None),
        Option("verl", "verl release the trainer config, tools and images target (0.7.1: the tutorial's)",
               releases.DEFAULT, choices=releases.SUPPORTED),
        *pool.OPTIONS,
        Option("nnodes", "Ray nodes of a run", 1, int, check=int_range(1, 100000)),
        Option("training_image", "Repository the training image is pushed to (default: <registry>/verl-training)", "",
               check=_image_error),
        Option("data_image", "Image of the dataset Job, images/data/Dockerfile (default: <registry>/rlgen-data:0.1.0); "
               "its tag is followed by a hash of images/data",
               "", check=_image_error),
        Option("environment", "Platform overlay the cluster syncs", "production",
               choices=ENVIRONMENTS),
        Option("run", "Name of the first training run", "baseline", check=_run_name_error),
        Option("install", "pip requirement of rlgen for the repository's CI and the data image, "
                          "optionally with --index-url URL (e.g. 'rlgen @ git+https://host/rlgen.git@v0.1.0'; "
                          "default: where this rlgen was installed from)",
               install.DEFAULT, check=install.install_error),
        Option("plugin_packages", "pip requirements of the plugin distributions rlgen does not ship, installed "
                                  "beside rlgen by the CI and the data image, as a list "
                                  "('[\"my-plugin==1.2.0\"]'; default: where each was installed from)",
               (), install.requirement_list, check=install.requirements_error),
        Option("network", "NCCL between GPU nodes: tcp (pod network), rdma (ACK Lingjun, "
               "ack-rdma-device-plugin) or erdma (ACK eRDMA controller)", "tcp", choices=NETWORKS),
        Option("rdma_host_network", "With network=rdma: GPU pods on the host network (false only when "
               "ack-rdma-device-plugin enables RDMA for non-hostNetwork pods)", True, bool),
        Option("gang_scheduling", "Start a run's pods all or none: off, volcano (KubeRay --batch-scheduler=volcano) "
               "or coscheduling (ACK's kube-scheduler Gang scheduling)", "off", choices=GANG_SCHEDULERS),
        Option("queue", "Volcano queue of the runs (gang_scheduling=volcano)", "", check=_label_value_error),
        Option("priority_class", "PriorityClass of the runs' pods (gang_scheduling=volcano)", "",
               check=_label_value_error),
    ),
)
