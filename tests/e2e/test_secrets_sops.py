"""The synced repository switched to SOPS-encrypted Secrets, as a team would: ``rlgen update
--plugin sops``, each value set with ``rlgen secret set``, the hand-made Secrets deleted and only
the age key created by hand. Flux's real kustomize-controller decrypts the secrets stage; the
Secrets come back with their keys and the pods that read them are created. Runs last: it changes
how the shared repository gets its Secrets."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from support.controlplane import wait_until
from support.flux import reconcile
from support.repos import ok, run_rlgen
from support.toolchain import tool

pytestmark = pytest.mark.usefixtures("dump_on_failure")

#: Values shaped like credentials a secret scanner knows (AWS key id, GitHub token).
VALUES = {
    ("sandbox-system", "sandbox-admin-api-key", "adminApiKey"): "ghp_" + "Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVcXz9",
    ("rl-training", "sandbox-api-key", "apiKey"): "ghp_" + "Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVcXz9Qw8",
    ("rl-training", "oss-credentials", "akId"): "AKIAQ4W7E2R9T5Y3U8I6",
    ("rl-training", "oss-credentials", "akSecret"): "ghp_" + "Ty6Ui5Op4As3Df2Gh1Jk0LmNbVcXz9Qw8Er7",
    ("rl-training", "hf-token", "token"): "ghp_" + "Ui5Op4As3Df2Gh1Jk0LmNbVcXz9Qw8Er7Ty6",
}
PATTERNS_ONLY = ("--disable-plugin", "Base64HighEntropyString", "--disable-plugin", "HexHighEntropyString",
                 "--disable-plugin", "KeywordDetector")


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def scan(folder: Path) -> dict:
    detect = Path(os.sys.executable).parent / "detect-secrets"
    result = subprocess.run([str(detect), "scan", "--all-files", *PATTERNS_ONLY, "."], cwd=folder,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["results"]


def test_sops_repository_syncs_with_only_the_age_key_made_by_hand(control_plane, synced, tmp_path):
    cp, repo = control_plane, synced["repo"]
    env = {**os.environ, "PATH": f"{Path(tool('sops')).parent}{os.pathsep}{os.environ['PATH']}"}
    key = tmp_path / "age.agekey"
    subprocess.run([tool("age-keygen"), "-o", str(key)], check=True, capture_output=True)
    public = subprocess.run([tool("age-keygen"), "-y", str(key)], check=True, capture_output=True,
                            text=True).stdout.strip()
    git(repo, "checkout", "--quiet", "main")
    ok(run_rlgen("update", "--no-branch", "--plugin", "sops", "--set", f"sops.age_recipients={public}",
                 cwd=repo, env=env))
    # The Secrets of the plugins earlier tests left selected (mlflow's, say) get values too.
    listed = json.loads(ok(run_rlgen("secret", "list", "-o", "json", cwd=repo, env=env)))["secrets"]
    values = dict(VALUES)
    for s in listed:
        for k in s["keys"]:
            digest = hashlib.sha256(f"{s['namespace']}/{s['name']}/{k}".encode()).hexdigest()[:36]
            values.setdefault((s["namespace"], s["name"], k), "ghp_" + digest)
    for (ns, name, k), value in values.items():
        ok(run_rlgen("secret", "set", name, k, "-n", ns, cwd=repo, env=env, input=value))
    listed = json.loads(ok(run_rlgen("secret", "list", "-o", "json", cwd=repo, env=env)))["secrets"]
    assert all(all(v is True for v in s["keys"].values()) for s in listed), listed
    result = run_rlgen("validate", "-o", "json", cwd=repo, env=env)
    assert result.returncode == 0, result.stdout + result.stderr

    for ns, name in {(ns, name) for ns, name, _ in values}:
        cp.kubectl("delete", "secret", name, "-n", ns, "--ignore-not-found")
    cp.kubectl("create", "secret", "generic", "sops-age", "-n", "flux-system", f"--from-file=age.agekey={key}")
    git(repo, "push", "--quiet", "origin", "main")
    stages = reconcile(cp)
    assert stages["secrets"]["spec"]["decryption"]["secretRef"] == {"name": "sops-age"}

    for (ns, name, k), value in values.items():
        secret = json.loads(cp.kubectl("get", "secret", name, "-n", ns, "-o", "json").stdout)
        assert base64.b64decode(secret["data"][k]).decode() == value, f"{ns}/{name} {k}"
    # The pods that read the Secrets are created again from their owners, with every key present.
    cp.kubectl("delete", "pods", "-n", "sandbox-system", "--all", "--wait=false")
    owners = wait_until("the sandbox-manager pods recreated",
                        lambda: [p for p in cp.objects("pods", "-n", "sandbox-system")
                                 if not p["metadata"].get("deletionTimestamp")], timeout=120)
    refs = [(e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
            for p in owners for c in p["spec"]["containers"] for e in c.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})]
    assert ("sandbox-admin-api-key", "adminApiKey") in refs

    # Only ciphertext in the repository and its history: the scanner finds each value in plain
    # sight, and none of them there.
    plain = tmp_path / "plain"
    plain.mkdir()
    for i, value in enumerate(values.values()):
        (plain / f"value-{i}.txt").write_text(value + "\n")  # the scanner reports one token type per file
    assert len(scan(plain)) == len(values)
    assert scan(repo) == {}
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    for line in git(repo, "rev-list", "--all", "--objects").splitlines():
        sha = line.split()[0]
        if git(repo, "cat-file", "-t", sha).strip() == "blob":
            (blobs / sha).write_bytes(subprocess.run(["git", "-C", str(repo), "cat-file", "blob", sha],
                                                     capture_output=True, check=True).stdout)
    assert scan(blobs) == {}
