"""The progress ``rlgen data`` shows: a bar or a line on a terminal's stderr, a line per retry in
a Job's log."""
from __future__ import annotations

import threading
from pathlib import Path

import click
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from rlgen.data import visible_files
from rlgen.output import console


def human_size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def log_progress(base):
    """Off a terminal (the dataset Job's log): no bar, but each retry on its own line."""
    class LogProgress(base):
        def retry(self, what: str) -> None:
            click.echo(f"rlgen: retrying {what}", err=True)

    return LogProgress()


class FolderProgress:
    """A line on stderr while a hub fills ``folder``: its files and the bytes written so far
    (partial files included), and the speed. Read from the folder itself, so it is the same
    for every hub; the hubs give no total before they start."""

    INTERVAL = 0.2

    def __init__(self, folder: Path, what: str):
        self._folder = folder
        self._bar = Progress(SpinnerColumn(), TextColumn(f"{what}: {{task.description}}"),
                             DownloadColumn(binary_units=True), TransferSpeedColumn(),
                             console=console(stderr=True), transient=True)
        self._task = self._bar.add_task("0 files", total=None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self):
        self._bar.start()
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()
        self._bar.stop()

    def _poll(self) -> None:
        while True:
            try:
                written = sum(p.stat().st_size for p in self._folder.rglob("*") if p.is_file())
                files = len(visible_files(self._folder))
            except OSError:  # a hub renames its partial files as it goes
                written, files = None, None
            if written is not None:
                self._bar.update(self._task, completed=written, description=f"{files} files")
            if self._stop.wait(self.INTERVAL):
                return


class TerminalProgress:
    """A bar on stderr: bytes sent (or found unchanged) and files done."""

    def __init__(self):
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(binary_units=True),
                             TransferSpeedColumn(), TimeRemainingColumn(), console=console(stderr=True),
                             transient=True)
        self._lock = threading.Lock()
        self._task = None
        self._files = self._done = 0

    def __enter__(self):
        self._bar.start()
        return self

    def __exit__(self, *exc_info):
        self._bar.stop()

    def start(self, files: int, total_bytes: int) -> None:
        self._files = files
        self._task = self._bar.add_task(f"0/{files} files", total=total_bytes)

    def advance(self, nbytes: int) -> None:
        self._bar.advance(self._task, nbytes)

    def retry(self, what: str) -> None:
        self._bar.console.print(f"retrying {what}", style="yellow", highlight=False)

    def file_done(self) -> None:
        with self._lock:
            self._done += 1
            self._bar.update(self._task, description=f"{self._done}/{self._files} files")
