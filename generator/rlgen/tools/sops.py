"""The ``sops`` binary: encrypt one value from memory, read who a file is encrypted for.

A value goes to ``sops`` on its standard input and comes back encrypted on its standard output:
the plaintext never touches the disk. Encrypting needs only the public keys of ``.sops.yaml``.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.tools import children, yamlio

CONFIG = ".sops.yaml"


def encrypt(root: Path, path: Path, value: bytes) -> bytes:
    """``value`` encrypted (sops binary format) by the creation rule of ``root/.sops.yaml`` that
    matches ``path``."""
    binary = shutil.which("sops")
    if binary is None:
        raise RlgenError("sops is not on PATH: install sops 3.9 or newer (it encrypts the value)")
    cmd = [binary, "--config", str(root / CONFIG), "encrypt", "--input-type", "binary",
           "--output-type", "binary", "--filename-override", str(path)]
    # Only the encrypted file and sops's own message come back; the value is never an argument.
    result = children.run(cmd, cwd=root, input=value)
    if result.returncode != 0:
        message = " ".join(result.stderr.decode(errors="replace").split())[:300]
        raise RlgenError(f"sops could not encrypt for {path.relative_to(root)}: {message}")
    if not is_encrypted(result.stdout):
        raise RlgenError(f"sops returned no encrypted file for {path.relative_to(root)}")
    return result.stdout


def encrypt_for(recipient: str, value: bytes, name: str, cwd: Path) -> bytes:
    """``value`` encrypted (sops binary format) for one age ``recipient`` given on the command
    line, as the file ``name``; ``cwd`` must have no ``.sops.yaml`` above it."""
    binary = shutil.which("sops")
    if binary is None:
        raise RlgenError("sops is not on PATH: install sops 3.9 or newer (it encrypts the value)")
    cmd = [binary, "encrypt", "--age", recipient, "--input-type", "binary", "--output-type", "binary",
           "--filename-override", name]
    result = children.run(cmd, cwd=cwd, input=value)
    if result.returncode != 0 or not is_encrypted(result.stdout):
        message = " ".join(result.stderr.decode(errors="replace").split())[:300]
        raise RlgenError(f"sops could not encrypt for {name}: {message or 'no encrypted file returned'}")
    return result.stdout


def metadata(content: bytes) -> dict | None:
    """The ``sops`` block of an encrypted file (binary, JSON or YAML format), or None."""
    try:
        doc = json.loads(content)
    except ValueError:
        try:
            doc = yamlio.read_plain(content.decode())
        except (ValueError, UnicodeDecodeError):
            return None
    block = doc.get("sops") if isinstance(doc, dict) else None
    return block if isinstance(block, dict) and block.get("mac") else None


def is_encrypted(content: bytes) -> bool:
    return metadata(content) is not None


def recipients(content: bytes) -> list[str]:
    """The age recipients an encrypted file's data key is encrypted for."""
    block = metadata(content) or {}
    return sorted(str(a.get("recipient", "")) for a in block.get("age") or [] if isinstance(a, dict))


def config_recipients(root: Path) -> list[str]:
    """The age recipients of the first creation rule of ``.sops.yaml``."""
    path = root / CONFIG
    doc = yamlio.read_file(path)
    rules = doc.get("creation_rules") if isinstance(doc, dict) else None
    if not isinstance(rules, list) or not rules or not isinstance(rules[0], dict):
        raise RlgenError(f"{path}: creation_rules: expected a list of rules")
    age = rules[0].get("age", "")
    keys = age.split(",") if isinstance(age, str) else age
    return sorted(str(k).strip() for k in keys or [] if str(k).strip())
