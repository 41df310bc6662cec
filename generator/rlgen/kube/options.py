"""The options every cluster command takes: which kubeconfig, which context, which output."""
from __future__ import annotations

from pathlib import Path

import click

from rlgen.output import output_option


def cluster_options(f):
    f = output_option()(f)
    f = click.option("--cluster", "repo_cluster", metavar="NAME",
                     help="Which of the repository's clusters (rlgen cluster list) this one is: only its entry "
                          "points (clusters/NAME/) and its environment's overlays are checked (default: every "
                          "cluster's).")(f)
    f = click.option("--context", help="kubeconfig context (default: the current one).")(f)
    f = click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False),
                     help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).")(f)
    return f


def header(cluster) -> dict:
    """What the output says it read: the server, the context and its Kubernetes version."""
    return {"server": cluster.target.server, "context": cluster.target.context, "kubernetes": cluster.version}
