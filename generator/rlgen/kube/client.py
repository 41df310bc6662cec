"""The one door to the cluster: a kubeconfig context, read-only GETs, plain dicts back.

Every call goes through the official ``kubernetes`` client's typed methods with
``_preload_content=False`` and the JSON is parsed here, so the commands see the objects as the
API server wrote them (camelCase, as in YAML) and a server that answers something that is
not JSON is told apart from a Kubernetes API. Imported only by the cluster commands.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from rlgen.errors import RlgenError, require_extra

#: (connect, read) seconds: a cluster that does not answer in that time is unreachable.
TIMEOUT = (5, 20)


class CannotCheck(Exception):
    """The API server refused the request (401/403): the row says so, the others go on."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Target:
    """Where the commands read from, for the one line of an unreachable cluster."""

    context: str
    server: str

    def __str__(self) -> str:
        return f"the cluster at {self.server} (context {self.context})"


class Cluster:
    def __init__(self, api_client, target: Target):
        self._api = api_client
        self.target = target

    def call(self, what: str, *args, **kwargs):
        """``call("CoreV1Api.list_node")``: the parsed JSON answer, ``None`` for 404."""
        # Lazy: the optional extra rlgen[cluster]; kubernetes is 870 ms to import (median of 7).
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        api_name, method = what.split(".")
        api = getattr(client, api_name)(self._api)
        try:
            response = getattr(api, method)(*args, _preload_content=False, _request_timeout=TIMEOUT, **kwargs)
        except ApiException as exc:
            return self._refused(exc)
        except Exception as exc:  # urllib3: refused, timed out, TLS, connection reset
            if _is_transport_error(exc):
                raise RlgenError(f"cannot reach {self.target}: {_reason(exc)}") from None
            raise
        return self._parse(response.data)

    def _refused(self, exc):
        if exc.status == 404:
            return None
        message = _status_message(exc.body) or exc.reason or f"HTTP {exc.status}"
        if exc.status in (401, 403):
            raise CannotCheck(message)
        raise RlgenError(f"{self.target} answered HTTP {exc.status}: {message}")

    def _parse(self, data: bytes):
        try:
            doc = json.loads(data)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            snippet = data[:60].decode("utf-8", "replace").strip() if data else "an empty body"
            raise RlgenError(f"{self.target} did not answer like a Kubernetes API server ({snippet!r})")
        return doc

    def items(self, what: str, *args, **kwargs) -> list[dict]:
        """The ``items`` of a list call (none when the API is not served)."""
        return (self.call(what, *args, **kwargs) or {}).get("items") or []


def _is_transport_error(exc: Exception) -> bool:
    # Lazy: 182 ms (median of 7) unless kubernetes, which raised this error, loaded it already.
    import urllib3.exceptions

    return isinstance(exc, (urllib3.exceptions.HTTPError, OSError))


def _reason(exc: Exception) -> str:
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    # urllib3 wraps the socket error: keep its last, human part.
    return text.split(": ", 1)[-1] if "Errno" in text or "object at 0x" in text else text


def _status_message(body) -> str:
    try:
        doc = json.loads(body or b"")
    except ValueError:
        return ""
    return doc.get("message", "") if isinstance(doc, dict) else ""


def _kubeconfig(given: Path | None) -> tuple[str, str]:
    """(the kubeconfig the client reads, how an error line names it): --kubeconfig, else
    $KUBECONFIG (a list of files, as kubectl reads it), else ~/.kube/config, resolved here so
    the line says which file it tried."""
    if given:
        return str(given), f"{given} (--kubeconfig)"
    if os.environ.get("KUBECONFIG"):
        paths = os.environ["KUBECONFIG"]
        return paths, f"{os.pathsep.join(str(Path(p).expanduser()) for p in paths.split(os.pathsep) if p)} (KUBECONFIG)"
    default = Path("~/.kube/config").expanduser()
    return str(default), f"{default} (the default)"


def connect(kubeconfig: Path | None, context: str | None) -> Cluster:
    """A client for ``context`` of ``kubeconfig`` (default: $KUBECONFIG, then ~/.kube/config),
    checked by reading ``/version`` so an unreachable cluster stops the command at once."""
    require_extra("cluster", "reading the cluster", "kubernetes")
    # Lazy: kubernetes is 870 ms to import (median of 7).
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    # One retry: a refused connection is reported in seconds, not after urllib3's default three.
    configuration.retries = 1

    path, where = _kubeconfig(kubeconfig)
    if kubeconfig and not kubeconfig.is_file():
        raise RlgenError(f"{where}: no such file")
    if not kubeconfig and not any(Path(p).expanduser().is_file() for p in path.split(os.pathsep) if p):
        raise RlgenError(f"no kubeconfig at {where}: pass --kubeconfig FILE (or set KUBECONFIG)")
    try:
        contexts, active = config.list_kube_config_contexts(config_file=path)
        chosen = context or (active or {}).get("name")
        api_client = config.new_client_from_config(config_file=path, context=chosen,
                                                   client_configuration=configuration, persist_config=False)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise RlgenError(f"{where}: not a kubeconfig (YAML error{line}); pass another with --kubeconfig FILE") from None
    except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RlgenError(f"{where}: {detail}; pass another with --kubeconfig FILE") from None
    cluster = Cluster(api_client, Target(chosen or "?", api_client.configuration.host))
    version = cluster.call("VersionApi.get_code")
    if not version or "gitVersion" not in version:
        raise RlgenError(f"{cluster.target} did not answer like a Kubernetes API server (no /version)")
    cluster.version = version["gitVersion"]
    return cluster
