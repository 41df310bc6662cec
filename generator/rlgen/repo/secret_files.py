"""Where a repository with SOPS-encrypted values keeps them: one encrypted file per key under
``secrets/<namespace>/<name>/<key>``, each listed by a ``secretGenerator`` entry of
``secrets/kustomization.yaml`` (kustomize-controller decrypts generator files before it builds)."""
from __future__ import annotations

from pathlib import Path

from rlgen.contributions import SECRETS_FOLDER
from rlgen.errors import RlgenError
from rlgen.tools import yamlio

KUSTOMIZATION = f"{SECRETS_FOLDER}/kustomization.yaml"


def value_path(namespace: str, name: str, key: str) -> str:
    return f"{SECRETS_FOLDER}/{namespace}/{name}/{key}"


def generators(root: Path) -> dict[tuple[str, str], list[str]]:
    """``(namespace, name) -> [key, ...]`` of the generator entries, as the kustomization lists them."""
    doc = _read(root)
    out: dict[tuple[str, str], list[str]] = {}
    for entry in doc.get("secretGenerator") or []:
        if isinstance(entry, dict):
            files = [str(f).split("=", 1)[0] for f in entry.get("files") or []]
            out[(str(entry.get("namespace", "")), str(entry.get("name", "")))] = files
    return out


def add(root: Path, namespace: str, name: str, key: str, labels: dict[str, str] | None = None) -> None:
    """List ``key`` of Secret ``namespace/name`` in the generator (once; entries and files sorted),
    with the ``labels`` the Secret must carry."""
    path = root / KUSTOMIZATION
    doc = _read(root)
    entries = doc.get("secretGenerator")
    if entries is None or not isinstance(entries, list):
        doc["secretGenerator"] = entries = []
    if hasattr(entries, "fa"):  # the generated empty list is written `[]`: entries go one a line
        entries.fa.set_block_style()
    entry = next((e for e in entries if isinstance(e, dict) and e.get("name") == name
                  and e.get("namespace") == namespace), None)
    if entry is None:
        entry = {"name": name, "namespace": namespace, "files": []}
        entries.append(entry)
        entries.sort(key=lambda e: (str(e.get("namespace")), str(e.get("name"))))
    if labels:
        entry["options"] = {"labels": dict(sorted(labels.items()))}
    files = entry.setdefault("files", [])
    item = f"{key}={value_path(namespace, name, key).removeprefix(SECRETS_FOLDER + '/')}"
    if item not in files:
        files.append(item)
        files.sort()
    path.write_text(yamlio.dump(doc))


def _read(root: Path) -> dict:
    path = root / KUSTOMIZATION
    if not path.is_file():
        raise RlgenError(f"{path}: missing (the secrets plugin writes it; run rlgen update)")
    doc = yamlio.read_file(path)
    if not isinstance(doc, dict):
        raise RlgenError(f"{path}: expected a kustomization (a mapping)")
    return doc
