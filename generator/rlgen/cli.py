"""The ``rlgen`` command line. Every command lives in ``rlgen/commands/<name>.py`` as ``command``
and is imported only when it runs or is listed; a command module imports its library when it
runs, so ``rlgen --help`` loads nothing heavy. ``rlgen --help`` itself loads not even click
(whose own imports, inspect and ast among them, take twice a bare interpreter's start) once it
has run once: the first run renders the help through click and keeps the text in the user's
cache (:func:`cached_help`), the next ones write it back while what determines it is unchanged.

Exit codes: 0 ok, 1 problems found, 2 bad input or environment, 3 a plugin failed (one line
naming the plugin and its hook, and the path of a file with the traceback for its author),
70 internal error (one line and the path of a file with the traceback for a bug report),
130 interrupted.
"""
from __future__ import annotations

import atexit
import errno
import os
import sys

from rlgen import __version__

#: The commands, as typed; each is ``rlgen.commands.<name>``, imported when it runs or when the
#: help lists it (its one-line help is its docstring's first sentence).
COMMANDS = ("cluster", "completion", "data", "diff", "doctor", "e2e", "new", "plugins", "render", "run", "schemas",
            "secret", "status", "update", "validate")
#: Errors of the machine, not of rlgen: no permission, a read-only file system, no space left.
_ENVIRONMENT_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}


def _exit_interrupted() -> None:
    """End an interrupted command with 130, once every other exit handler has run.

    CPython 3.11 marks a KeyboardInterrupt raised inside ``eval()`` of a string as unhandled even
    when it is caught (pythonrun.c ``run_eval_code_obj``; CPython gh-128130 reworks that flag), and
    ends such a process by SIGINT after its exit handlers instead of with its exit status. A
    SIGTERM that lands while an import defines a ``NamedTuple`` (``collections.namedtuple``
    evals its ``__new__``) did that to about 1 ``rlgen diff`` in 10 (exit -2). So the interrupt
    path records it (:data:`_INTERRUPTED`) and this handler, registered at import and so run
    last, ends the process with 130: output flushed, nothing left but interpreter teardown."""
    if _INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)


_INTERRUPTED: list[bool] = []
atexit.register(_exit_interrupted)


def _interrupted() -> None:
    print("rlgen: interrupted", file=sys.stderr)
    _INTERRUPTED.append(True)
    sys.exit(130)


def group():
    """The click group of ``rlgen``, built when a command runs: ``rlgen --help`` from the cache
    never imports click."""
    # Lazy, as every click import of this module: click's own imports take twice a bare
    # interpreter's start, which ``rlgen --help`` from the cache never pays.
    import importlib

    import click

    class LazyGroup(click.Group):
        def list_commands(self, ctx):
            return list(COMMANDS)

        def get_command(self, ctx, name):
            if name not in COMMANDS:
                return None
            return importlib.import_module(f"rlgen.commands.{name}").command

        def format_commands(self, ctx, formatter):
            # Each command's first paragraph whole, wrapped: click would cut it to the line's width.
            rows = [(name, " ".join(self.get_command(ctx, name).help.split("\n\n")[0].split()))
                    for name in COMMANDS]
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    @click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="rlgen")
    def cli():
        """Generate and evolve the GitOps repository of VeRL training jobs on ACK."""

    return cli


def help_columns() -> int:
    """The columns click's help formatter reads (shutil.get_terminal_size, without importing shutil)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def help_key() -> str:
    """What ``rlgen --help`` is made of, read without importing it: rlgen's version, the width
    click wraps to, and the size and change time of the modules that write it (this one, each
    command's, click's own): an edited docstring or another click changes the key."""
    here = os.path.dirname(os.path.abspath(__file__))
    commands = os.path.join(here, "commands")
    files = [os.path.abspath(__file__)] + sorted(
        os.path.join(commands, name) for name in os.listdir(commands) if name.endswith(".py"))
    for entry in sys.path:
        click_init = os.path.join(entry or ".", "click", "__init__.py")
        if os.path.isfile(click_init):
            files.append(click_init)
            break
    stats = [(path, stat.st_size, stat.st_mtime_ns) for path, stat in ((p, os.stat(p)) for p in files)]
    # click's HelpFormatter: the terminal's columns, at most 80, less 2, at least 50.
    return repr((__version__, max(min(help_columns(), 80) - 2, 50), stats))


def help_cache() -> str:
    """The file that keeps ``rlgen --help``: ``rlgen/help`` in the XDG cache directory."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rlgen", "help")


def render_help() -> str:
    """``rlgen --help`` as click writes it (``echo`` adds the last newline)."""
    import click  # lazy: see group()

    cli = group()
    return click.Context(cli, info_name="rlgen", **cli.context_settings).get_help() + "\n"


def cached_help() -> str:
    """The help from the cache when its key matches; else rendered by click and kept. The cache
    is a convenience: any error reading or writing it (a read-only home, a corrupt file) leaves
    click's rendering, written whole or not at all (a temporary file renamed over it)."""
    try:
        key = help_key()
        path = help_cache()
    except (OSError, ValueError):
        return render_help()
    try:
        with open(path, encoding="utf-8") as f:
            kept_key, _, text = f.read().partition("\n")
        if kept_key == key and text:
            return text
    except (OSError, ValueError):
        pass
    text = render_help()
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(f"{key}\n{text}")
        os.replace(temporary, path)
    except (OSError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass
    return text


# long: one except clause per exit code, so the whole mapping of errors to exit codes reads in one place.
def main(argv: list[str] | None = None) -> None:
    if (sys.argv[1:] if argv is None else argv) in (["--help"], ["-h"]):
        try:
            text = cached_help()
        except Exception:
            _internal_error()
        sys.stdout.write(text)
        sys.stdout.flush()
        sys.exit(0)
    # Past the cached help: click and the error machinery (see group()).
    import click

    from rlgen.errors import PluginFailed, RlgenError

    from rlgen.tools.signals import terminate_as_interrupt

    cli = group()
    try:
        # SIGTERM as Ctrl-C in every command: the cleanup that an interrupt runs (temporary
        # folders, child process groups, incomplete uploads) runs for a CI's or a pod's stop too.
        with terminate_as_interrupt():
            cli.main(args=argv, prog_name="rlgen", standalone_mode=False)
    except PluginFailed as exc:
        click.echo(f"rlgen: error: {exc}; details in {_save_traceback(exc.details)}", err=True)
        sys.exit(exc.exit_code)
    except RlgenError as exc:
        click.echo(_redact(f"rlgen: error: {_one_line(exc.headline)}"), err=True)
        for item in exc.items:
            click.echo(_redact(f"  {_one_line(item)}"), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C (and SIGTERM, which rlgen's commands raise as Ctrl-C) into Abort.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _interrupted()
        click.echo("rlgen: aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(_redact(f"rlgen: error: {_one_line(exc.format_message())}"), err=True)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted()
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
    # Lazy: rlgen.redaction is 4.6 ms of rlgen --help (-X importtime); a command that succeeds
    # compiles none of its patterns.
    from rlgen.redaction import redact as masked

    return masked(text)


def _internal_error() -> None:
    """A bug: one line for the user, the traceback in a file for the report."""
    # Lazy: a failing cached help reaches here without click (see group()).
    import click

    from rlgen.errors import INTERNAL_ERROR

    click.echo(f"rlgen: internal error ({sys.exc_info()[1].__class__.__name__}); "
               f"details in {_save_traceback()}", err=True)
    sys.exit(INTERNAL_ERROR)


def _save_traceback(details: str | None = None) -> str:
    # Lazy, only on a crash: tempfile 29 ms, traceback 25 ms (medians of 7 after rlgen.cli).
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
