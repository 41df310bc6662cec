"""Everything a plugin may use, in one module: ``from rlgen.plugin_api import hookimpl, ...``.

The hooks themselves, with their call semantics and examples, are in :mod:`rlgen.hookspecs`.
What is not here is rlgen's inside and may change in any release; the built-in plugins
(``rlgen_plugins``) import from nothing else either.
"""
from __future__ import annotations

from rlgen.contributions import CREATES_ANNOTATION, NAMESPACE_ANNOTATION, SLOTS, ConfigFile, Context
from rlgen.contributions import DatasetFormat, Document, Finding, ImageBuild, Layer, Option, Patch, PluginInfo, Problem
from rlgen.contributions import OPTIONAL_SECRETS_FOLDER, SECRETS_FOLDER, Rendered, Resource, SecretDelivery, SecretRef
from rlgen.contributions import Stage, TrainingImage, UPSTREAM_FOLDER, UpstreamSource, row_text
from rlgen.hookspecs import hookimpl
from rlgen.naming import dns1035_label_error, dns1123_label_error, image_host, is_example_host, url_host
from rlgen.option_checks import (
    control_error,
    credential_error,
    duration_error,
    endpoint_error,
    endpoint_region_error,
    git_branch_error,
    git_url_error,
    hub_id_error,
    image_reference_error,
    int_range,
    number_range,
    oss_bucket_error,
    pip_requirement_error,
    ram_arn_error,
    region_error,
    REGION_IDS,
    registry_error,
    repo_path_error,
    revision_error,
    same_account_error,
    uri_error,
)
from rlgen.pool import Pool, fit_problems, quota_problems
from rlgen.pool import of as node_pool
from rlgen.spec import Spec, Volume, in_mainland_china
from rlgen.tools.toolchain_pins import tested_version
from rlgen.verl import releases as _releases  # private: the names here are plugin authors' API
from rlgen.verl.releases import Release


def verl_release(spec: Spec) -> Release:
    """What depends on the repository's verl release (answer ``rlgen.verl``): its dependency
    images (``base_image(engine)``), the tool ``config.type`` (``tool_type``), agent loops."""
    return _releases.get(spec.verl_version)


def rrsa_provider(ctx: Context) -> str:
    """The cluster's RRSA OIDC provider (``acs:ram::<account-id>:oidc-provider/ack-rrsa-<cluster-id>``)
    when a selected plugin was given it (an option ``oidc_provider_arn``, as external-secrets asks),
    else "": a trust policy then names the account and the cluster instead of placeholders."""
    for name in sorted(ctx.plugins.values()):
        value = ctx.options(name).get("oidc_provider_arn") or ""
        if value and not ram_arn_error(value, "oidc-provider"):
            return value
    return ""

__all__ = [
    # Decorate each hook implementation.
    "hookimpl",
    # What hooks receive and return (rlgen.contributions).
    "SLOTS", "ConfigFile", "Context", "DatasetFormat", "Document", "Layer", "Option", "Patch", "PluginInfo",
    "Problem", "Resource", "SecretDelivery", "SecretRef", "Stage", "TrainingImage", "UpstreamSource", "ImageBuild",
    "SECRETS_FOLDER", "OPTIONAL_SECRETS_FOLDER",
    "UPSTREAM_FOLDER",
    # What rlgen_validate_rules reads and returns.
    "Finding", "Rendered",
    "NAMESPACE_ANNOTATION", "CREATES_ANNOTATION",
    # The shared names and paths a plugin reads from ctx.spec; whether a region is in mainland
    # China (Option(required_when=("rlgen.region", in_mainland_china))).
    "Spec", "Volume", "in_mainland_china",
    # The GPU node pool of the answers (node_pool(ctx.spec): ACK's labels and taints, a node's
    # size) and why a run of a given size could never start on it or under a GPU limit.
    "Pool", "node_pool", "fit_problems", "quota_problems",
    # The repository's verl release: verl_release(ctx.spec).
    "Release", "verl_release",
    # A dataset row's text for map_row: a null, a list or blank text raises ValueError (the row
    # is dropped and counted).
    "row_text",
    # The cluster's RRSA OIDC provider when an answer names it; the release of an upstream program
    # rlgen's tests run (toolchain/<folder>), which a README installs.
    "rrsa_provider", "tested_version",
    # Checks for Option(check=...): each returns an error message or None.
    "control_error", "credential_error", "duration_error", "endpoint_error", "git_branch_error", "git_url_error",
    "hub_id_error", "image_reference_error", "int_range", "number_range", "oss_bucket_error",
    "pip_requirement_error", "region_error", "registry_error", "repo_path_error", "revision_error", "uri_error",
    # Checks for Option(cross_check=...), against the answers before it; the region ids region_error knows.
    "endpoint_region_error", "ram_arn_error", "same_account_error", "REGION_IDS",
    # Kubernetes name rules and hosts (the Git host's kind is ctx.spec.git_host: its name or rlgen.git_host).
    "dns1035_label_error", "dns1123_label_error", "image_host", "is_example_host", "url_host",
]
