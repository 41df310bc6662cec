"""A team's cookiecutter template rendered into the repository's file tree (``--template``).

cookiecutter renders with no input, its hooks run (pre_prompt, pre_gen_project,
post_gen_project), and the rlgen answers reach the template through ``extra_context``
(:func:`context`). cookiecutter only writes to disk, so it renders into the template's private
temporary folder, and the output is read back into the tree before anything of the repository
is written. rlgen's own files win a clash; each clash is returned for the command to report.

cookiecutter is imported here only, when a template is rendered.
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from rlgen import __version__
from rlgen.errors import RlgenError
from rlgen.generate.filetree import FileTree
from rlgen.generate.template_source import Fetched
from rlgen.redaction import redact

if TYPE_CHECKING:
    from rlgen.spec import Spec

#: Every key rlgen passes; cookiecutter keeps only those the template's cookiecutter.json declares.
PREFIX = "rlgen_"


def context(spec: Spec, plugins: dict[str, str]) -> dict[str, Any]:
    """The answers a template sees, as ``{{ cookiecutter.rlgen_<key> }}``."""
    name = spec.git_url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    values: dict[str, Any] = {
        "repository": name,
        "git_url": spec.git_url,
        "git_branch": spec.git_branch,
        "registry": spec.registry,
        "cluster": spec.cluster,
        "environment": spec.environment,
        "namespace": spec.namespace,
        "plugins": dict(plugins),
        "version": __version__,
    }
    return {PREFIX + key: value for key, value in values.items()}


def clash_line(path: str) -> str:
    """What a command prints on stderr for each clash: a notice, not an error."""
    return f"rlgen: template file {path} clashes with rlgen's own: rlgen's is kept"


def add_to(tree: FileTree, template: Fetched, extra_context: dict[str, Any]) -> list[str]:
    """The template's files added to ``tree`` where rlgen writes none; the paths that clash."""
    clashes = []
    for path, content in sorted(render(template, extra_context).items()):
        if path in tree.files:
            clashes.append(path)
        else:
            tree.add(path, content)
    return clashes


def render(template: Fetched, extra_context: dict[str, Any]) -> dict[str, bytes]:
    """path -> content of what cookiecutter renders from ``template``."""
    # Lazy: cookiecutter is 600 ms to import (median of 7); only a team template needs it.
    from cookiecutter.exceptions import CookiecutterException, FailedHookException
    from cookiecutter.main import cookiecutter
    from jinja2.exceptions import TemplateError

    scratch, shown = template.scratch, redact(template.label)
    out = scratch / "out"
    hooks = _HookLog()
    # The user's cookiecutter config is not read (its default_context would change the output),
    # and cookiecutter's clone and replay folders stay in the scratch folder.
    config = {"cookiecutters_dir": str(scratch / "cookiecutters"), "replay_dir": str(scratch / "replay")}
    try:
        with _quiet(scratch / "hooks.log", hooks), _temporary_files_in(scratch / "tmp"):
            project = cookiecutter(str(template.folder), no_input=True, extra_context=extra_context,
                                   output_dir=str(out), default_config=config, accept_hooks=True)
    except FailedHookException as exc:
        hook = hooks.failed or ("pre_prompt" if "Pre-Prompt" in str(exc) else "")
        said = _last_line(scratch / "hooks.log")
        raise RlgenError(f"template {shown}: {f'its {hook}' if hook else 'a'} hook failed ({_cause(exc)})"
                         + (f": {said}" if said else "")) from None
    except (CookiecutterException, TemplateError, ValueError, OSError) as exc:
        hook = f" in its {hooks.failed} hook" if hooks.failed else ""
        raise RlgenError(f"template {shown}: cookiecutter failed{hook}: {_cause(exc)}") from None
    return _read(Path(project), shown)


def _read(project: Path, shown: str) -> dict[str, bytes]:
    files = {}
    for path in sorted(project.rglob("*")):
        rel = path.relative_to(project).as_posix()
        if path.is_symlink():
            raise RlgenError(f"template {shown}: {rel} is a symbolic link: rlgen writes files only")
        if not path.is_file():
            continue
        if ".git" in (part.lower() for part in path.relative_to(project).parts):
            # git would run what a template put there (hooks, config) at rlgen's own commit.
            raise RlgenError(f"template {shown}: {rel} is inside a .git folder, which is git's own")
        files[rel] = path.read_bytes()
    return files


def _cause(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if (inner := exc.__cause__ or exc.__context__) is not None and str(inner) and str(inner) not in text:
        text = f"{text}: {' '.join(str(inner).split())}"
    return text or type(exc).__name__


def _last_line(log: Path) -> str:
    """The hook's last line of output (what it says when it refuses), masked like every error line."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return redact(lines[-1])[:300] if lines else ""


class _HookLog(logging.Handler):
    """cookiecutter names the hook that failed only in a log record: kept here, not printed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.failed = ""

    def emit(self, record: logging.LogRecord) -> None:
        if "hook" in str(record.msg) and record.levelno >= logging.ERROR and record.args:
            self.failed = str(record.args[0])


@contextmanager
def _quiet(log: Path, handler: logging.Handler) -> Iterator[None]:
    """Hooks are subprocesses that inherit the terminal: their output goes to ``log`` (stdout
    may carry rlgen's JSON), their input is empty (no hook waits on a prompt), and
    cookiecutter's own log records go to ``handler``."""
    logger = logging.getLogger("cookiecutter")
    saved_handlers, saved_propagate, saved_level = logger.handlers[:], logger.propagate, logger.level
    logger.handlers, logger.propagate, logger.level = [handler], False, logging.DEBUG
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    try:
        with open(log, "wb") as sink, open(os.devnull, "rb") as empty:
            os.dup2(empty.fileno(), 0)
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((0, 1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
        logger.handlers, logger.propagate, logger.level = saved_handlers, saved_propagate, saved_level


@contextmanager
def _temporary_files_in(folder: Path) -> Iterator[None]:
    """cookiecutter writes each rendered hook script to a temporary file it never removes:
    in the scratch folder, it goes with it."""
    folder.mkdir(exist_ok=True)
    saved = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved
