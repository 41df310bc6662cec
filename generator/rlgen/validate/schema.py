"""Validate rendered Kubernetes objects the way ``kubeconform -strict`` does.

The lookup order and what counts as a missing schema follow yannh/kubeconform
(pkg/validator/validator.go, pkg/loader/http.go); locations are read as in
:mod:`rlgen.validate.locations`, so one list means the same thing here and to the binary.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft202012Validator,
    validators,
)
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from rlgen.validate.kubeconform import kubeconform_binary, validate_with_kubeconform
from rlgen.validate.locations import (
    DEFAULT_LOCATION,
    SCHEMA_DIR_ENV,
    env_locations,
    render,
    resolve,
    schema_dir_locations,
)

__all__ = ["DEFAULT_LOCATION", "SCHEMA_DIR_ENV", "SchemaValidator", "env_locations", "kubeconform_binary",
           "schema_dir_locations", "validate_with_kubeconform"]

# santhosh-tekuri/jsonschema, kubeconform's validator, reads this $schema (used by the
# yannh/kubernetes-json-schema files) as the latest draft; python-jsonschema does not know it.
_LATEST_ALIAS = re.compile(r"https?://json-schema\.org/schema#?")
# Before draft 2019-09 "format" is an assertion, later only an annotation (santhosh-tekuri
# agrees). Unknown formats such as int-or-string or int64 pass either way.
_FORMAT_ASSERTING = (Draft4Validator, Draft6Validator, Draft7Validator)
_TIMEOUT_SECONDS = 30
_MAX_MESSAGE = 300


class _Unreadable(Exception):
    """A schema location failed for another reason than "nothing there": kubeconform
    stops looking instead of trying the next location."""


class SchemaValidator:
    """Validates objects against the first schema found for their apiVersion and kind.

    ``locations`` are kubeconform ``-schema-location`` values, tried in order. Schemas
    downloaded over HTTP are kept in ``cache_dir``, one file per URL named like
    kubeconform's ``-cache`` files so both tools can share the folder; ``offline``
    reads remote schemas from that cache only.
    """

    def __init__(self, locations: list[str], cache_dir: Path | None = None, offline: bool = False):
        self._templates = resolve(locations)
        self._cache_dir = cache_dir
        self._offline = offline
        self._by_type: dict[tuple[str, str], Validator | str] = {}
        #: (apiVersion, kind) -> (index of the location, rendered location) of each schema found.
        self.found: dict[tuple[str, str], tuple[int, str]] = {}

    def validate(self, obj: dict) -> list[str]:
        """Problems in ``obj``, each starting with its JSON path, or the one line saying
        why it cannot be checked (no schema found); empty when it is valid."""
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if not (isinstance(kind, str) and kind and isinstance(api_version, str) and api_version):
            return ["$: missing apiVersion or kind"]
        found = self.lookup(api_version, kind)
        if isinstance(found, str):
            return [found]
        return [message for error in found.iter_errors(obj) for message in _messages(error)]

    def lookup(self, api_version: str, kind: str) -> Validator | str:
        """The compiled schema for a type, or the one-line reason there is none (once per type)."""
        key = (api_version, kind)
        if key not in self._by_type:
            self._by_type[key] = self._find(api_version, kind)
        return self._by_type[key]

    def _find(self, api_version: str, kind: str) -> Validator | str:
        tried = []
        for index, template in enumerate(self._templates):
            where = render(template, kind, api_version)
            try:
                raw = self._read(where)
            except _Unreadable as exc:
                return f"cannot check kind {kind} (apiVersion {api_version}): {exc}"
            if raw is None:
                offline = self._offline and where.startswith("http")
                tried.append(f"{where} (not cached, offline)" if offline else where)
                continue
            validator = _compile(raw)
            if validator is None:
                tried.append(f"{where} (not a JSON schema)")
            elif not _describes(validator.schema, kind, where):
                tried.append(f"{where} (schema of another kind)")
            else:
                self.found[(api_version, kind)] = (index, where)
                return validator
        return f"no schema for kind {kind} (apiVersion {api_version}); tried: {', '.join(tried)}"

    def _read(self, where: str) -> bytes | None:
        """The bytes at a rendered location; None when nothing is there."""
        if not where.startswith("http"):  # kubeconform's test for a remote location
            try:
                return Path(where).read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as exc:
                raise _Unreadable(f"failed to open schema at {where}: {exc.strerror or exc}") from exc
        cached = self._cache_dir / hashlib.sha256(where.encode()).hexdigest() if self._cache_dir else None
        if cached is not None and cached.is_file():
            return cached.read_bytes()
        if self._offline:
            return None
        body = _download(where)
        if body is not None and cached is not None:
            try:
                _write_atomically(cached, body)
            except OSError as exc:
                raise _Unreadable(f"failed writing schema to cache {cached}: {exc.strerror or exc}") from exc
        return body


def _download(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_SECONDS) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise _Unreadable(f"error while downloading schema at {url} - received HTTP status {exc.code}") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise _Unreadable(f"failed downloading schema at {url}: {getattr(exc, 'reason', exc)}") from exc


def _write_atomically(path: Path, data: bytes) -> None:
    # Runs sharing a cache must never read a half-written schema.
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, path)


def _compile(raw: bytes) -> Validator | None:
    """A validator for a schema document, or None when it is not one (kubeconform then
    tries the next location, as for a missing file)."""
    try:
        schema = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(schema, dict) or not isinstance(schema.get("$schema", ""), str):
        return None
    if _LATEST_ALIAS.fullmatch(schema.get("$schema", "")):
        cls = Draft202012Validator
    else:
        cls = validators.validator_for(schema, default=Draft4Validator)  # kubeconform's default draft
    # No meta-validation (check_schema): it costs seconds on RayJob's schema at every run,
    # and the files come from the same converters kubeconform's catalogs use.
    return cls(schema, format_checker=cls.FORMAT_CHECKER if cls in _FORMAT_ASSERTING else None)


def _describes(schema: dict, kind: str, where: str) -> bool:
    """Whether a found schema is for ``kind``: by its ``kind`` enum or const when it has
    one, else by the kind's name in the path. kubeconform checks this so that a template
    not varying with the kind does not validate every kind against one schema."""
    declared = schema.get("properties", {}).get("kind")
    if isinstance(declared, dict) and (declared.get("enum") or "const" in declared):
        first = declared["enum"][0] if declared.get("enum") else declared["const"]
        return not isinstance(first, str) or first == kind
    return kind.lower() in where.lower()


def _messages(error: ValidationError) -> list[str]:
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and error.validator_value is False:
        # One message per field, at the field's own path: that is where the typo is.
        known = error.schema.get("properties", {})
        patterns = error.schema.get("patternProperties", {})
        return [
            f"{_json_path([*path, name])}: unknown field"
            for name in error.instance
            if name not in known and not any(re.search(pattern, name) for pattern in patterns)
        ]
    message = error.message
    if len(message) > _MAX_MESSAGE:  # messages quote the failing value, which can be a whole pod spec
        message = message[: _MAX_MESSAGE - 3] + "..."
    return [f"{_json_path(path)}: {message}"]


def _json_path(parts: list[str | int]) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += "." + part
        else:
            out += "[" + json.dumps(part) + "]"
    return out
