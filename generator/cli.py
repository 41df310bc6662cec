"""The ``rlgen`` command line. Each command imports what it needs when it runs, so
``rlgen --help`` starts without loading datasets, the OSS SDK or cookiecutter."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from rlgen import __version__
from rlgen.errors import RlgenError

#: Command groups that live in their own modules, imported only when used.
LAZY_GROUPS = {
    "data": ("rlgen.data.cli", "data_group", "Prepare and upload the training dataset."),
    "run": ("rlgen.run_commands", "run_group", "Create, change, list and remove training runs."),
    "diff": ("rlgen.diff", "diff_command", "Compare the rendered manifests of two revisions."),
    "validate": ("rlgen.validation.command", "validate_command", "Render and validate every object."),
    "schemas": ("rlgen.crd_schemas", "schemas_group", "Convert CRDs into JSON schemas for validation."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted([*super().list_commands(ctx), *LAZY_GROUPS])

    def get_command(self, ctx, name):
        if name in LAZY_GROUPS:
            module, attr, _ = LAZY_GROUPS[name]
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def format_commands(self, ctx, formatter):
        rows = [(name, self.commands[name].get_short_help_str(80)) for name in super().list_commands(ctx)]
        rows += [(name, help_) for name, (_, _, help_) in LAZY_GROUPS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rlgen")
def cli():
    """Generate and evolve the GitOps repository of VeRL training jobs on ACK."""


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--plugin", "plugins", multiple=True, metavar="NAME", help="Plugin for its slot (repeatable).")
@click.option("--set", "sets", multiple=True, metavar="PLUGIN.OPTION=VALUE", help="Set a plugin option (repeatable).")
@click.option("--cluster", help="Cluster name (same as --set rlgen.cluster=NAME).")
@click.option("--no-input", is_flag=True, help="Never prompt; a missing required option is an error.")
def new(directory: Path, plugins, sets, cluster, no_input):
    """Generate a repository in DIRECTORY, then git init and commit it."""
    from rlgen import gitrepo, kustomize, runs
    from rlgen.filetree import check_target, staged
    from rlgen.pipeline import generate
    from rlgen.selection import discover, parse_sets, select

    target = directory.resolve()
    check_target(target)
    kustomize.command()
    answers = parse_sets(list(sets))
    if cluster:
        answers.setdefault("rlgen", {})["cluster"] = cluster
    interactive = not no_input and sys.stdin.isatty()
    selection = select(discover(), list(plugins), answers, _prompt if interactive else None)
    tree, spec, run = generate(selection)
    with staged(target) as tmp:
        tree.write(tmp)
        rayjob = runs.name_run(tmp, spec, run)
        plugins_line = ", ".join(f"{slot}={name}" for slot, name in selection.plugins.items())
        gitrepo.init_and_commit(tmp, f"Generate with rlgen {__version__}\n\nPlugins: {plugins_line}\n")
    click.echo(f"Created {directory} ({len(tree.files)} files; first run '{run}' -> RayJob {rayjob}).")


def _prompt(plugin: str, option) -> str:
    return click.prompt(f"{plugin}.{option.name} ({option.help})", type=str, err=True)


@cli.command()
@click.argument("target", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.option("--out", type=click.Path(path_type=Path), help="Write one file per root here instead of stdout.")
def render(target: Path, out):
    """Render TARGET (a kustomization root, or every root of a repository) with kustomize."""
    from rlgen.render import render_all

    for root, text in render_all(target):
        if out:
            dest = out / f"{'__'.join(root.parts) or 'root'}.yaml"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        else:
            click.echo(f"# Source: {root.as_posix()}\n---\n{text}", nl=False)


@cli.command("plugins")
@click.option("--output", type=click.Choice(["table", "json"]), default=None,
              help="Output format (default: a table on a terminal, json otherwise).")
def plugins_cmd(output):
    """List installed plugins by slot, with their options and defaults."""
    from rlgen.plugin_listing import show

    show(output or ("table" if sys.stdout.isatty() else "json"))


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="rlgen", standalone_mode=False)
    except RlgenError as exc:
        click.echo(f"rlgen: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("rlgen: aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"rlgen: error: {exc.format_message()}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("rlgen: interrupted", err=True)
        sys.exit(130)
