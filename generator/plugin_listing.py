"""``rlgen plugins``: what is installed, by slot."""
from __future__ import annotations

import json

from rlgen.contributions import SLOTS
from rlgen.selection import CORE, DEFAULT_PLUGINS, discover


def rows() -> list[dict]:
    installed = discover()
    ordered = sorted(installed.values(), key=lambda i: (SLOTS.index(i.info.slot), i.info.name))
    out = []
    for item in ordered:
        info = item.info
        out.append({
            "slot": info.slot,
            "name": info.name,
            "version": item.version,
            "default": DEFAULT_PLUGINS.get(info.slot) == info.name,
            "summary": info.summary,
            "options": [{"name": o.name, "default": o.default, "required": o.required, "help": o.help}
                        for o in info.options],
        })
    return out


def show(fmt: str) -> None:
    data = rows()
    if fmt == "json":
        core = [{"name": o.name, "default": o.default, "help": o.help} for o in CORE.options]
        print(json.dumps({"plugins": data, "core_options": core}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="rlgen plugins (--plugin NAME, --set NAME.OPTION=VALUE)")
    for column in ("slot", "plugin", "version", "summary", "options (default)"):
        table.add_column(column)
    for row in data:
        options = "\n".join(f"{o['name']}" + (" (required)" if o["required"] and o["default"] is None
                                               else f" = {o['default']!r}") for o in row["options"])
        name = row["name"] + (" *" if row["default"] else "")
        table.add_row(row["slot"], name, row["version"], row["summary"], options)
    Console().print(table)
    Console().print("* default for its slot")
