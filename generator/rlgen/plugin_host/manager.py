"""The one door inside rlgen to the plugins' hooks: one method per hook of
:mod:`rlgen.hookspecs`, so no caller names a hook by string or orders results itself.

- Results come in slot order (``contributions.SLOTS``), whatever order pluggy would call
  the plugins in: each plugin's implementation is called in turn.
- A *first result* hook is answered by the plugin of the slot :data:`hookspecs.FIRST_RESULT`
  gives it; any other plugin that answers it is refused, naming both plugins, and so is a
  selection whose owning plugin returns nothing.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import pluggy

from rlgen import contributions, hookspecs
from rlgen.errors import PluginFailed, RlgenError


def plugin_manager(plugins: Iterable[tuple[str, Any]]) -> pluggy.PluginManager:
    """A plugin manager holding ``(name, module)`` pairs; a misspelled or mistyped hook fails
    here, naming the plugin."""
    pm = pluggy.PluginManager("rlgen")
    pm.add_hookspecs(hookspecs)
    for name, module in plugins:
        pm.register(module, name=name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise RlgenError(f"plugin error: {' '.join(str(exc).split())}") from None
    return pm


def describe(modules: Mapping[str, Any]) -> dict[str, contributions.PluginInfo | None]:
    """``rlgen_plugin()`` of every installed plugin module, by name, selected or not."""
    describer = Describer()
    return {name: describer(name, module) for name, module in modules.items()}


class Describer:
    """``rlgen_plugin()`` of plugin modules one at a time, as they are loaded, all checked by
    one plugin manager (making one reads every hook specification)."""

    def __init__(self) -> None:
        self._pm = plugin_manager(())

    def __call__(self, name: str, module: Any) -> contributions.PluginInfo | None:
        try:
            self._pm.register(module, name=name)
            self._pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise RlgenError(f"plugin error: {' '.join(str(exc).split())}") from None
        impl = next((i for i in self._pm.hook.rlgen_plugin.get_hookimpls() if i.plugin_name == name), None)
        return _call("rlgen_plugin", impl, {}) if impl else None


class Hooks:
    """The hooks of the plugins filling ``slots`` (slot -> ``(plugin name, module)``)."""

    def __init__(self, slots: Mapping[str, tuple[str, Any]]):
        ordered = sorted(slots.items(), key=lambda item: contributions.SLOTS.index(item[0]))
        self._owner = {slot: name for slot, (name, _) in ordered}
        self._order = list(self._owner.values())
        self._pm = plugin_manager(plugin for _, plugin in ordered)

    # -- hooks whose results are merged, in slot order
    def check(self, ctx: contributions.Context) -> list[contributions.Problem]:
        return self._items("rlgen_check", ctx=ctx)

    def trainer_config(self, ctx: contributions.Context) -> list[dict]:
        return [fragment for _, fragment in self._answers("rlgen_trainer_config", ctx=ctx) if fragment]

    def tools(self, ctx: contributions.Context) -> list[dict]:
        return self._items("rlgen_tools", ctx=ctx)

    def config_files(self, ctx: contributions.Context) -> list[contributions.ConfigFile]:
        return self._items("rlgen_config_files", ctx=ctx)

    def resources(self, ctx: contributions.Context) -> list[tuple[str, list[contributions.Resource]]]:
        """Each plugin's resources, by plugin: each plugin's go to Components of its own."""
        return [(plugin, list(items)) for plugin, items in self._answers("rlgen_resources", ctx=ctx)]

    def patches(self, ctx: contributions.Context) -> list[tuple[str, list[contributions.Patch]]]:
        return [(plugin, list(items)) for plugin, items in self._answers("rlgen_patches", ctx=ctx)]

    def training_packages(self, ctx: contributions.Context) -> list[str]:
        return self._items("rlgen_training_packages", ctx=ctx)

    def upstream_sources(self, ctx: contributions.Context) -> list[contributions.UpstreamSource]:
        return self._items("rlgen_upstream_sources", ctx=ctx)

    def files(self, ctx: contributions.Context) -> list[dict[str, str]]:
        return [files for _, files in self._answers("rlgen_files", ctx=ctx)]

    def images(self, ctx: contributions.Context) -> list[tuple[str, list[contributions.ImageBuild]]]:
        """Each plugin's images, by plugin: a tag that does not follow its folder names the plugin."""
        return [(plugin, list(items)) for plugin, items in self._answers("rlgen_images", ctx=ctx)]

    def secrets(self, ctx: contributions.Context) -> list[contributions.SecretRef]:
        return self._items("rlgen_secrets", ctx=ctx)

    def readme(self, ctx: contributions.Context) -> list[str]:
        return self._items("rlgen_readme", ctx=ctx)

    def validate_rules(self, ctx: contributions.Context,
                       objects: list[contributions.Rendered]) -> list[contributions.Finding]:
        return self._items("rlgen_validate_rules", ctx=ctx, objects=objects)

    def migrate(self, plugin: str, ctx: contributions.Context, from_version: str, to_version: str,
                files: Mapping[str, str]) -> dict[str, str | None]:
        """``plugin``'s own migration (the hook is called on that plugin only)."""
        answers = self._answers("rlgen_migrate", only=plugin, ctx=ctx, from_version=from_version,
                                to_version=to_version, files=files)
        return dict(answers[0][1]) if answers else {}

    # -- first-result hooks: the owning slot's plugin answers
    def training_image(self, ctx: contributions.Context) -> contributions.TrainingImage:
        return self._first("rlgen_training_image", ctx=ctx)

    def sync_files(self, ctx: contributions.Context,
                   stages: list[contributions.Stage]) -> dict[str, list[contributions.Document]]:
        return self._first("rlgen_sync_files", ctx=ctx, stages=stages)

    def dataset_format(self) -> contributions.DatasetFormat:
        return self._first("rlgen_dataset_format")

    def secret_delivery(self, ctx: contributions.Context,
                        secrets: list[contributions.SecretRef]) -> contributions.SecretDelivery:
        return self._first("rlgen_secret_delivery", ctx=ctx, secrets=secrets)

    # -- the one way hooks are called
    def _answers(self, hook: str, only: str | None = None, **kwargs) -> list[tuple[str, Any]]:
        """``(plugin, result)`` of every plugin implementing ``hook``, in slot order, ``None`` left out."""
        impls = {impl.plugin_name: impl for impl in getattr(self._pm.hook, hook).get_hookimpls()}
        answers = []
        for plugin in self._order if only is None else [only]:
            if plugin in impls and (result := _call(hook, impls[plugin], kwargs)) is not None:
                answers.append((plugin, result))
        return answers

    def _items(self, hook: str, **kwargs) -> list:
        return [item for _, batch in self._answers(hook, **kwargs) for item in batch or []]

    def _first(self, hook: str, **kwargs):
        slot = hookspecs.FIRST_RESULT[hook]
        owner = self._owner.get(slot)
        answers = self._answers(hook, **kwargs)
        for plugin, _ in answers:
            if plugin != owner:
                theirs = next((s for s, name in self._owner.items() if name == plugin), "no")
                raise RlgenError(f"plugin '{plugin}' ({theirs} slot) answers {hook}(), which only the {slot} "
                                 f"plugin '{owner}' may answer")
        if not answers:
            raise RlgenError(f"{slot} plugin '{owner}' returns no {hook}()")
        return answers[0][1]


def _call(hook: str, impl, kwargs: Mapping[str, Any]) -> Any:
    # As pluggy calls an implementation: only the arguments it names, in its order.
    try:
        return impl.function(*(kwargs[name] for name in impl.argnames))
    except RlgenError:
        raise
    except Exception as exc:  # the plugin's bug, not rlgen's: name the plugin and the hook
        raise PluginFailed(impl.plugin_name, hook, exc) from exc
