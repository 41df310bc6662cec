"""What ``rlgen plugins`` shows: every installed plugin by slot, with its options and defaults."""
from __future__ import annotations

from rich.markup import escape

from rlgen.output import console as rich_console
from rlgen.output import to_json
from rlgen.plugin_host.discovery import discover
from rlgen.plugin_host.core_options import CORE
from rlgen.plugin_info import DEFAULT_PLUGINS, SLOTS


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
            "options": [{"name": o.name, "default": o.default, "required": o.required,
                         "required_when": "=".join(map(str, o.required_when)) if o.required_when else None,
                         "help": o.help}
                        for o in info.options],
        })
    return out


def show(fmt: str) -> None:
    data = rows()
    if fmt == "json":
        core = [{"name": o.name, "default": o.default, "help": o.help} for o in CORE.options]
        print(to_json({"plugins": data, "core_options": core}))
        return
    console = rich_console(highlight=False, soft_wrap=True)
    slot = None
    for row in data:
        if row["slot"] != slot:
            slot = row["slot"]
            console.print(f"\n[bold]{slot}[/bold]")
        mark = " [green](default)[/green]" if row["default"] else ""
        console.print(f"  [bold cyan]{row['name']}[/bold cyan] {row['version']}{mark}: {escape(row['summary'])}")
        for o in row["options"]:
            value = "REQUIRED" if o["required"] and o["default"] is None else \
                f"REQUIRED when {o['required_when']}" if o["required_when"] else repr(o["default"])
            console.print(f"      --set {row['name']}.{o['name']}={escape(value)}")
            console.print(f"          [dim]{escape(o['help'])}[/dim]")
