"""A render of the whole repository started in the background, before the checks that may
refuse it: the kustomize builds are most of what ``rlgen validate`` waits for, and need not
wait for those checks. Each source is handed over as soon as it is rendered; a refusal ends
the builds still running."""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path

from rlgen.render import manifests
from rlgen.render.cache import HeldCache
from rlgen.tools import kustomize


class Background:
    """Builds on a thread of their own, owned by a ``with`` block: leaving it early (an
    exception) stops the builds still running, so no build outlives the command. What they
    render is cached only when the owner says so (:class:`~rlgen.render.cache.HeldCache`): a
    command that refuses the repository meanwhile leaves it as it was."""

    def __init__(self, cache_repo: Path | None, target, args: tuple, name: str) -> None:
        self._builds = kustomize.Builds()
        self._cache = HeldCache(cache_repo)
        self._thread = threading.Thread(target=self._run, args=(target, args), name=name, daemon=True)

    def _run(self, target, args: tuple) -> None:
        try:
            target(*args)
        finally:
            self._builds.started.set()  # also when no build ran: none needed, all cached, or a failure

    def wait_started(self) -> None:
        """Until the first build runs (or the render ended without one). Python work of the
        caller's meanwhile would share the interpreter with the render's own planning, which
        is all that stands between the command's start and its first build."""
        self._builds.started.wait()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._builds.stop()
        self._thread.join()


class Rendering(Background):
    """``with Rendering(repo) as rendering:`` starts every build of the whole repository."""

    def __init__(self, repo: Path) -> None:
        super().__init__(repo, self._render, (repo,), "render")
        self._ready: queue.Queue = queue.Queue()
        #: ``{source: [document]}`` in the order of :func:`rlgen.render.manifests.render` (a root
        #: built in parts: its parts in order), once :meth:`sources` has handed over the last one.
        self.result: dict[str, list[str]] = {}
        self._thread.start()

    def _render(self, repo: Path) -> None:
        try:
            rendered = manifests.render(
                {"repo": repo}, cache=self._cache, builds=self._builds,
                on_source=lambda _, source, docs, built: self._ready.put((source, None, docs, built)),
                on_part=lambda _, source, k, docs: self._ready.put((source, k, docs, True)))
            self._ready.put(_End(rendered["repo"], None))
        except BaseException as exc:  # handed to the caller's thread, which reports it
            self._ready.put(_End({}, exc))

    def sources(self) -> Iterator[tuple[str, int | None, list[str], bool]]:
        """(source, part, documents, built) of each top root and plain file, or of each part
        of a root built in parts (``part``: its number, else None), in the order they are ready
        (``built``: kustomize wrote the documents)."""
        while not isinstance(item := self._ready.get(), _End):
            yield item
        if item.error is not None:
            raise item.error
        self.result = item.result
        self._cache.write()


class _End:
    def __init__(self, result: dict[str, list[str]], error: BaseException | None) -> None:
        self.result, self.error = result, error
