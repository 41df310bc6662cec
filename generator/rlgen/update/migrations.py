"""Plugins' own migrations (hook ``rlgen_migrate``), for plugins whose version changed since the
repository was rendered."""
from __future__ import annotations

from dataclasses import dataclass

from rlgen.errors import RlgenError
from rlgen.plugin_host.selection import Selection


@dataclass(frozen=True)
class Migration:
    plugin: str
    from_version: str
    to_version: str


def pending(selection: Selection, recorded_versions: dict[str, str]) -> list[Migration]:
    """Selected plugins that were in the last render at another version (none for a repository
    whose ``rlgen.yaml`` records no versions)."""
    found = []
    for name in selection.plugins.values():
        old, new = recorded_versions.get(name), selection.installed[name].version
        if old is not None and old != new:
            found.append(Migration(name, old, new))
    return found


def apply(selection: Selection, ctx, migrations: list[Migration], files: dict[str, bytes]) -> dict[str, bytes | None]:
    """The changes the plugins' migrations make to ``files``, applied in slot order."""
    hooks = selection.hooks()
    current = {p: d.decode("utf-8") for p, d in files.items() if _is_text(d)}
    changes: dict[str, bytes | None] = {}
    for m in migrations:
        for path, text in hooks.migrate(m.plugin, ctx, m.from_version, m.to_version, dict(current)).items():
            if text is not None and not isinstance(text, str):
                raise RlgenError(f"plugin '{m.plugin}' migration returns {type(text).__name__} for {path}")
            changes[path] = None if text is None else text.encode()
            if text is None:
                current.pop(path, None)
            else:
                current[path] = text
    return changes


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
