"""The ``rlgen`` command line. Every command lives in ``rlgen/commands/<name>.py`` as ``command``
and is imported only when it runs or is listed; a command module imports its library when it
runs, so ``rlgen --help`` loads nothing heavy.

Exit codes: 0 ok, 1 problems found, 2 bad input or environment, 3 a plugin failed (one line
naming the plugin and its hook, and the path of a file with the traceback for its author),
70 internal error (one line and the path of a file with the traceback for a bug report),
130 interrupted.
"""
from __future__ import annotations

import errno
import importlib
import sys

import click

from rlgen import __version__
from rlgen.errors import INTERNAL_ERROR, PluginFailed, RlgenError

#: The commands, as typed; each is ``rlgen.commands.<name>``, imported when it runs or when the
#: help lists it (its one-line help is its docstring's first sentence).
COMMANDS = ("cluster", "completion", "data", "diff", "doctor", "e2e", "new", "plugins", "render", "run", "schemas",
            "secret", "status", "update", "validate")
#: Errors of the machine, not of rlgen: no permission, a read-only file system, no space left.
_ENVIRONMENT_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        return importlib.import_module(f"rlgen.commands.{name}").command

    def format_commands(self, ctx, formatter):
        # Each command's first paragraph whole, wrapped: click would cut it to the line's width.
        rows = [(name, " ".join(self.get_command(ctx, name).help.split("\n\n")[0].split())) for name in COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rlgen")
def cli():
    """Generate and evolve the GitOps repository of VeRL training jobs on ACK."""


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="rlgen", standalone_mode=False)
    except PluginFailed as exc:
        click.echo(f"rlgen: error: {exc}; details in {_save_traceback(exc.details)}", err=True)
        sys.exit(exc.exit_code)
    except RlgenError as exc:
        click.echo(_redact(f"rlgen: error: {_one_line(str(exc))}"), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C (and SIGTERM, which rlgen's commands raise as Ctrl-C) into Abort.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            click.echo("rlgen: interrupted", err=True)
            sys.exit(130)
        click.echo("rlgen: aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(_redact(f"rlgen: error: {_one_line(exc.format_message())}"), err=True)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("rlgen: interrupted", err=True)
        sys.exit(130)
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            _internal_error()
        # A read-only folder, a full disk: the machine's state, not a bug. What a command
        # changes it puts back on any error, so nothing is half-written.
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(_redact(f"rlgen: error: cannot write {where}{exc.strerror}"), err=True)
        sys.exit(2)
    except (RecursionError, MemoryError) as exc:
        # Input nested or sized beyond what any real file needs (a YAML bomb): not a bug.
        click.echo(f"rlgen: error: the input is too deeply nested or too large ({type(exc).__name__})", err=True)
        sys.exit(2)
    except Exception:
        _internal_error()


def _redact(text: str) -> str:
    # Imported when a message is written: a command that succeeds compiles none of its patterns.
    from rlgen.redaction import redact as masked

    return masked(text)


def _internal_error() -> None:
    """A bug: one line for the user, the traceback in a file for the report."""
    click.echo(f"rlgen: internal error ({sys.exc_info()[1].__class__.__name__}); "
               f"details in {_save_traceback()}", err=True)
    sys.exit(INTERNAL_ERROR)


def _save_traceback(details: str | None = None) -> str:
    import tempfile
    import traceback

    from rlgen.redaction import masked_argv

    with tempfile.NamedTemporaryFile("w", prefix="rlgen-crash-", suffix=".txt", delete=False) as f:
        # argv with its values masked, the traceback with URL user info and tokens masked.
        f.write(_redact(f"rlgen {__version__}\nargv: {masked_argv(sys.argv)}\n\n{details or traceback.format_exc()}"))
    return f.name


def _one_line(text: str) -> str:
    # A message that quotes a user's value never spills a newline of it onto a second line.
    return " ".join(text.split())
