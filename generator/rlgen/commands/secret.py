"""``rlgen secret``: set a value of a Secret the repository reads, list the Secrets.

A value comes from standard input (hidden prompt on a terminal) or an environment variable,
never from an argument (a process listing or shell history would show it). With the ``sops``
plugin it is encrypted in memory by ``sops`` and only the encrypted file is written and
committed; with the other plugins rlgen says where the value goes and keeps nothing.
"""
from __future__ import annotations

from pathlib import Path

import click

from rlgen.output import output_option


@click.group("secret")
def command():
    """Set and list the values of the Secrets the repository reads.

    The repository's secrets plugin decides where they live."""


@command.command("set")
@click.argument("name")
@click.argument("key")
@click.option("-n", "--namespace", help="Namespace of the Secret, when its name is in several.")
@click.option("--from-env", "env", metavar="VAR", help="Read the value from environment variable VAR "
              "instead of standard input.")
@click.option("--dry-run", is_flag=True, help="Show what would be committed, and change nothing.")
@output_option()
def set_(name: str, key: str, namespace: str | None, env: str | None, dry_run: bool, output: str | None):
    """Set KEY of Secret NAME. The value is read from standard input (one trailing newline
    dropped) or --from-env VAR; sops: encrypted and committed, other plugins: where to put it."""
    from rlgen.repo.workspace import find_root
    from rlgen.secret.values import set_value

    set_value(find_root(Path.cwd()), name, key, namespace, env, dry_run, output)


@command.command("list")
@output_option()
def list_(output: str | None):
    """Each Secret the repository reads: namespace, keys, which are set, and what uses it."""
    from rlgen.repo.workspace import find_root
    from rlgen.secret.values import list_secrets

    list_secrets(find_root(Path.cwd()), output)
