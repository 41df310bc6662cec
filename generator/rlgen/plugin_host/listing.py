"""What ``rlgen plugins`` shows: rlgen's own options (``--set rlgen.NAME=...``), then every
installed plugin by slot, each option with its type, what it allows, its default and its help."""
from __future__ import annotations

from rich.markup import escape

from rlgen.output import console as rich_console
from rlgen.output import to_json
from rlgen.plugin_host.discovery import discover
from rlgen.plugin_host.core_options import CORE
from rlgen.plugin_info import DEFAULT_PLUGINS, SLOTS, Option

_TYPES = {str: "text", int: "integer", float: "number", bool: "true or false"}


def option_row(o: Option) -> dict:
    """One option as ``rlgen plugins -o json`` lists it."""
    kind = _TYPES.get(o.type) or ("list" if isinstance(o.default, (list, tuple)) else o.type.__name__)
    allowed = f"one of {', '.join(o.choices)}" if o.choices else getattr(o.check, "allowed", None)
    return {"name": o.name, "type": kind, "allowed": allowed,
            "default": list(o.default) if isinstance(o.default, tuple) else o.default,
            "required": o.required, "required_when": _condition(o.required_when), "help": o.help}


def _condition(required_when) -> str | None:
    """``("auth", "rrsa")`` as "auth=rrsa"; a test of the value by its name: "region in mainland china"."""
    if required_when is None:
        return None
    name, value = required_when
    return f"{name} {value.__name__.replace('_', ' ')}" if callable(value) else f"{name}={value}"


def rows() -> list[dict]:
    installed = discover()
    ordered = sorted(installed.values(), key=lambda i: (SLOTS.index(i.info.slot), i.info.name))
    return [{"slot": item.info.slot, "name": item.info.name, "version": item.version,
             "default": DEFAULT_PLUGINS.get(item.info.slot) == item.info.name, "summary": item.info.summary,
             "options": [option_row(o) for o in item.info.options]}
            for item in ordered]


def show(fmt: str) -> None:
    data = rows()
    core = [option_row(o) for o in CORE.options]
    if fmt == "json":
        print(to_json({"plugins": data, "core_options": core}))
        return
    console = rich_console(highlight=False, soft_wrap=True)
    console.print(f"[bold]rlgen[/bold]: {escape(CORE.summary)}, rlgen's own (every repository has them)")
    _options(console, CORE.name, core)
    slot = None
    for row in data:
        if row["slot"] != slot:
            slot = row["slot"]
            console.print(f"\n[bold]{slot}[/bold]")
        mark = " [green](default)[/green]" if row["default"] else ""
        console.print(f"  [bold cyan]{row['name']}[/bold cyan] {row['version']}{mark}: {escape(row['summary'])}")
        _options(console, row["name"], row["options"])


def _options(console, plugin: str, options: list[dict]) -> None:
    for o in options:
        value = "REQUIRED" if o["required"] and o["default"] is None else \
            f"REQUIRED when {o['required_when']}" if o["required_when"] else repr(o["default"])
        what = o["type"] + (f", {o['allowed']}" if o["allowed"] else "")
        console.print(f"      --set {plugin}.{o['name']}={escape(value)}  [dim]({escape(what)})[/dim]")
        console.print(f"          [dim]{escape(o['help'])}[/dim]")
