"""Checks of option values at the door, for ``Option(check=...)`` of rlgen and its plugins:
each returns why a value is wrong, or ``None``. A value that passes renders into objects the
API server, kustomize, OSS and git accept, so a generated repository never fails its own
``rlgen validate`` on an answer."""
from __future__ import annotations

import json
import re
import subprocess
from typing import Any, Callable

from rlgen.naming import dns1123_label_error

__all__ = ["dns1123_label_error", "duration_error", "git_branch_error", "image_reference_error",
           "int_range", "oss_bucket_error"]

# Go's time.ParseDuration, which Flux's metav1.Duration fields use: "1h30m", "90s", "500ms".
_DURATION = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h)")
# OSS: 3-63 characters, lower-case letters, digits and '-', not starting or ending with '-'.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
# The reference grammar of distribution/reference: [host[:port]/]path[:tag][@digest].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(rf"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
                    rf"(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
                    rf"(?:@sha256:[a-f0-9]{{64}})?")
#: Integers past 2^53 lose digits in kustomize's JSON numbers, and large ones print as 1e+20.
MAX_INT = 2**31 - 1


def duration_error(value: str) -> str | None:
    text = str(value)
    if not re.fullmatch(rf"(?:{_DURATION.pattern})+", text) or not re.search(r"[1-9]", text):
        return f"{_show(value)} is not a positive duration like 10m, 1h30m or 90s"
    return None


def oss_bucket_error(value: str) -> str | None:
    if not _BUCKET.fullmatch(str(value)):
        return f"{_show(value)} is not an OSS bucket name (3-63 lower-case letters, digits and '-', not starting or ending with '-')"
    return None


def image_reference_error(value: str) -> str | None:
    text = str(value)
    if len(text) > 255 or not _IMAGE.fullmatch(text):
        return f"{_show(value)} is not an image reference like registry.example.com/team/image:tag"
    return None


def git_branch_error(value: str) -> str | None:
    """What ``git check-ref-format --branch`` says; the rules are git's own."""
    text = str(value)
    try:
        result = subprocess.run(["git", "check-ref-format", "--branch", text], capture_output=True, text=True)
    except FileNotFoundError:
        ok = bool(text) and not re.search(r"[\s~^:?*\[\\]|\.\.|@\{|^[-/.]|[/.]$|\.lock$|//", text)
    else:
        ok = result.returncode == 0 and bool(text)
    return None if ok else f"{_show(value)} is not a git branch name (git check-ref-format --branch refuses it)"


def int_range(low: int, high: int = MAX_INT) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if low <= value <= high else f"{value} is not between {low} and {high}"
    return check


def _show(value: Any) -> str:
    # Quoted and escaped: a value with a newline stays on the one error line.
    return json.dumps(str(value), ensure_ascii=False)
