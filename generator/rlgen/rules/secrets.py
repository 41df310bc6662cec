"""Rules on how the Secrets the repository reads reach the cluster: one the secrets plugin does
not provide, a SOPS file not encrypted or not encrypted for the recipients of ``.sops.yaml``, a
Secret with plaintext values in a committed file, an ExternalSecret key no consumer reads."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Iterator

from rlgen.contributions import SECRETS_FOLDER, SecretRef
from rlgen.errors import RlgenError
from rlgen.repo import secret_files
from rlgen.rules.base import Finding, Rendered
from rlgen.tools import git, repo_files, sops, yamlio

PLAINTEXT = "Secret with values committed to Git: create it on the cluster (README, Secrets) instead"


def is_sealed(secret: dict) -> bool:
    """Every value of ``secret`` is a SOPS-encrypted file (what kustomize-controller decrypts)."""
    if secret.get("stringData"):
        return False
    values = list((secret.get("data") or {}).values())
    try:
        return bool(values) and all(sops.is_encrypted(base64.b64decode(str(v))) for v in values)
    except ValueError:
        return False


def plaintext_files(repo: Path) -> Iterator[Finding]:
    """Each committed YAML file holding a Secret with values that are not SOPS-encrypted."""
    for rel in git.start(repo, "ls-files", "-z", "--", "*.yaml", "*.yml")().split("\0"):
        if not rel or rel.startswith("schemas/"):
            continue
        try:
            # Bounded and inside the repository: a committed link to /dev/zero is refused, not read.
            text = repo_files.read_bytes(repo / rel, repo).decode("utf-8")
            # A Secret's kind is spelled out, or escaped in a quoted string: any other file
            # (most of them: runs, kustomizations, values) holds none and is not parsed.
            docs = yamlio.read_plain_all(text) if "Secret" in text or "\\" in text else []
        except (ValueError, UnicodeDecodeError, OSError):
            continue  # not a manifest; kustomize or the schema check reports what it cannot read
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == "Secret" and (doc.get("data") or doc.get("stringData")) \
                    and not sops.is_encrypted(yamlio.dump(doc).encode()) and not is_sealed(doc):
                yield Finding(rel, Rendered(rel, doc).label, PLAINTEXT)


def sops_files(repo: Path, declared: list[SecretRef]) -> Iterator[Finding]:
    """Each value file under ``secrets/<namespace>/<name>/``: encrypted, for the recipients of
    ``.sops.yaml``; each key of a declared Secret listed by the generator and present."""
    wanted = sops.config_recipients(repo)
    listed = secret_files.generators(repo)
    folder = repo / SECRETS_FOLDER
    for path in sorted(p for p in folder.glob("*/*/*") if p.is_file()):
        rel = path.relative_to(repo).as_posix()
        label = f"Secret/{path.parent.parent.name}/{path.parent.name}"
        content = repo_files.read_bytes(path, repo)
        if not sops.is_encrypted(content):
            yield Finding(rel, label, "not encrypted by sops: set it again with rlgen secret set "
                                      f"{path.parent.name} {path.name} (and rotate the value: Git has it)")
        elif (found := sops.recipients(content)) != wanted:
            yield Finding(rel, label, f"encrypted for {', '.join(found) or 'no age recipient'}, not for the "
                                      f"recipients of {sops.CONFIG}: set it again with rlgen secret set")
    for s in declared:
        if s.optional:
            continue
        for key in s.keys:
            if key not in listed.get((s.namespace, s.name), []) or \
                    not (repo / secret_files.value_path(s.namespace, s.name, key)).is_file():
                yield Finding(secret_files.KUSTOMIZATION, f"Secret/{s.namespace}/{s.name}",
                              f"key {key} has no encrypted value (used by {s.used_by}): "
                              f"rlgen secret set {s.name} {key}")


def external_secrets(objects: list[Rendered], declared: list[SecretRef]) -> Iterator[Finding]:
    """Each declared Secret has an ExternalSecret with its keys; no ExternalSecret key is unread."""
    wanted = {(s.namespace, s.name): s for s in declared}
    seen: dict[tuple[str, str], set[str]] = {}
    for item in objects:
        if item.obj.get("kind") != "ExternalSecret":
            continue
        meta, spec = item.obj.get("metadata") or {}, item.obj.get("spec") or {}
        target = (meta.get("namespace", ""), (spec.get("target") or {}).get("name") or meta.get("name"))
        keys = {str(d.get("secretKey")) for d in spec.get("data") or [] if isinstance(d, dict)}
        # dataFrom.extract copies whatever keys the remote secret holds: any declared key may come.
        if any(isinstance(d, dict) and d.get("extract") for d in spec.get("dataFrom") or []):
            keys |= set(wanted[target].keys) if target in wanted else set()
        seen[target] = keys
        secret = wanted.get(target)
        if secret is None:
            yield Finding(item.source, item.label, f"fills Secret {target[0]}/{target[1]}, which nothing in the "
                                                   "repository reads")
            continue
        for key in sorted(keys - set(secret.keys)):
            yield Finding(item.source, item.label, f"key {key} of Secret {target[1]} is read by no consumer "
                                                   f"(they read {', '.join(secret.keys)})")
    for (ns, name), s in wanted.items():
        missing = set(s.keys) - seen.get((ns, name), set())
        if (ns, name) not in seen or missing:
            yield Finding(SECRETS_FOLDER, f"Secret/{ns}/{name}",
                          f"no ExternalSecret provides {', '.join(sorted(missing))} (used by {s.used_by})")


def secret_findings(repo: Path, objects: list[Rendered], declared: list[SecretRef], encrypted: bool,
                    in_files: list[Finding] | None = None) -> list[Finding]:
    """The findings of every secrets rule; ``in_files``: those of :func:`plaintext_files`, when
    the caller read the files already (before anything was rendered)."""
    found = list(plaintext_files(repo)) if in_files is None else list(in_files)
    if encrypted:
        if not (repo / sops.CONFIG).is_file():
            raise RlgenError(f"{repo / sops.CONFIG}: missing (the sops plugin writes it; run rlgen update)")
        found += sops_files(repo, declared)
    elif any(o.obj.get("kind") == "ExternalSecret" for o in objects):
        found += external_secrets(objects, declared)
    return found
