"""Schema validation by the kubeconform binary, when it is on PATH: the same locations and
the same strictness (``-strict``) as rlgen's own validator."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.validate.locations import resolve


def kubeconform_binary() -> str | None:
    return shutil.which("kubeconform")


def validate_with_kubeconform(
    paths_or_yaml: str | os.PathLike | Iterable[str | os.PathLike],
    locations: list[str],
    cache_dir: Path | None = None,
) -> list[tuple[str, str, str, str]]:
    """Run ``kubeconform -strict`` on files or folders, or on YAML text (a ``str``, sent on
    stdin). One (file, kind, name, message) per problem; empty when everything is valid.
    ``cache_dir`` is kubeconform's ``-cache``: its files are named like rlgen's."""
    binary = kubeconform_binary()
    if binary is None:
        raise RlgenError("kubeconform is not on PATH")
    if isinstance(paths_or_yaml, str):
        targets, stdin = ["-"], paths_or_yaml
    else:
        paths = [paths_or_yaml] if isinstance(paths_or_yaml, os.PathLike) else paths_or_yaml
        targets, stdin = [os.fspath(path) for path in paths], ""
    command = [binary, "-strict", "-output", "json"]
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        command += ["-cache", os.fspath(cache_dir)]
    for template in resolve(locations):
        command += ["-schema-location", template]
    proc = subprocess.run([*command, *targets], input=stdin, capture_output=True, text=True)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        detail = next(iter(proc.stderr.strip().splitlines()), "no JSON on stdout")
        raise RlgenError(f"kubeconform failed (exit {proc.returncode}): {detail}") from None
    return _problems(report)


def _problems(report: dict) -> list[tuple[str, str, str, str]]:
    problems = []
    for resource in report.get("resources", []):
        # Current kubeconform writes statusInvalid/statusError, early releases INVALID/ERROR.
        if resource.get("status", "").removeprefix("status").upper() not in ("INVALID", "ERROR"):
            continue
        where = (resource.get("filename", ""), resource.get("kind", ""), resource.get("name", ""))
        details = resource.get("validationErrors") or []
        if details:
            problems += [(*where, f"{d.get('path') or '/'}: {d.get('msg', '')}") for d in details]
        else:
            problems.append((*where, resource.get("msg", "")))
    return problems
