"""The bucket the repository records (its storage plugin's bucket, region and endpoint in
rlgen.yaml), asked with the OSS SDK when the environment holds the credentials ``rlgen data
upload`` reads; without them the row says what it skipped."""
from __future__ import annotations

import os
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.kube.report import CANNOT, OK, PROBLEM, SKIPPED, Row
from rlgen.repo import answers

#: Seconds the whole check may take, however slowly the endpoint answers (RLGEN_OSS_DEADLINE lowers it).
DEADLINE_SECONDS = 20
CREDENTIALS_FIX = ("export OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET (a key that may read the bucket), "
                   "or the RRSA variables, and run rlgen doctor again")


class _Quiet:
    def retry(self, what: str) -> None:
        pass


def check(repo: Path) -> list[Row]:
    plugin, name, region, endpoint = _bucket(repo)
    if not name or not region:
        return []
    title = f"bucket {name}"
    try:
        # Lazy: the OSS SDK is the optional extra rlgen[data]; its absence is a skipped row.
        import alibabacloud_oss_v2 as oss
    except ImportError:
        return [Row(title, SKIPPED, "not asked: the OSS SDK is not installed", "pip install 'rlgen[data]'")]
    # Lazy: these import the OSS SDK found above.
    from rlgen.oss.client import Deadline, make_client, resolve_endpoint, service_error
    from rlgen.oss.credentials import ACCESS_KEY_VARIABLES, RRSA_VARIABLES, from_environment, redact

    if not any(os.environ.get(v) for v in (*ACCESS_KEY_VARIABLES, *RRSA_VARIABLES)):
        return [Row(title, SKIPPED, f"not asked: no OSS credentials in the environment "
                                    f"({' and '.join(ACCESS_KEY_VARIABLES)}, or RRSA)", CREDENTIALS_FIX)]
    try:
        credentials, _ = from_environment()
        address = resolve_endpoint(endpoint, region)
    except RlgenError as exc:
        return [Row(title, CANNOT, str(exc), CREDENTIALS_FIX)]
    seconds = min(DEADLINE_SECONDS, float(os.environ.get("RLGEN_OSS_DEADLINE") or DEADLINE_SECONDS))
    deadline = Deadline(seconds)
    where = f"at {address} ({plugin}: region {region})"
    try:
        # GetBucketAcl: what the SDK's own is_bucket_exist asks; any key that may use the bucket may read it.
        make_client(region, address, credentials, 1, _Quiet(), deadline, attempts=2).get_bucket_acl(
            oss.GetBucketAclRequest(bucket=name))
    except Exception as exc:
        error = service_error(exc)
        if error is None:
            reason = "no answer within the deadline" if deadline.expired else " ".join(redact(str(exc)).split())[:200]
            return [Row(title, CANNOT, f"unreachable {where}: {reason}",
                        f"check the endpoint and region ({plugin}.endpoint, {plugin}.region in rlgen.yaml) "
                        "and that this machine reaches OSS")]
        return [_answered(error, title, where, name, region, plugin)]
    finally:
        deadline.stop()
    return [Row(title, OK, f"found {where}")]


def _bucket(repo: Path) -> tuple[str, str | None, str | None, str | None]:
    """(the storage plugin, its bucket, region and endpoint) as rlgen.yaml records them."""
    recorded = answers.read(repo)
    plugin = recorded["plugins"].get("storage", "")
    options = recorded["options"].get(plugin) or {}
    return plugin, options.get("bucket"), options.get("region"), options.get("endpoint") or None


def _answered(error, title: str, where: str, name: str, region: str, plugin: str) -> Row:
    """The row of an error answer of OSS to the bucket's GetBucketAcl."""
    if error.code == "NoSuchBucket":
        return Row(title, PROBLEM, f"not found {where}",
                   f"create bucket {name} in {region}, or rlgen update --set {plugin}.bucket=NAME")
    if error.status_code == 403:
        return Row(title, CANNOT, f"access denied {where}: {error.code}",
                   f"grant this key read access to bucket {name} (oss:GetBucketAcl), or use the key that owns it")
    return Row(title, CANNOT, f"OSS answered {error.status_code} {error.code} {where}", CREDENTIALS_FIX)
