"""Storage plugin: OSS volumes and dataset uploads authenticated by an AccessKey Secret."""
from __future__ import annotations

from rlgen.plugin_api import Option, PluginInfo, SecretRef, dns1123_label_error, hookimpl

from rlgen_plugins import _oss_volumes

NAME = "ak-storage"


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="storage",
        summary="OSS static volumes with an AccessKey Secret (created outside Git)",
        options=_oss_volumes.OPTIONS + (
            Option("secret_name", "Secret with keys akId and akSecret", "oss-credentials",
                   check=dns1123_label_error),
        ),
    )


@hookimpl
def rlgen_resources(ctx):
    o = ctx.options(NAME)
    auth = {"nodePublishSecretRef": {"name": o["secret_name"], "namespace": ctx.spec.namespace}}
    return _oss_volumes.volumes(ctx, o, auth)


@hookimpl
def rlgen_patches(ctx):
    o = ctx.options(NAME)

    def from_secret(var: str, key: str) -> dict:
        return {"name": var, "valueFrom": {"secretKeyRef": {"name": o["secret_name"], "key": key}}}

    env = _oss_volumes.pipeline_env(ctx, o) + [
        # The SDK's environment credentials provider reads these two variables.
        from_secret("OSS_ACCESS_KEY_ID", "akId"),
        from_secret("OSS_ACCESS_KEY_SECRET", "akSecret"),
    ]
    return [_oss_volumes.pipeline_patch(ctx, env, "The dataset Job uploads with the same AccessKey the volumes use.")]


@hookimpl
def rlgen_secrets(ctx):
    o = ctx.options(NAME)
    return [SecretRef(o["secret_name"], ctx.spec.namespace, ("akId", "akSecret"),
                      "OSS AccessKey pair (a RAM user limited to the bucket)",
                      "the OSS volumes (CSI driver) and the dataset Job")]
