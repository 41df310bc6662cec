"""The Git host's push webhook as the README sets it up: the generated Receiver Ready under the
path its token gives, a signed push notice making Flux fetch the pushed commit and the new run
reaching the cluster as a RayJob, with polling out of the way; a notice signed with another
token changes nothing."""
from __future__ import annotations

import hashlib
import json
import subprocess

import pytest
from support.controlplane import wait_until
from support.flux import NAMESPACE, RECEIVER, fetched_revision, post_push, receiver, reconcile, webhook_token
from support.repos import ok, run_rlgen

pytestmark = pytest.mark.usefixtures("dump_on_failure")

RUN = "webhook-check"


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def set_poll_interval(cp, interval: str) -> None:
    cp.kubectl("patch", "gitrepository/flux-system", "-n", "flux-system", "--type=merge",
               "-p", f'{{"spec":{{"interval":"{interval}"}}}}')


def test_a_signed_push_webhook_brings_the_new_run_without_waiting_for_the_poll(control_plane, synced):
    cp, repo = control_plane, synced["repo"]
    found = receiver(cp)
    token = webhook_token(cp)
    # The README reads the URL path from the status; notification-controller derives it from the token.
    path = found["status"]["webhookPath"]
    assert path == "/hook/" + hashlib.sha256(f"{token}{RECEIVER}flux-system".encode()).hexdigest()

    # Polling out of the way: within this test only the webhook can make Flux fetch.
    set_poll_interval(cp, "1h")
    try:
        git(repo, "checkout", "--quiet", "main")
        ok(run_rlgen("run", "new", RUN, "--no-branch", cwd=repo))
        git(repo, "push", "--quiet", "origin", "main")
        commit = git(repo, "rev-parse", "HEAD").strip()
        rayjob = next(r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))
                      if r["run"] == RUN)
        before = fetched_revision(cp)
        assert commit not in before

        # Signed with another token: refused, and Flux still has the old revision.
        assert post_push(cp, path, token + "-not-it", commit) == 400
        # Nothing else could fetch within these seconds either: the poll is an hour away.
        with pytest.raises(AssertionError, match="timed out"):
            wait_until("a fetch after a wrongly signed notice", lambda: commit in fetched_revision(cp), timeout=10)

        assert post_push(cp, path, token, commit) == 200
        wait_until("Flux to fetch the pushed commit", lambda: commit in fetched_revision(cp), timeout=60)
        wait_until(f"RayJob {rayjob} of the pushed run", lambda: any(
            j["metadata"]["name"] == rayjob for j in cp.objects("rayjobs", "-n", NAMESPACE)), timeout=300)
    finally:
        set_poll_interval(cp, "1m0s")
        # The run's GPUs free again for the modules after this one.
        if RUN in ok(run_rlgen("run", "list", cwd=repo)):
            ok(run_rlgen("run", "rm", RUN, "--no-branch", cwd=repo))
            git(repo, "push", "--quiet", "origin", "main")
            reconcile(cp)
