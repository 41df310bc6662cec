"""``rlgen completion``: the shell completion script of the whole command line."""
from __future__ import annotations

import click


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def command(shell: str) -> None:
    """Print the completion script of a shell (bash, zsh or fish).

    eval "$(rlgen completion bash)" in ~/.bashrc (zsh: ~/.zshrc; fish:
    rlgen completion fish > ~/.config/fish/completions/rlgen.fish)."""
    from click.shell_completion import get_completion_class

    # The root group, found through the context: a command module never imports the cli.
    root = click.get_current_context().find_root().command
    click.echo(get_completion_class(shell)(root, {}, "rlgen", "_RLGEN_COMPLETE").source())
