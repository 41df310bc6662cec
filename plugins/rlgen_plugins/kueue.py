"""Queue plugin: Kueue admits a run as a whole when the team's GPU quota has room for it, and
queues it (no pod at all) until then.

Every RayJob carries ``kueue.x-k8s.io/queue-name``; Kueue's RayJob integration suspends a
labelled RayJob when it is created (its mutating webhook) and lets it start once its Workload is
admitted. The repository never writes ``spec.suspend``: Kueue owns that field, and a value in Git
would be applied again by the sync engine over Kueue's. The queue objects:

- a ResourceFlavor of the GPU node pool (the labels and taints ACK and the team put on its nodes,
  rlgen.node_pool), holding the GPU quota;
- a ResourceFlavor of any node for cpu and memory, which Kueue also counts: it admits only a
  workload whose every resource its ClusterQueue covers;
- the team's ClusterQueue (named after the training namespace), which admits by Kueue's
  admission fair sharing (``admissionScope``): the LocalQueue that used the pool least lately
  goes first;
- one LocalQueue per researchers' team (``kueue.teams``), which ``rlgen run new/sweep --team``
  name on a run, and the LocalQueue ``runs`` of the runs no team claims (made before the teams
  were answered).

Kueue is installed on the cluster by its administrator, with the ``ray.io/rayjob`` integration
on; ``rlgen doctor`` checks it.
"""
from __future__ import annotations

from rlgen.plugin_api import (Finding, Layer, Option, Patch, PluginInfo, Problem, Resource, dns1123_label_error,
                              hookimpl, int_range, node_pool, quota_problems, tested_version)

NAME = "kueue"
#: Where Kueue publishes its Helm chart (its charts/kueue/README.md).
CHART = "oci://registry.k8s.io/kueue/charts/kueue"
API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: The LocalQueue every run names, in the training namespace.
LOCAL_QUEUE = "runs"
GPU = "nvidia.com/gpu"
#: Admission fair sharing orders the ClusterQueue's workloads by their LocalQueue's recent use
#: (kueue v0.17.1 apis/kueue/v1beta2 AdmissionScope; Kueue's Configuration must turn it on).
FAIR_SHARING = {"admissionMode": "UsageBasedAdmissionFairSharing"}
#: What the Kueue Configuration needs for it, with the chart's own example values: usage halves
#: in a week and is sampled every 5 minutes; only GPUs count (cpu and memory have no real quota).
MANAGER_CONFIG = {"usageHalfLifeTime": "168h", "usageSamplingInterval": "5m",
                  "resourceWeights": {"cpu": 0, "memory": 0, "nvidia.com/gpu": 1}}
#: A quota no pool reaches: cpu and memory must be covered, the team's limit is its GPUs.
UNBOUNDED = {"cpu": "1M", "memory": "1000Ti"}


def _cohort_error(value: str) -> str | None:
    return None if value == "" else dns1123_label_error(value)


def teams_of(value: str) -> list[str]:
    """``kueue.teams`` as a list, in the order given."""
    return [t.strip() for t in value.split(",") if t.strip()]


def _teams_error(value: str) -> str | None:
    teams = teams_of(value)
    if not teams:
        return "name at least one team"
    for team in teams:
        if team == LOCAL_QUEUE:
            return f"'{LOCAL_QUEUE}' is the queue of runs no team claims: name the team otherwise"
        if problem := dns1123_label_error(team):
            return f"team '{team}': {problem}"
    if len(set(teams)) != len(teams):
        return "a team is named twice"
    return None


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="queue",
        summary="Kueue: runs wait in a queue, as a whole, until the team's GPU quota has room",
        options=(
            # Each cluster has its own pool: rlgen cluster add asks its quota again, and only that
            # cluster's platform stage patches the shared ClusterQueue with it.
            Option("gpu_quota", "GPUs of the node pool the team's runs may hold at once", None, int,
                   required=True, check=int_range(1), per_cluster=True),
            # Whose runs share the pool is the team's to say: asked, never defaulted.
            Option("teams", "Researchers' teams (or researchers) sharing the pool, comma-separated: each gets a "
                   "LocalQueue, and Kueue admits the queue that used the pool least lately first", None,
                   required=True, check=_teams_error),
            Option("cohort", "Kueue cohort shared with other teams' ClusterQueues, to lend idle GPUs and "
                   "borrow theirs (empty: no borrowing)", "", check=_cohort_error),
            Option("borrowing_limit", "GPUs the team may borrow from its cohort at most (needs cohort)", 0, int,
                   check=int_range(0)),
        ),
    )


def cluster_queue(ctx) -> str:
    return ctx.spec.namespace


def flavors(ctx) -> tuple[str, str]:
    """The GPU nodes' flavor and the any-node one: cluster-scoped, so named for the team."""
    return f"{ctx.spec.namespace}-{ctx.spec.node_pool}-gpu", f"{ctx.spec.namespace}-any-node"


@hookimpl
def rlgen_check(ctx):
    spec, options = ctx.spec, ctx.options(NAME)
    problems = []
    if spec.gang_scheduling != "off":
        problems.append(Problem(
            f"rlgen.gang_scheduling={spec.gang_scheduling} and the kueue queue: Kueue already admits a run whole "
            "(quota for all its pods) or holds it without pods; set rlgen.gang_scheduling=off", (NAME, "rlgen")))
    if spec.network != "tcp":
        problems.append(Problem(
            f"rlgen.network={spec.network} and the kueue queue: the ClusterQueue does not cover the network "
            "device resource, so Kueue would never admit a run; use rlgen.network=tcp", (NAME, "rlgen")))
    if options["borrowing_limit"] and not options["cohort"]:
        problems.append(Problem("kueue.borrowing_limit needs kueue.cohort: GPUs are borrowed from a cohort",
                                (NAME,)))
    return problems


@hookimpl
def rlgen_resources(ctx):
    options = ctx.options(NAME)
    gpu_flavor, any_flavor = flavors(ctx)
    pool = node_pool(ctx.spec)
    queue_spec = _queue_spec(ctx, options, gpu_flavor, any_flavor)
    objects = [
        ("resource-flavor-gpu.yaml", {
            "apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": gpu_flavor},
            "spec": {"nodeLabels": pool.selector(), **({"nodeTaints": pool.taint_list()} if pool.taint_list() else {})}},
         f"The GPU node pool ({pool.kind.summary}): the labels ACK and the team put on its nodes.\n"
         "Kueue adds them to the nodeSelector of the pods it admits on this flavor (the GPU\n"
         "workers, which select them already); they tolerate its taints."),
        ("resource-flavor-any.yaml", {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": any_flavor}},
         "Any node: cpu and memory, counted but not the team's limit. No node label, so the\n"
         "head and the submitter keep the nodes they schedule to without Kueue."),
        ("cluster-queue.yaml", {"apiVersion": API, "kind": "ClusterQueue",
                                "metadata": {"name": cluster_queue(ctx)}, "spec": queue_spec},
         f"The team's quota: {options['gpu_quota']} GPUs of the node pool"
         + (f", lending idle ones to cohort {options['cohort']} and borrowing at most "
            f"{options['borrowing_limit']}" if options["cohort"] else ", no borrowing") + ".\n"
         "Kueue admits only a workload whose every resource a ClusterQueue covers: cpu and memory\n"
         "have a quota no pool reaches."),
        ("local-queue.yaml", _local_queue(ctx, LOCAL_QUEUE),
         "The queue of a run no team claims (label kueue.x-k8s.io/queue-name): one made before\n"
         "kueue.teams was answered. It shares the pool as one more team."),
        *((f"local-queue-{team}.yaml", _local_queue(ctx, team),
           f"Team {team}'s queue: rlgen run new/sweep --team {team} puts a run here. Kueue admits\n"
           "from the LocalQueue that used the pool least lately (admission fair sharing), so one\n"
           "team's sweep cannot hold the pool while another team's runs wait.")
          for team in teams_of(options["teams"])),
    ]
    return [Resource(Layer.PLATFORM, path, obj, comment) for path, obj, comment in objects]


def _local_queue(ctx, name: str) -> dict:
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": ctx.spec.namespace},
            "spec": {"clusterQueue": cluster_queue(ctx)}}


def _queue_spec(ctx, options, gpu_flavor: str, any_flavor: str) -> dict:
    gpu = {"name": GPU, "nominalQuota": options["gpu_quota"]}
    if options["cohort"]:
        gpu["borrowingLimit"] = options["borrowing_limit"]
    queue_spec = {
        # Only the training namespace's LocalQueue feeds this ClusterQueue.
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ctx.spec.namespace}},
        # The teams' LocalQueues share the quota by their recent use, not by who queued first.
        "admissionScope": dict(FAIR_SHARING),
        "resourceGroups": [
            {"coveredResources": [GPU], "flavors": [{"name": gpu_flavor, "resources": [gpu]}]},
            {"coveredResources": list(UNBOUNDED),
             "flavors": [{"name": any_flavor,
                          "resources": [{"name": k, "nominalQuota": v} for k, v in UNBOUNDED.items()]}]},
        ],
    }
    if options["cohort"]:
        queue_spec = {"cohortName": options["cohort"], **queue_spec}
    return queue_spec


@hookimpl
def rlgen_patches(ctx):
    label = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": ctx.spec.rayjob_name, "labels": {
        QUEUE_LABEL: LOCAL_QUEUE}}}
    return [Patch(Layer.TRAINING, {"group": "ray.io", "kind": "RayJob"}, label, "rayjob-queue",
                  "Kueue suspends the RayJob when it is created and starts it once the quota has room.\n"
                  "spec.suspend is Kueue's: never set it here, the sync engine would undo Kueue's.")]


def _install() -> str:
    version = tested_version("kueue")
    weights = "".join(f"\n        {k}: {v}" for k, v in MANAGER_CONFIG["resourceWeights"].items())
    return (f"Install Kueue {version} (the release rlgen's tests run) after KubeRay, so that the RayJob kind is "
            "served when it starts: the chart's default configuration turns the `ray.io/rayjob` integration on "
            "(values `managerConfig.controllerManagerConfigYaml`, `integrations.frameworks`). The teams' queues share "
            "the pool by admission fair sharing, which Kueue's Configuration turns on: in a copy of the chart's "
            "`values.yaml`, add to `managerConfig.controllerManagerConfigYaml` the block the chart leaves "
            "commented out (GPUs alone counted):\n\n```yaml\n"
            f"    admissionFairSharing:\n      usageHalfLifeTime: \"{MANAGER_CONFIG['usageHalfLifeTime']}\"\n"
            f"      usageSamplingInterval: \"{MANAGER_CONFIG['usageSamplingInterval']}\"\n"
            f"      resourceWeights:{weights}\n```\n\n```sh\n"
            f"helm install kueue {CHART} --version {version.removeprefix('v')} --namespace kueue-system "
            "--create-namespace --values values.yaml\n```")


@hookimpl
def rlgen_readme(ctx):
    options = ctx.options(NAME)
    teams = teams_of(options["teams"])
    return [
        "## The queue\n"
        f"Runs wait in Kueue's queue: ClusterQueue `{cluster_queue(ctx)}` holds {options['gpu_quota']} GPUs of the "
        f"node pool. Each team has its LocalQueue in `{ctx.spec.namespace}` ({', '.join(f'`{t}`' for t in teams)}; "
        f"`{LOCAL_QUEUE}` holds runs no team claims): `rlgen run new NAME --team TEAM` and `rlgen run sweep` put a "
        "run in its team's queue, and Kueue admits from the queue that used the pool least lately, so one team's "
        "sweep cannot hold the pool while another team's runs wait. A merged run that does not "
        "fit waits, suspended and without pods, until a running one ends; `rlgen status` shows its place in the "
        "queue. `rlgen run new NAME --priority CLASS` names a WorkloadPriorityClass of the cluster for one run. "
        "\n\n" + _install() + "\n\nThe quota is the cluster's own: `rlgen cluster add NAME --env ENV --set kueue.gpu_quota=GPUS` gives "
        "another cluster its pool's, which only that cluster's platform stage applies (*Clusters and environments*)."
    ]


def gpu_limit(options) -> tuple[int, str]:
    """The most GPUs Kueue ever admits one run with: the quota and what it may borrow."""
    borrow = options["borrowing_limit"] if options["cohort"] else 0
    note = f" = kueue.gpu_quota {options['gpu_quota']} + kueue.borrowing_limit {borrow}" if borrow else \
        " of kueue.gpu_quota"
    return options["gpu_quota"] + borrow, note


@hookimpl
def rlgen_validate_rules(ctx, objects):
    """A run larger than the quota and what it may borrow: Kueue keeps it queued for ever
    ("> maximum capacity", kueue v0.17.1 pkg/scheduler/flavorassigner)."""
    limit, note = gpu_limit(ctx.options(NAME))
    out = []
    for item in objects:
        if item.obj.get("kind") != "RayJob" or item.trainer_config is None:
            continue
        trainer = item.trainer_config.get("trainer") or {}
        nnodes, per_node = int(trainer.get("nnodes") or 0), int(trainer.get("n_gpus_per_node") or 0)
        out += [Finding(item.source, item.label, line) for line in quota_problems(nnodes, per_node, limit, note)]
    return out
