"""``rlgen new``: generate a repository in memory, write it beside the target, commit it, and
move it into place with one rename."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from rlgen import __version__
from rlgen.output import output_option, resolve_output, to_json


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
    from concurrent.futures import Future, ThreadPoolExecutor
    from contextlib import ExitStack

    from rlgen.generate.filetree import check_target, empty_clone, staged
    from rlgen.generate.pipeline import generate
    from rlgen.generate.staged_rules import EarlyBuilds, refuse_failing
    from rlgen.plugin_host.discovery import discover
    from rlgen.plugin_host.selection import parse_sets, select
    from rlgen.errors import RlgenError
    from rlgen.option_checks import credential_error
    from rlgen.redaction import redact
    from rlgen.tools import git, kustomize

    target = directory.resolve()
    check_target(target)
    if template_ref is not None and template is None:
        raise RlgenError("--template-ref needs --template")
    if template is not None:
        from rlgen.generate import template_source

        template_source.check(template, template_ref)
    kustomize.command()
    answers = parse_sets(list(sets))
    if cluster:
        answers.setdefault("rlgen", {})["cluster"] = cluster
    if empty_clone(target) and (origin := git.origin_url(target)) and "git_url" not in answers.get("rlgen", {}):
        # The repository the sync engine pulls is the one being filled; a token in its origin
        # URL must not reach the files and the first commit.
        if credential_error(origin):
            raise RlgenError(f"the origin remote of {directory} carries credentials ({redact(origin)}): "
                             "pass --set rlgen.git_url=URL without them (the sync engine reads its "
                             "credentials from a Kubernetes Secret)")
        answers.setdefault("rlgen", {})["git_url"] = origin
    interactive = not no_input and sys.stdin.isatty()
    selection = select(discover(), list(plugins), answers, _prompt if interactive else None)
    with ExitStack() as stack:
        fetched = stack.enter_context(template_source.fetched(template, template_ref)) if template is not None \
            else None
        early: list[EarlyBuilds] = []
        staging: list[Path] = []
        initialized: list[Future] = []

        def ready(b, roots: list[str]) -> None:
            # The roots' builds start in the staged folder while the rest is generated, and so
            # does git init; only beside an existing folder, as a refusal must not leave the
            # parents it made.
            if not early and target.parent.is_dir():
                staging.append(stack.enter_context(staged(target)))
                initialized.append(stack.enter_context(ThreadPoolExecutor(max_workers=1))
                                   .submit(git.init, staging[0], b.spec.git_branch))
                early.append(stack.enter_context(EarlyBuilds(staging[0], b.hooks.patches(b.ctx))))
            if early:
                early[0].start(b.tree.files, roots)

        build = generate(selection, template=fetched, on_ready=ready)
        if build.clashes:
            from rlgen.generate.team_template import clash_line

            for path in build.clashes:
                click.echo(clash_line(path), err=True)
        tmp = staging[0] if staging else stack.enter_context(staged(target))
        if early:
            early[0].write(build.tree.files)
            initialized[0].result()
        else:
            build.tree.write(tmp)
            git.init(tmp, build.spec.git_branch)

        def meanwhile(probed: list[str]) -> None:
            # While kustomize renders: git's index of every file but those holding a patch's
            # twin for the render.
            git.run(tmp, "add", "-A", "--", ".", *(f":(exclude,literal){path}" for path in probed))

        refuse_failing(tmp, [s.name for s in build.secrets()], (build.hooks, build.ctx),
                       build.hooks.patches(build.ctx), meanwhile=meanwhile, early=early[0] if early else None)
        # The patched files, their own content again.
        git.run(tmp, "add", "-A", "--", ".")
        plugins_line = ", ".join(f"{slot}={name}" for slot, name in selection.plugins.items())
        git.commit(tmp, f"Generate with rlgen {__version__}\n\nPlugins: {plugins_line}\n")
    if resolve_output(output) == "json":
        click.echo(to_json({"directory": str(target), "files": len(build.tree.files), "plugins": selection.plugins,
                            "run": build.run, "rayjob": build.rayjob}))
        return
    click.echo(f"Created {directory} ({len(build.tree.files)} files; "
               f"first run '{build.run}' -> RayJob {build.rayjob}).")


def _prompt(plugin: str, option) -> str:
    default = None if option.default is None else str(option.default)
    return click.prompt(f"{plugin}.{option.name} ({option.help})", default=default, type=str, err=True,
                        show_default=bool(default))
