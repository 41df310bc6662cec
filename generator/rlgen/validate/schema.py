"""Validate rendered Kubernetes objects the way ``kubeconform -strict`` does.

The lookup order and what counts as a missing schema follow yannh/kubeconform
(pkg/validator/validator.go, pkg/loader/http.go); locations are read as in
:mod:`rlgen.validate.locations`, so one list means the same thing here and to the binary.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator, Draft4Validator, Draft6Validator, Draft7Validator, validators

from rlgen.validate.formats import kubeconform_format_checker
from rlgen.validate.kubeconform import kubeconform_binary, validate_with_kubeconform
from rlgen.validate.locations import (
    DEFAULT_LOCATION,
    SCHEMA_DIR_ENV,
    env_locations,
    render,
    resolve,
    schema_dir_locations,
)
from rlgen.validate.paths import MISSING, UNKNOWN, json_path

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["DEFAULT_LOCATION", "SCHEMA_DIR_ENV", "SchemaValidator", "env_locations", "kubeconform_binary",
           "schema_dir_locations", "validate_with_kubeconform"]

# santhosh-tekuri/jsonschema, kubeconform's validator, reads this $schema (used by the
# yannh/kubernetes-json-schema files) as the latest draft; python-jsonschema does not know it.
_LATEST_ALIAS = re.compile(r"https?://json-schema\.org/schema#?")
# santhosh-tekuri v6 (validator.go) checks these in this order at each schema node and stops at
# the first that fails: nothing else of that node is reported.
_FIRST_FAILURE = ("type", "const", "enum", "format")
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
        self._docs: dict[tuple[str, str], dict | str] = {}
        #: (apiVersion, kind) -> (index of the location, rendered location) of each schema found.
        self.found: dict[tuple[str, str], tuple[int, str]] = {}

    def validate(self, obj: dict) -> list[str]:
        """Problems in ``obj``, each starting with its JSON path, or the one line saying
        why it cannot be checked (no schema found); empty when it is valid."""
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if not (isinstance(kind, str) and kind and isinstance(api_version, str) and api_version):
            return ["missing apiVersion or kind: no schema to look up"]  # of the object, as kubeconform says
        found = self.lookup(api_version, kind)
        if isinstance(found, str):
            return [found]
        return [message for error in _as_kubeconform(found.iter_errors(obj)) for message in _messages(error)]

    def lookup(self, api_version: str, kind: str) -> Validator | str:
        """The compiled schema for a type, or the one-line reason there is none (once per type)."""
        key = (api_version, kind)
        if key not in self._by_type:
            found = self.locate(api_version, kind)
            self._by_type[key] = found if isinstance(found, str) else _compile(found)
        return self._by_type[key]

    def locate(self, api_version: str, kind: str) -> dict | str:
        """The schema document for a type, or the one-line reason there is none (once per
        type); :attr:`found` says where it is. Nothing is compiled."""
        key = (api_version, kind)
        if key not in self._docs:
            self._docs[key] = self._find(api_version, kind)
        return self._docs[key]

    def _find(self, api_version: str, kind: str) -> dict | str:
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
            schema = _schema(raw)
            if schema is None:
                tried.append(f"{where} (not a JSON schema)")
            else:
                # Whatever kind it describes: kubeconform v0.8.0 (pkg/validator/validator.go
                # downloadSchema) takes the first schema found, so a template that ignores the
                # kind validates every kind against one schema.
                self.found[(api_version, kind)] = (index, where)
                return schema
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
    # Lazy: most runs find every schema in a local folder, and http.client with ssl is 34 ms,
    # urllib.request 29 ms more (medians of 7), as much as a build of a small root.
    import http.client
    import urllib.error
    import urllib.request

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


def _schema(raw: bytes) -> dict | None:
    """The schema document, or None when it is not one (kubeconform then tries the next
    location, as for a missing file)."""
    try:
        schema = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(schema, dict) or not isinstance(schema.get("$schema", ""), str):
        return None
    return schema


@lru_cache(maxsize=1)
def _engine() -> tuple[Any, ...]:
    """python-jsonschema, set up as kubeconform's validator reads schemas; imported only when
    rlgen checks schemas itself (kubeconform, when on PATH, needs none of it)."""
    # kubeconform reads YAML into JSON, where every number is a float64, and santhosh-tekuri takes a
    # whole number as an integer in every draft; python-jsonschema's draft 4 refuses 1.0.
    draft4 = validators.extend(Draft4Validator, type_checker=Draft4Validator.TYPE_CHECKER.redefine(
        "integer", lambda checker, value: Draft6Validator.TYPE_CHECKER.is_type(value, "integer")))
    # Before draft 2019-09 "format" is an assertion, later only an annotation (santhosh-tekuri
    # agrees). Unknown formats such as int-or-string or int64 pass either way.
    asserting = (Draft4Validator, Draft6Validator, Draft7Validator)
    return validators, Draft4Validator, Draft202012Validator, draft4, asserting, kubeconform_format_checker()


def _compile(schema: dict) -> Validator:
    validators, draft4, latest, draft4_integers, asserting, formats = _engine()
    if _LATEST_ALIAS.fullmatch(schema.get("$schema", "")):
        cls = latest
    else:
        cls = validators.validator_for(schema, default=draft4)  # kubeconform's default draft
    checker = formats if cls in asserting else None
    if cls is draft4:
        cls = draft4_integers
    # No meta-validation (check_schema): it costs seconds on RayJob's schema at every run,
    # and the files come from the same converters kubeconform's catalogs use.
    return cls(schema, format_checker=checker)


def _as_kubeconform(errors) -> list[ValidationError]:
    """The errors santhosh-tekuri reports: at a node where type, const, enum or format fails,
    only the first of them. python-jsonschema yields one ``required`` error per missing field;
    one per node is kept, :func:`_messages` names every missing field from it."""
    errors = list(errors)
    first: dict[tuple, ValidationError] = {}
    for error in errors:
        if error.validator in _FIRST_FAILURE:
            node = (id(error.schema), tuple(error.absolute_path))
            known = first.get(node)
            if known is None or _FIRST_FAILURE.index(error.validator) < _FIRST_FAILURE.index(known.validator):
                first[node] = error
    kept, required = [], set()
    for error in errors:
        node = (id(error.schema), tuple(error.absolute_path))
        if node in first and error is not first[node]:
            continue
        if error.validator == "required":
            if node in required:
                continue
            required.add(node)
        kept.append(error)
    return kept


def _messages(error: ValidationError) -> list[str]:
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and error.validator_value is False:
        # One message per field, at the field's own path: that is where the typo is.
        known = error.schema.get("properties", {})
        patterns = error.schema.get("patternProperties", {})
        return [
            f"{json_path([*path, name])}: {UNKNOWN}"
            for name in error.instance
            if name not in known and not any(re.search(pattern, name) for pattern in patterns)
        ]
    if error.validator == "required" and isinstance(error.instance, dict):
        # Likewise one per field, at the path where it belongs.
        return [f"{json_path([*path, name])}: {MISSING}" for name in error.validator_value
                if name not in error.instance]
    message = error.message
    if len(message) > _MAX_MESSAGE:  # messages quote the failing value, which can be a whole pod spec
        message = message[: _MAX_MESSAGE - 3] + "..."
    return [f"{json_path(path)}: {message}"]
