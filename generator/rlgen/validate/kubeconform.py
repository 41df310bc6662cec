"""Schema validation by the kubeconform binary, when it is on PATH: the same locations and
the same strictness (``-strict``) as rlgen's own validator."""
from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from rlgen.errors import RlgenError
from rlgen.tools import go_runtime
from rlgen.validate.locations import resolve
from rlgen.validate.paths import MISSING, UNKNOWN, from_pointer, json_path


def kubeconform_binary() -> str | None:
    return shutil.which("kubeconform")


def validate_with_kubeconform(
    paths_or_yaml: str | os.PathLike | Iterable[str | os.PathLike],
    locations: list[str],
    cache_dir: Path | None = None,
) -> list[Problem]:
    """Run ``kubeconform -strict`` on files or folders, or on YAML text (a ``str``, sent on
    stdin). One :class:`Problem` per problem; empty when everything is valid.
    ``cache_dir`` is kubeconform's ``-cache``: its files are named like rlgen's."""
    return start_kubeconform(paths_or_yaml, locations, cache_dir)()


# kubeconform v0.8.0 caches a compiled schema only after compiling it (pkg/validator/validator.go
# ValidateResource: Get, then schemaDownload, then Set), so parallel workers that meet objects of
# one kind at once each compile its schema: on rlgen's repositories, where most objects are
# RayJobs and ConfigMaps, every added worker costs a compile of RayJob's large schema and
# checks nothing sooner (docs/upstream.md). One worker; rlgen's own work runs beside it. With
# one worker, the results come in the order of the documents (cmd/kubeconform/main.go).
WORKERS = "1"


def _command(locations: list[str], cache_dir: Path | None) -> list[str]:
    binary = kubeconform_binary()
    if binary is None:
        raise RlgenError("kubeconform is not on PATH")
    command = [binary, "-strict", "-output", "json", "-n", WORKERS]
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        command += ["-cache", os.fspath(cache_dir)]
    for template in resolve(locations):
        command += ["-schema-location", template]
    return command


def _report(proc: subprocess.Popen, stdout: str, stderr: str) -> dict:
    try:
        return json.loads(stdout)
    except ValueError:
        detail = next(iter(stderr.strip().splitlines()), "no JSON on stdout")
        raise RlgenError(f"kubeconform failed (exit {proc.returncode}): {detail}") from None


def start_kubeconform(
    paths_or_yaml: str | os.PathLike | Iterable[str | os.PathLike],
    locations: list[str],
    cache_dir: Path | None = None,
) -> Callable[[], list[Problem]]:
    """:func:`validate_with_kubeconform` started in the background: call the result for the
    problems, once the caller's own work is done."""
    if isinstance(paths_or_yaml, str):
        targets, stdin = ["-"], paths_or_yaml
    else:
        paths = [paths_or_yaml] if isinstance(paths_or_yaml, os.PathLike) else paths_or_yaml
        targets, stdin = [os.fspath(path) for path in paths], ""
    proc = subprocess.Popen([*_command(locations, cache_dir), *targets],
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=go_runtime.environment())
    if stdin:  # small (a test's objects): written whole before the caller goes on
        proc.stdin.write(stdin)
        proc.stdin.close()
        proc.stdin = None  # communicate() would flush the closed pipe

    def finish() -> list[Problem]:
        return [p for r in _report(proc, *proc.communicate()).get("resources", []) for p in _resource_problems(r)]

    return finish


class Stream:
    """One kubeconform process reading documents on stdin as they are sent: it compiles each
    schema once, and checks the first documents while the caller is still producing the
    others. :meth:`results` gives one entry per resource, in the order they were sent
    (``-verbose`` lists the valid ones too; a ``List`` gives one per item)."""

    def __init__(self, locations: list[str], cache_dir: Path | None = None) -> None:
        self._proc = subprocess.Popen([*_command(locations, cache_dir), "-verbose", "-"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=go_runtime.environment())
        # A writer of its own: the sender never waits for kubeconform to read.
        self._pending: queue.Queue[bytes | None] = queue.Queue()
        self._writer = threading.Thread(target=self._write, name="kubeconform-stdin", daemon=True)
        self._writer.start()

    def _write(self) -> None:
        stdin = self._proc.stdin
        try:
            while (data := self._pending.get()) is not None:
                # One write a batch, however large: each return from a blocking write takes
                # the GIL back from the thread parsing the same objects, up to 5 ms each time.
                stdin.write(data)
                stdin.flush()
        except OSError:
            pass  # kubeconform ended early: results() reports why
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def send(self, documents: list[str]) -> None:
        # "\n---" ends a document for kubeconform (pkg/resource/stream.go SplitYAMLDocument).
        self._pending.put("".join(f"{d}\n---\n" for d in documents).encode())

    def results(self) -> list[Resource]:
        """Every resource's result, once all were sent; ends the process."""
        self._pending.put(None)
        self._writer.join()
        self._proc.stdin = None  # closed by the writer
        stdout, stderr = self._proc.communicate()
        return [Resource(r.get("kind", ""), r.get("name", ""), _resource_problems(r))
                for r in _report(self._proc, stdout.decode(), stderr.decode(errors="replace")).get("resources", [])]

    def stop(self) -> None:
        """End kubeconform without its results."""
        self._proc.kill()
        self._pending.put(None)
        self._writer.join()
        self._proc.stdin = None  # closed by the writer
        self._proc.communicate()


class Resource(NamedTuple):
    """One resource as kubeconform read it, and its problems."""

    kind: str
    name: str
    problems: list[Problem]


class Problem(NamedTuple):
    """One problem kubeconform found: in which file and object, where (the unescaped tokens of a
    JSON pointer; None for a problem of the whole object) and what."""

    filename: str
    kind: str
    name: str
    pointer: tuple[str, ...] | None
    message: str

    def at(self, prefix: tuple[str, ...]) -> Problem:
        """The problem of a part of a larger object (an item of a List), as one of the whole."""
        return self if self.pointer is None or not prefix else self._replace(pointer=(*prefix, *self.pointer))

    def text(self, obj: object = None) -> str:
        """The message as rlgen's own validator words it, its path read against ``obj``."""
        if self.pointer is None:
            return self.message
        return f"{json_path(from_pointer(list(self.pointer), obj))}: {self.message}"


def _resource_problems(resource: dict) -> list[Problem]:
    # Current kubeconform writes statusInvalid/statusError, early releases INVALID/ERROR.
    if resource.get("status", "").removeprefix("status").upper() not in ("INVALID", "ERROR"):
        return []
    where = (resource.get("filename", ""), resource.get("kind", ""), resource.get("name", ""))
    leaves = _leaves(resource.get("msg", "")) or [
        (_tokens(d.get("path", "")), d.get("msg", "")) for d in resource.get("validationErrors") or []]
    if not leaves:
        return [Problem(*where, None, resource.get("msg", ""))]
    found = [Problem(*where, pointer, message) for tokens, msg in leaves for pointer, message in _split(tokens, msg)]
    return sorted(found, key=lambda p: (p.pointer, p.message))


# santhosh-tekuri v6 (output.go) writes its error tree one cause a line, indented two spaces a
# level: "- at '<JSON pointer>': <message>", values quoted with ' (a ' inside escaped); kubeconform
# puts the tree in "msg" with the line breaks made spaces, and in "validationErrors" only the
# first level, where two problems under one field are one "validation failed".
_CAUSE = re.compile(r" ((?:  )*)- at '((?:[^'\\]|\\.)*)': ")
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
# Causes that only group others (kind.Group, kind.Reference): their children are the problems.
_GROUP = "validation failed"


def _leaves(msg: str) -> list[tuple[tuple[str, ...], str]]:
    causes = list(_CAUSE.finditer(msg))
    nodes = [(len(m.group(1)) // 2, _tokens(_unquote(m.group(2))),
              msg[m.end():causes[i + 1].start() if i + 1 < len(causes) else len(msg)])
             for i, m in enumerate(causes)]
    leaves, below = [], None
    for i, (depth, tokens, message) in enumerate(nodes):
        if below is not None and depth > below:
            continue  # inside a combinator (anyOf, oneOf) reported as one problem, as rlgen does
        below = None
        has_children = i + 1 < len(nodes) and nodes[i + 1][0] > depth
        if has_children and message == _GROUP:
            continue
        if has_children:
            below = depth
        leaves.append((tokens, message))
    return leaves


def _split(tokens: tuple[str, ...], msg: str) -> list[tuple[tuple[str, ...], str]]:
    """One problem per field for unknown and missing fields, at the field's path, as rlgen's
    own validator reports them (santhosh-tekuri names them all at the parent)."""
    if re.fullmatch(r"additional propert(y|ies) .* not allowed", msg):
        return [((*tokens, _unquote(name)), UNKNOWN) for name in _QUOTED.findall(msg)]
    if re.fullmatch(r"missing propert(y|ies) .*", msg):
        return [((*tokens, _unquote(name)), MISSING) for name in _QUOTED.findall(msg)]
    return [(tokens, msg)]


def _unquote(text: str) -> str:
    # Go's %q with \" undone and ' escaped (santhosh-tekuri util.go quote).
    return text.replace("\\'", "'").encode("latin-1", "backslashreplace").decode("unicode_escape")


def _tokens(pointer: str) -> tuple[str, ...]:
    if not pointer or pointer == "/":
        return ()
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:])
