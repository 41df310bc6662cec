"""Renders by content key (see :mod:`rlgen.render.inputs`) in ``.rlgen-cache/renders/``.

Safe to delete at any time, and never committed (the generated ``.gitignore`` lists
``.rlgen-cache/``): an entry is only ever read under the key of exactly what it renders.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

FOLDER = Path(".rlgen-cache") / "renders"


class RenderCache:
    def __init__(self, repo: Path | None) -> None:
        self.folder = repo / FOLDER if repo else None

    def empty(self) -> bool:
        """Nothing can be found (no folder, or nothing in it): a caller may build before it has
        worked out the keys, which means reading every file a root reads."""
        if self.folder is None:
            return True
        try:
            return not any(self.folder.iterdir())
        except OSError:
            return True

    def get(self, key: str) -> str | None:
        if self.folder is None:
            return None
        try:
            return (self.folder / f"{key}.yaml").read_text()
        except (FileNotFoundError, UnicodeDecodeError):
            return None

    def put(self, key: str, text: str) -> None:
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: a reader never sees half an entry.
            fd, partial = tempfile.mkstemp(dir=self.folder, prefix=".partial-")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(partial, self.folder / f"{key}.yaml")
        except OSError:
            pass  # a cache that cannot be written only costs the next run a render


class HeldCache(RenderCache):
    """The render cache, but what the builds put in it is written by :meth:`write`, once the
    caller has taken the result: a command its checks refuse leaves the repository as it was."""

    def __init__(self, repo) -> None:
        super().__init__(repo)
        self._held: dict[str, str] = {}

    def put(self, key: str, text: str) -> None:
        self._held[key] = text

    def write(self) -> None:
        for key, text in self._held.items():
            super().put(key, text)
