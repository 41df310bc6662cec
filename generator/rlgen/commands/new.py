"""``rlgen new``: generate a repository, then git init and commit it."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from rlgen.output import ask_option, output_option, resolve_output, to_json


@click.command("new")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--plugin", "plugins", multiple=True, metavar="NAME", help="Plugin for its slot (repeatable).")
@click.option("--set", "sets", multiple=True, metavar="PLUGIN.OPTION=VALUE", help="Set a plugin option (repeatable).")
@click.option("--cluster", help="Cluster name (same as --set rlgen.cluster=NAME).")
@click.option("--no-input", is_flag=True, help="Never prompt; a missing required option is an error.")
@click.option("--template", metavar="PATH_OR_GIT_URL",
              help="The team's cookiecutter template: its files join the repository (rlgen's own win a clash).")
@click.option("--template-ref", metavar="REF", help="Branch, tag or commit of --template (default: the newest commit).")
@output_option()
def command(directory: Path, plugins, sets, cluster, no_input, template, template_ref, output):
    """Generate a repository in DIRECTORY, then git init and commit it."""
    from rlgen.new.create import create

    interactive = not no_input and sys.stdin.isatty()
    created = create(directory, list(plugins), list(sets), cluster, template, template_ref,
                     ask_option if interactive else None, warn=lambda line: click.echo(line, err=True))
    if resolve_output(output) == "json":
        click.echo(to_json({"directory": str(created.target), "files": created.files, "plugins": created.plugins,
                            "run": created.run, "rayjob": created.rayjob, "images": list(created.images)}))
        return
    click.echo(f"Created {directory} ({created.files} files; first run '{created.run}' -> RayJob {created.rayjob}).")
    click.echo(f"Images to build before the first sync: {', '.join(created.images)} "
               "(the images workflow pushes them; by hand: bash images/build.sh).")
