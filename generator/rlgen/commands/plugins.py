"""``rlgen plugins``: what is installed, by slot."""
from __future__ import annotations

import click

from rlgen.output import output_option, resolve_output


@click.command("plugins")
@output_option()
def command(output):
    """List installed plugins by slot, with their options and defaults."""
    from rlgen.plugin_host import listing

    listing.show(resolve_output(output))
