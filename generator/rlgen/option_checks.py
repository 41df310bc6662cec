"""Checks of option values at the door, for ``Option(check=...)`` of rlgen and its plugins:
each returns why a value is wrong, or ``None``. A value that passes renders into objects the
API server, kustomize, OSS and git accept, so a generated repository never fails its own
``rlgen validate`` on an answer."""
from __future__ import annotations

import difflib
import json
import math
import re
import subprocess
from typing import Any, Callable
from urllib.parse import urlsplit

from rlgen.naming import dns1123_label_error
from rlgen.spec import MODELSCOPE_PREFIX

__all__ = ["control_error", "credential_error", "dns1123_label_error", "duration_error", "endpoint_error",
           "dataset_source_error", "git_branch_error", "git_url_error", "hub_id_error", "image_reference_error", "int_range",
           "number_range", "oss_bucket_error", "pip_requirement_error", "ram_arn_error", "region_error",
           "registry_error", "repo_path_error", "revision_error", "same_account_error", "uri_error",
           "REGION_IDS", "endpoint_region", "endpoint_region_error", "plain_http_error"]

# Patterns are compiled when first used (re's own cache keeps them): a command checks a few
# kinds of answer, and compiling every pattern here cost more than their checks.
# Go's time.ParseDuration, which Flux's metav1.Duration fields use: "1h30m", "90s", "500ms".
_DURATION = r"(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h)"
# OSS: 3-63 characters, lower-case letters, digits and '-', not starting or ending with '-'.
_BUCKET = r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]"
# The reference grammar of distribution/reference: [host[:port]/]path[:tag][@digest].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = (rf"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
          rf"(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
          rf"(?:@sha256:[a-f0-9]{{64}})?")
#: Integers past 2^53 lose digits in kustomize's JSON numbers, and large ones print as 1e+20.
MAX_INT = 2**31 - 1


def duration_error(value: str) -> str | None:
    text = str(value)
    if not re.fullmatch(rf"(?:{_DURATION})+", text) or not re.search(r"[1-9]", text):
        return f"{_show(value)} is not a positive duration like 10m, 1h30m or 90s"
    return None


def oss_bucket_error(value: str) -> str | None:
    if not re.fullmatch(_BUCKET, str(value)):
        return f"{_show(value)} is not an OSS bucket name (3-63 lower-case letters, digits and '-', not starting or ending with '-')"
    return None


def image_reference_error(value: str) -> str | None:
    return _shaped(value, _IMAGE, "an image reference like registry.example.com/team/image:tag",
                   lambda text: len(text) > 255)


def git_branch_error(value: str) -> str | None:
    """What ``git check-ref-format --branch`` says; the rules are git's own."""
    text = str(value)
    try:
        result = subprocess.run(["git", "check-ref-format", "--branch", text], capture_output=True, text=True)
    except FileNotFoundError:
        ok = bool(text) and not re.search(r"[\s~^:?*\[\\]|\.\.|@\{|^[-/.]|[/.]$|\.lock$|//", text)
    else:
        ok = result.returncode == 0 and bool(text)
    return None if ok else f"{_show(value)} is not a git branch name (git check-ref-format --branch refuses it)"


#: A GitHub team as CODEOWNERS names it, @org/team: an organization's login (letters, digits,
#: single hyphens inside, at most 39) and a team's slug (letters, digits, '-', '_', '.').
GITHUB_TEAM = r"@[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"


def github_team_error(value: str) -> str | None:
    """Not a GitHub team handle: it is written into .github/CODEOWNERS as one."""
    if re.fullmatch(GITHUB_TEAM, str(value)):
        return None
    return f"{_show(value)} is not a GitHub team handle like @my-org/researchers"


def int_range(low: int, high: int = MAX_INT) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{_show(value)} is not an integer"
        return None if low <= value <= high else f"{value} is not between {low} and {high}"
    check.allowed = f"{low} to {high}"  # what rlgen plugins shows of the check
    return check


def _show(value: Any) -> str:
    # Quoted and escaped: a value with a newline stays on the one error line.
    return json.dumps(str(value), ensure_ascii=False)


# -- one checker per kind of answer. Each refuses control characters (a newline in an answer
# would start a new Dockerfile instruction or YAML line) and, where the value is pasted into a
# shell command (the README's commands, workflows, Dockerfiles), every character a shell reads.

#: C0 and C1 controls, DEL, line and paragraph separators, and the invisible format characters
#: that make a value read otherwise than it runs (bidirectional overrides, zero widths, BOM).
_CONTROL = "[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
#: The part of an image reference before a repository name: host[:port]/path, lower-case path.
_REGISTRY = (rf"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
             rf"(?::[0-9]{{1,5}})?(?:/{_COMPONENT})*")
#: Room left after the registry for the longest image name rlgen puts below it
#: ("/sandbox-manager:<tag>" and the like): the whole reference stays within 255 characters.
IMAGE_SUFFIX_ROOM = 64
MAX_IMAGE_REFERENCE = 255
# Git URLs as Flux (GitRepository .spec.url: http, https, ssh) and Argo CD (also scp-like
# git@host:path) fetch them; the characters are a shell's plain word characters only.
_URL_CHARS = r"[A-Za-z0-9._~%+/-]"
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
_GIT_URL = (rf"(?:https?://{_HOST}(?::[0-9]{{1,5}})?/{_URL_CHARS}+"
            rf"|ssh://(?:[A-Za-z0-9._-]+@)?{_HOST}(?::[0-9]{{1,5}})?/{_URL_CHARS}+"
            rf"|[A-Za-z0-9._-]+@{_HOST}:{_URL_CHARS}+)")
# A hub repository id (Hugging Face, ModelScope): owner/name, each a word of letters, digits, ._-.
# The owner is required: every repository of either hub is under one (Hugging Face moved its
# old owner-less ids, gsm8k, gpt2, under organisations), so a bare word is a mistake.
_HUB_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_HUB_ID = rf"{_HUB_PART}/{_HUB_PART}"
_REVISION = r"[A-Za-z0-9_][A-Za-z0-9._/-]{0,254}"
# An Alibaba Cloud region id: cn-hangzhou, ap-southeast-1, cn-shanghai-finance-1.
_REGION = r"[a-z]{2,4}(?:-[a-z0-9]+){1,4}"
# Characters of a URI (RFC 3986) that no shell, YAML reader or Dockerfile gives a meaning to.
_URI_CHARS = r"[A-Za-z0-9._~%+/:@?=&#,-]*"
_REPO_PATH = r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*"
_URL_USERINFO = r"(?i)\b([a-z][a-z0-9+.-]*)://([^/\s@?#]*)@"
_SECRET_HINT = ("pass secrets to the cluster as a Kubernetes Secret and to CI as a repository secret, "
                "never in an answer (it is committed)")


def control_error(value: str) -> str | None:
    """A control character anywhere (newline, tab, escape, NUL, bidirectional override)."""
    found = re.search(_CONTROL, value)
    if found:
        return f"{_show(value)} holds the control character U+{ord(found.group()):04X}: answers are one plain line"
    return None


def credential_error(value: str) -> str | None:
    """A URL in ``value`` that carries a secret: a password or a token as user info, or a
    secret query parameter. ``ssh://git@host`` and ``git@host:path`` name an SSH user, no secret."""
    for match in re.finditer(_URL_USERINFO, value):
        scheme, userinfo = match.group(1).lower(), match.group(2)
        if ":" in userinfo or not scheme.endswith("ssh"):
            return f"{_show(redact_url(value))} carries credentials in its user info: {_SECRET_HINT}"

    # Lazy: rlgen.redaction is 4.6 ms (-X importtime) of every command; it compiles its patterns.
    from rlgen.redaction import has_secret_parameter

    if "://" in value and has_secret_parameter(value):
        return f"{_show(redact_url(value))} carries a secret query parameter: {_SECRET_HINT}"
    return None


def redact_url(text: str) -> str:
    """``text`` with the user info of its URLs masked (see :mod:`rlgen.redaction`)."""
    # Lazy: rlgen.redaction is 4.6 ms (-X importtime) of every command; it compiles its patterns.
    from rlgen.redaction import redact

    return redact(text)


def _line_error(value: Any) -> str | None:
    """Why ``value`` is no plain line: a control character, or a credential in it."""
    text = str(value)
    return control_error(text) or credential_error(text)


def _shaped(value: Any, pattern: str, kind: str, refuse: Callable[[str], bool] = lambda text: False) -> str | None:
    """The one shape of most checkers: a plain line (no control character, no credential) that
    ``pattern`` matches whole and ``refuse`` does not; else "VALUE is not ``kind``"."""
    text = str(value)
    if problem := _line_error(text):
        return problem
    if not re.fullmatch(pattern, text) or refuse(text):
        return f"{_show(value)} is not {kind}"
    return None


def registry_error(value: str) -> str | None:
    """A registry and namespace images are pushed to: ``host[:port]/path``, no scheme, tag or
    digest, short enough that every image below it stays within 255 characters."""
    text = str(value)
    if problem := _line_error(text):
        return problem
    limit = MAX_IMAGE_REFERENCE - IMAGE_SUFFIX_ROOM
    if not re.fullmatch(_REGISTRY, text) or "/" not in text and "." not in text and ":" not in text:
        return (f"{_show(value)} is not a registry path like registry.<region>.aliyuncs.com/team "
                "(host and lower-case path; no scheme, tag or digest)")
    if len(text) > limit:
        return f"{_show(value)} is {len(text)} characters: image names below it would pass 255 (use at most {limit})"
    return None


def git_url_error(value: str) -> str | None:
    """A Git URL Flux and Argo CD can fetch: ``https://host/path``, ``ssh://[user@]host/path``
    or scp-like ``user@host:path``; only characters a shell reads as a plain word."""
    return _shaped(value, _GIT_URL, "a Git URL (https://host/owner/repo.git, ssh://git@host/owner/repo.git "
                   "or git@host:owner/repo.git)", lambda text: ".." in text.split("/", 3)[-1].split("/"))


def hub_id_error(value: str) -> str | None:
    """A model or dataset id on Hugging Face or ModelScope: ``owner/name``."""
    return _shaped(value, _HUB_ID, "a hub id owner/name like Qwen/Qwen2.5-7B-Instruct (letters, digits, '.', '_', '-')",
                   lambda text: ".." in text or "--" in text)


def dataset_source_error(value: str) -> str | None:
    """A dataset on the Hugging Face Hub (``openai/gsm8k``) or, prefixed, on ModelScope
    (``modelscope:modelscope/gsm8k``, always ``owner/name`` there)."""
    text = str(value)
    if text.startswith(MODELSCOPE_PREFIX):
        rest = text.removeprefix(MODELSCOPE_PREFIX)
        if "/" not in rest:
            return f"{_show(value)} is not {MODELSCOPE_PREFIX}OWNER/NAME"
        return hub_id_error(rest)
    return hub_id_error(text)


def revision_error(value: str) -> str | None:
    """A branch, tag or commit of a hub repository."""
    return _shaped(value, _REVISION, "a branch, tag or commit (letters, digits, '.', '_', '-', '/')",
                   lambda text: ".." in text or text.endswith(("/", ".lock")))


def uri_error(value: str, schemes: tuple[str, ...] = ("http", "https")) -> str | None:
    """An absolute URI of one of ``schemes`` with a host, no credentials, and no character a
    shell or YAML reader would give a meaning to."""
    text = str(value)
    if problem := _line_error(text):
        return problem
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 -- raises on a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in schemes or not parts.hostname or not re.fullmatch(_URI_CHARS, text):
        return f"{_show(value)} is not a {' or '.join(s + '://' for s in schemes)} URL with a host"
    return None


def endpoint_error(value: str) -> str | None:
    """An OSS endpoint: a host name (``oss-cn-hangzhou-internal.aliyuncs.com``) or its
    http(s) URL, nothing after the host."""
    text = str(value)
    if problem := _line_error(text):
        return problem
    host = text.split("://", 1)[1] if "://" in text else text
    if ("://" in text and uri_error(text)) or not re.fullmatch(rf"{_HOST}(?::[0-9]{{1,5}})?/?", host):
        return f"{_show(value)} is not an endpoint like oss-cn-hangzhou-internal.aliyuncs.com"
    return None


#: Alibaba Cloud's region ids, those of OSS's "Regions and endpoints" table (public cloud, finance
#: and government regions still open). The SDK rlgen depends on carries no list (docs/upstream.md):
#: a region missing here is one line to add.
REGION_IDS = frozenset({
    "cn-hangzhou", "cn-shanghai", "cn-nanjing", "cn-fuzhou", "cn-wuhan-lr", "cn-qingdao", "cn-beijing",
    "cn-zhangjiakou", "cn-huhehaote", "cn-wulanchabu", "cn-shenzhen", "cn-heyuan", "cn-guangzhou", "cn-chengdu",
    "cn-hongkong", "ap-northeast-1", "ap-northeast-2", "ap-southeast-1", "ap-southeast-3", "ap-southeast-5",
    "ap-southeast-6", "ap-southeast-7", "us-west-1", "us-east-1", "na-south-1", "eu-central-1", "eu-west-1",
    "me-east-1", "me-central-1",
    "cn-hangzhou-finance", "cn-shanghai-finance-1", "cn-shenzhen-finance-1", "cn-beijing-finance-1",
    "cn-north-2-gov-1",
})


def region_error(value: str) -> str | None:
    """An Alibaba Cloud region id like ``cn-hangzhou`` or ``ap-southeast-1``, one that exists."""
    text = str(value)
    if not re.fullmatch(_REGION, text) or len(text) > 63:
        return f"{_show(value)} is not a region id like cn-hangzhou or ap-southeast-1"
    if text not in REGION_IDS:
        close = difflib.get_close_matches(text, sorted(REGION_IDS), n=1)
        return f"{_show(value)} is no Alibaba Cloud region" + (f" (did you mean '{close[0]}'?)" if close else "")
    return None


def endpoint_region(endpoint: str) -> str | None:
    """The region an Alibaba Cloud OSS endpoint names (``oss-cn-beijing-internal.aliyuncs.com``,
    the dual-stack ``cn-beijing.oss.aliyuncs.com``, an accelerator's
    ``cn-beijing-internal.oss-data-acc.aliyuncs.com``), or None for another host (a proxy, a
    global acceleration endpoint)."""
    text = str(endpoint).lower()
    host = (text.split("://", 1)[1] if "://" in text else text).split("/")[0].split(":")[0]
    if not host.endswith(".aliyuncs.com"):
        return None
    label = host.split(".")[0].removeprefix("oss-")
    found = [r for r in REGION_IDS if label == r or label.startswith(r + "-")]
    return max(found, key=len) if found else None


def endpoint_region_error(endpoint: str, earlier: dict[str, Any]) -> str | None:
    """An ``Option.cross_check``: the endpoint of another region than the ``region`` answered before it."""
    region = earlier.get("region")
    named = endpoint_region(endpoint) if endpoint else None
    if named and region and named != region:
        return (f"{_show(endpoint)} is an endpoint of {named}, but the bucket's region is {region}: "
                "OSS refuses a request signed for another region")
    return None


#: acs:ram::<account>:<kind>/<name>, the ARNs of RAM roles and OIDC providers.
_RAM_ARN = r"acs:ram::([0-9]{1,32}):([a-z-]+)/([A-Za-z0-9._-]{1,128})"


def ram_arn_error(value: str, kind: str) -> str | None:
    """A RAM ARN of ``kind`` (``role``, ``oidc-provider``): ``acs:ram::<account>:<kind>/<name>``."""
    found = re.fullmatch(_RAM_ARN, str(value))
    if not found or found.group(2) != kind:
        return f"{_show(value)} is not a RAM {kind} ARN like acs:ram::<account-id>:{kind}/<name>"
    return None


def same_account_error(value: str, earlier_value: str, earlier_name: str) -> str | None:
    """Two RAM ARNs in different accounts: ``value`` against ``earlier_value``, the answer
    ``earlier_name``. A role trusts only an OIDC provider of its own account."""
    ours, theirs = re.fullmatch(_RAM_ARN, str(value)), re.fullmatch(_RAM_ARN, str(earlier_value or ""))
    if ours and theirs and ours.group(1) != theirs.group(1):
        return (f"{_show(value)} is in account {ours.group(1)}, but {earlier_name} is in account {theirs.group(1)}: "
                "a RAM role can only trust an OIDC provider of its own account")
    return None


def plain_http_error(url: str) -> str | None:
    """A plain ``http://`` URL to a host outside the machine and the cluster: what is fetched
    over it can be read and changed on the way. Loopback and in-cluster Service names pass."""
    text = str(url)
    if not text.lower().startswith("http://"):
        return None
    host = (urlsplit(text).hostname or "").lower()
    if host in ("localhost", "::1") or host.startswith("127.") or host.endswith((".svc", ".svc.cluster.local")):
        return None
    return (f"{_show(url)} is plain http: anyone on the way can read and change what the cluster syncs; "
            "use https:// or ssh:// (http only for a loopback or in-cluster host)")


def repo_path_error(value: str) -> str | None:
    """A relative path that stays inside the repository: no leading '/', no '..' part."""
    text = str(value)
    if problem := control_error(text):
        return problem
    if not re.fullmatch(_REPO_PATH, text) or any(part in ("", ".", "..") for part in text.split("/")):
        return f"{_show(value)} is not a path inside the repository (relative, no '..')"
    return None


def pip_requirement_error(value: str) -> str | None:
    """One pip requirement (``name[extras] specifier`` or ``name @ URL``), without credentials."""
    # Lazy: packaging is 51 ms (median of 7), for this one option.
    from packaging.requirements import InvalidRequirement, Requirement

    text = str(value)
    if problem := _line_error(text):
        return problem
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        return f"{_show(value)} is not a pip requirement ({' '.join(str(exc).split())})"
    return None


def number_range(low: float, high: float, low_open: bool = False) -> Callable[[Any], str | None]:
    """A finite number in ``[low, high]`` (``(low, high]`` when ``low_open``)."""
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{_show(value)} is not a finite number"
        if value < low or value > high or (low_open and value == low):
            return f"{value} is not in {'(' if low_open else '['}{low}, {high}]"
        return None
    check.allowed = f"{'(' if low_open else '['}{low}, {high}]"  # what rlgen plugins shows of the check
    return check
