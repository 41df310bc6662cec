"""``rlgen plugins``: what is installed, by slot."""
from __future__ import annotations

import click

from rlgen.output import output_option, resolve_output, to_json


@click.command("plugins")
@output_option()
def command(output):
    """List installed plugins by slot, with their options and defaults."""
    show(resolve_output(output))


def rows() -> list[dict]:
    from rlgen.contributions import SLOTS
    from rlgen.plugin_host.discovery import DEFAULT_PLUGINS, discover

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
        from rlgen.plugin_host.selection import CORE

        core = [{"name": o.name, "default": o.default, "help": o.help} for o in CORE.options]
        print(to_json({"plugins": data, "core_options": core}))
        return
    from rich.markup import escape

    from rlgen.output import console as rich_console

    console = rich_console(highlight=False, soft_wrap=True)
    slot = None
    for row in data:
        if row["slot"] != slot:
            slot = row["slot"]
            console.print(f"\n[bold]{slot}[/bold]")
        mark = " [green](default)[/green]" if row["default"] else ""
        console.print(f"  [bold cyan]{row['name']}[/bold cyan] {row['version']}{mark}: {escape(row['summary'])}")
        for o in row["options"]:
            value = "REQUIRED" if o["required"] and o["default"] is None else repr(o["default"])
            console.print(f"      --set {row['name']}.{o['name']}={escape(value)}")
            console.print(f"          [dim]{escape(o['help'])}[/dim]")
