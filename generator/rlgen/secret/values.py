"""What ``rlgen secret`` does: find the Secret a value belongs to, and with the ``sops`` plugin
encrypt the value in memory and commit only the encrypted file; with the other plugins say
where the value goes and keep nothing."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from rlgen.errors import RlgenError
from rlgen.repo.secret_plan import SecretPlan, plan
from rlgen.output import resolve_output, to_json
from rlgen.repo import secret_files
from rlgen.tools import git, git_recovery, sops
from rlgen.tools.git_change import GitChange


def set_value(root: Path, name: str, key: str, namespace: str | None, env: str | None, dry_run: bool,
              output: str | None) -> None:
    """Set ``key`` of Secret ``name`` from ``$env``, else standard input (a hidden prompt on a
    terminal), and report it."""
    found = plan(root)
    secret = found.find(name, namespace)
    if key not in secret.keys:
        raise RlgenError(f"Secret {secret.namespace}/{secret.name} has no key '{key}' (keys: {', '.join(secret.keys)})")
    fields = {"secret": secret.name, "namespace": secret.namespace, "key": key, "plugin": found.plugin}
    if not found.encrypted:
        # Nothing is stored, so nothing may look stored: a script piping the value in must fail.
        hint = found.delivery.set_hints.get(f"{secret.namespace}/{secret.name}") or ""
        raise RlgenError(f"the {found.plugin} plugin keeps Secret values outside Git, so rlgen reads and stores "
                         f"no value{': ' + hint.replace('{key}', key) if hint else ''}")
    click.get_current_context().with_resource(git_recovery.lock(root))
    git.require_branch(root)
    value = _value(env)
    rel = secret_files.value_path(secret.namespace, secret.name, key)
    target = root / rel
    encrypted = sops.encrypt(root, target, value)
    with GitChange(root, [target.parent, root / secret_files.KUSTOMIZATION], dry_run) as change:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(encrypted)
        secret_files.add(root, secret.namespace, secret.name, key, dict(secret.labels))
        if not change.changed():
            _report(output, change, f"{rel}: unchanged", **fields, file=rel, hint=None)
            return
        change.commit(f"Secret {secret.namespace}/{secret.name}: set {key}\n\n"
                      f"Encrypted with sops for the age recipients of {sops.CONFIG}.\n")
    _report(output, change, f"Set {key} of Secret {secret.namespace}/{secret.name}: {rel}, committed (encrypted).",
            **fields, file=rel, hint=None)




def list_secrets(root: Path, output: str | None) -> None:
    """Each Secret the repository reads: its keys, whether each is set, and what uses it."""
    found = plan(root)
    rows = [_row(root, found, s) for s in found.secrets]
    if resolve_output(output) == "json":
        click.echo(to_json({"plugin": found.plugin, "secrets": rows}))
        return
    table = [("SECRET", "NAMESPACE", "KEYS", "USED BY")] + [
        (r["name"], r["namespace"], ", ".join(f"{k} ({'set' if v is True else 'unset' if v is False else v})"
                                              for k, v in r["keys"].items()), r["used_by"]) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(3)]
    for row in table:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[3])



def _report(output: str | None, change: GitChange, text: str, **fields) -> None:
    """``text`` (or a dry run's preview) on a table; JSON: ``fields`` and the change's own."""
    if resolve_output(output) == "json":
        click.echo(to_json({**fields, **change.as_json()}))
    else:
        click.echo((change and change.preview) or text)


def _row(root: Path, found: SecretPlan, s) -> dict:
    if found.encrypted:
        listed = secret_files.generators(root).get((s.namespace, s.name), [])
        keys = {k: k in listed and (root / secret_files.value_path(s.namespace, s.name, k)).is_file() for k in s.keys}
    else:
        keys = {k: "outside Git" for k in s.keys}
    return {"name": s.name, "namespace": s.namespace, "keys": keys, "purpose": s.purpose, "used_by": s.used_by}


#: Kubernetes refuses a Secret whose data adds up to more (MaxSecretSize, docs/upstream.md).
MAX_SECRET_BYTES = 1024 * 1024


def _value(env: str | None) -> bytes:
    if env:
        if env not in os.environ:
            raise RlgenError(f"--from-env {env}: the variable is not set")
        text = os.environ[env]
    elif sys.stdin.isatty():
        text = click.prompt("Value", hide_input=True, confirmation_prompt=True, err=True)
    else:
        # Read no further than the limit and its line end: an endless pipe ends here too.
        text = sys.stdin.read(MAX_SECRET_BYTES + 3)
        text = text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")
    if not text:
        raise RlgenError("the value is empty: give it on standard input or with --from-env VAR")
    value = text.encode()
    if len(value) > MAX_SECRET_BYTES:
        raise RlgenError(f"the value is over {MAX_SECRET_BYTES} bytes (1 MiB), the most Kubernetes keeps in a "
                         "Secret: store it elsewhere (OSS) and put its location in the Secret")
    return value
