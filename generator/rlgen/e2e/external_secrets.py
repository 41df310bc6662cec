"""External Secrets on the throwaway control plane: its controller at the pinned release, as a
process, reading the repository's ExternalSecrets from the KMS Secrets Manager and STS
stand-ins of rlgen.e2e.alibaba_kms, each KMS secret holding a placeholder for every key read.

A store authenticated by RRSA reads the operator's ServiceAccount token from the file its
``oidcTokenFilePath`` names, a path in the operator's pod; here the controller is a process, so
the commit synced is the one tested plus one commit on top (rlgen.e2e.commit_on_top) whose
stores name a token file made for this run. A store authenticated by an AccessKey pair reads the
placeholder Secret rlgen e2e creates, whose pair the stand-in accepts.
"""
from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from rlgen.e2e import commit_on_top as on_top
from rlgen.e2e.alibaba_kms import STS_HOST, AlibabaCloud
from rlgen.e2e.controlplane import ControlPlane, free_port
from rlgen.e2e.programs import pinned
from rlgen.errors import RlgenError
from rlgen.tools import yamlio

MODULE = "github.com/external-secrets/external-secrets"
GROUP = "external-secrets.io"
#: The operator's namespace and ServiceAccount, as its Helm chart names them: the subject STS grants.
NAMESPACE = "external-secrets"
ACCOUNT = "external-secrets"
STORE_KINDS = ("ClusterSecretStore", "SecretStore")


@dataclass(frozen=True)
class Running:
    """The stand-in cloud the controller reads, and the token file an RRSA store is pointed at."""

    cloud: AlibabaCloud
    token_file: Path


def _objects(needs, kinds) -> list[dict]:
    return [o for (api, kind), objs in sorted(needs.custom.items())
            if kind in kinds and api.startswith(GROUP + "/") for o in objs]


def _alibaba(store: dict) -> dict:
    return ((store.get("spec") or {}).get("provider") or {}).get("alibaba") or {}


def kms_values(needs, placeholder: str) -> dict[str, str]:
    """KMS secret name -> its value: a JSON object with a placeholder for each key an
    ExternalSecret reads of it (a ``dataFrom`` extract: the keys its Secret's readers use)."""
    values: dict[str, dict] = {}
    for es in _objects(needs, ("ExternalSecret",)):
        spec, meta = es.get("spec") or {}, es["metadata"]
        for item in spec.get("data") or []:
            ref = item.get("remoteRef") or {}
            values.setdefault(ref["key"], {})[ref.get("property") or item["secretKey"]] = placeholder
        target = (spec.get("target") or {}).get("name") or meta["name"]
        keys = sorted(needs.secrets[(meta.get("namespace", ""), target)].keys
                      if (meta.get("namespace", ""), target) in needs.secrets else []) or ["value"]
        for item in spec.get("dataFrom") or []:
            if key := (item.get("extract") or {}).get("key"):
                values.setdefault(key, {}).update({k: placeholder for k in keys})
    return {name: json.dumps(value, sort_keys=True) for name, value in values.items()}


def start(cp: ControlPlane, needs, work: Path, services: ExitStack, placeholder: str) -> Running:
    """The CRDs, the operator's ServiceAccount and token, the stand-in cloud (stopped with
    ``services``) holding the repository's KMS secrets, and the controller."""
    source = cp.source(MODULE)
    files = [a for crd in sorted((source / "config" / "crds" / "bases").glob("*.io_*.yaml")) for a in ("-f", str(crd))]
    cp.kubectl("apply", "--server-side", *files)
    cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", *files)
    cp.add_deployment(NAMESPACE, "external-secrets", f"ghcr.io/external-secrets/external-secrets:{pinned(MODULE)}")
    cp.kubectl("create", "serviceaccount", ACCOUNT, "-n", NAMESPACE)
    work.mkdir(parents=True, exist_ok=True)
    token = work / "oidc-token"
    token.write_text(cp.kubectl("create", "token", ACCOUNT, "-n", NAMESPACE, "--audience", STS_HOST,
                                "--duration", "6h").stdout.strip())
    stores = [_alibaba(s) for s in _objects(needs, STORE_KINDS) if _alibaba(s)]
    first = stores[0] if stores else {}
    rrsa = (first.get("auth") or {}).get("rrsa") or {}
    cloud = services.enter_context(AlibabaCloud(work, first.get("regionID", "cn-hangzhou"), rrsa.get("roleArn", ""),
                                                rrsa.get("oidcProviderArn", ""), f"{NAMESPACE}/{ACCOUNT}"))
    # The AccessKey Secret rlgen e2e creates holds the placeholder in both keys.
    cloud.access_keys[placeholder] = placeholder
    cloud.secrets.update(kms_values(needs, placeholder))
    cp.spawn("external-secrets", [
        cp.tool("external-secrets"), "--metrics-addr", f"127.0.0.1:{free_port()}",
        "--live-addr", f"127.0.0.1:{free_port()}",
    ], env={**cp.env(), **cloud.env()})
    return Running(cloud, token)


def _pointed(doc, token_file: Path) -> bool:
    """Point an RRSA store at ``token_file``; whether ``doc`` was one."""
    if not (isinstance(doc, dict) and doc.get("kind") in STORE_KINDS
            and str(doc.get("apiVersion", "")).startswith(GROUP + "/")):
        return False
    rrsa = (_alibaba(doc).get("auth") or {}).get("rrsa")
    if not isinstance(rrsa, dict) or rrsa.get("oidcTokenFilePath") == str(token_file):
        return False
    rrsa["oidcTokenFilePath"] = str(token_file)
    return True


def stand_in(root: Path, commit: str, work: Path, token_file: Path) -> tuple[str, dict]:
    """``commit`` with each RRSA store reading ``token_file``, and the Git environment that finds
    it; ``commit`` itself when no store reads a token."""
    env = on_top.git_env(root, work)
    changed: dict[str, tuple[str, bytes]] = {}
    for mode, blob, path in on_top.files(root, env, commit):
        if not path.endswith((".yaml", ".yml")):
            continue
        text = on_top.blob(root, env, blob)
        if b"oidcTokenFilePath" not in text:
            continue
        try:
            docs = yamlio.read_manifests_all(text.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise RlgenError(f"{root / path}: {exc}") from None
        if any([_pointed(d, token_file) for d in docs]):  # every document, not the first
            changed[path] = (mode, yamlio.dump_all(docs).encode())
    if not changed:
        return commit, env
    message = "rlgen e2e: the RRSA stores read the operator's token from this run's file"
    return on_top.commit(root, env, commit, changed, message), env
