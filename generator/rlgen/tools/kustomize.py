"""The kustomize binary: ``kustomize build`` when installed, else ``kubectl kustomize``."""
from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.tools import children, go_runtime, kustomize_reads, repo_files
from rlgen.tools.kustomize_reads import KUSTOMIZATION_FILES


#: The release the generated workflows install (their KUSTOMIZE_VERSION) and the tests build.
PINNED = "5.7.1"


@lru_cache(maxsize=1)
def command() -> tuple[str, ...]:
    if exe := shutil.which("kustomize"):
        return (exe, "build")
    if exe := shutil.which("kubectl"):
        # Said once per process, on stderr: kubectl's embedded kustomize is often older than the
        # CI's, and a render that differs from the pull request's checks must not go unnoticed.
        print(f"rlgen: warning: kustomize is not on PATH: rendering with kubectl kustomize, which may "
              f"render differently from kustomize v{PINNED}, the version the repository's CI runs",
              file=sys.stderr)
        return (exe, "kustomize")
    raise RlgenError(f"no kustomize binary: install kustomize v{PINNED} (or kubectl, which includes an older one)")


def build(root: Path) -> str:
    """Render one kustomization root; a failure is one line naming the root."""
    return Builds().build(root)


class Stopped(Exception):
    """A build of :class:`Builds` that :meth:`Builds.stop` ended."""


class Builds:
    """Builds that can all be ended at once: a command that starts them before the checks that
    may refuse the repository must not leave them running after a refusal."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self.stopped = False
        #: Set once the first builds run (:meth:`expect`): from then on the caller's other
        #: Python work delays no build's start.
        self.started = threading.Event()
        self._awaited, self._spawned = 1, 0
        #: Folders whose files :func:`kustomize_reads.check_build` took: each once a command.
        self._checked: set[str] = set()

    def expect(self, count: int) -> None:
        """:attr:`started` waits for ``count`` builds, not one: the builds that start at once
        each need the interpreter for a moment to start, which the caller's work would take."""
        with self._lock:
            self._awaited = max(1, count)

    def build(self, root: Path) -> str:
        """As :func:`build`; raises :class:`Stopped` once :meth:`stop` was called."""
        kustomize_reads.check_build(root, self._checked)
        with self._lock:
            if self.stopped:
                raise Stopped(root)
            proc = children.popen([*command(), str(root)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=go_runtime.environment())
            self._running.add(proc)
            self._spawned += 1
            if self._spawned >= self._awaited:
                self.started.set()
        try:
            stdout, stderr = proc.communicate()
        except BaseException:  # interrupted while it builds on this thread: no Ctrl-C reached it
            children.kill(proc)
            proc.wait()
            raise
        finally:
            with self._lock:
                self._running.discard(proc)
        if self.stopped:
            raise Stopped(root)
        if proc.returncode != 0:
            message = " ".join(stderr.split()) or f"exit code {proc.returncode}"
            raise RlgenError(f"kustomize failed on {root}: {message}")
        return stdout

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            for proc in self._running:
                # The group: what kustomize started (a plugin, helm) holds its pipes open too.
                children.kill(proc)


def is_root(folder: Path) -> bool:
    return any((folder / name).is_file() for name in KUSTOMIZATION_FILES)


def roots(repo: Path) -> list[Path]:
    """Every kustomization root below ``repo`` that is not a Component (components only
    build inside a kustomization that lists them)."""
    found = []
    for name in KUSTOMIZATION_FILES:
        for path in repo.rglob(name):
            if any(part.startswith(".") for part in path.relative_to(repo).parts):
                continue
            if "kind: Component" not in repo_files.read_text(path):
                found.append(path.parent)
    return sorted(set(found))
