"""Secrets masked in everything rlgen prints or saves: error lines, JSON output and crash files.

A user may paste a URL with a token into an answer or a flag (``--endpoint http://id:key@host``);
the answer is refused, but the line that says so, and the crash file a bug leaves, must not
repeat the secret. A service's error may echo a request URL-encoded (``%3FSignature%3D...``), once
or more: the rules read through percent-encoding, and mask the encoded text where it stands.
"""
from __future__ import annotations

import os
import re
from bisect import bisect_left

MASK = "***"
# A URL's user info (a name with its password, or a bare token) before the host; an SSH user name alone is no secret.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@?#'\"]*)@")
#: Names of the query parameters Git hosts, clouds and object stores carry a secret in: tokens
#: (GitLab's private_token, job_token and deploy_token, OAuth's access, refresh and id tokens and
#: client assertions, Alibaba Cloud OpenAPI's SecurityToken and AccessKeySecret), presigned
#: URLs' signatures and credentials (AWS SigV2/SigV4, Alibaba Cloud OSS v1/v4, Google Cloud
#: Storage, Tencent COS q-signature, Azure SAS sig), STS session tokens, access key ids, API
#: keys, passwords and passphrases. Matched case-insensitively, ``-`` and ``_`` alike.
SECRET_PARAMETER_NAMES = (
    r"(?:x[-_](?:amz|oss|goog)[-_])?(?:signature|credential|security[-_]?token)"
    r"|(?:private|access|oauth|job|deploy|refresh|id|auth|session|security|api)[-_]?token|token"
    r"|q[-_]signature|sig|signed[-_]?signature"
    r"|(?:client[-_]?)?secret|secret[-_]?(?:access[-_]?)?key|(?:oss|aws)?access[-_]?key(?:[-_]?id|[-_]?secret)?"
    r"|api[-_]?key|key|password|passwd|passphrase|pwd|auth|authorization|client[-_]?assertion"
)
#: A secret query parameter, its name and ``=`` in group 1 and its value in group 2.
SECRET_PARAMETER = re.compile(rf"(?i)((?:^|(?<=[?&;]))(?:{SECRET_PARAMETER_NAMES})=)([^&#\s'\"<>]+)")
# Shapes of keys that are secrets wherever they appear: GitHub, GitLab and Hugging Face tokens,
# Alibaba Cloud and AWS access key ids, private key blocks.
_TOKENS = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|"
                     r"hf_[A-Za-z0-9]{20,}|LTAI[A-Za-z0-9]{12,}|AKIA[A-Z0-9]{16}|ASIA[A-Z0-9]{16}|"
                     r"sk-[A-Za-z0-9_-]{20,})")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)
# A percent-encoded printable character (not a space or a control one: decoding those could
# make one line several). %25 is '%' itself: a twice-encoded text decodes in two passes.
_ENCODED = re.compile(r"%(2[1-9A-Fa-f]|[3-6][0-9A-Fa-f]|7[0-9A-Ea-e])")
_MAX_DECODINGS = 3
#: Variables whose values are secrets wherever they appear: a service that echoes a request may
#: show one anywhere (a path, a header it quotes, a string it signed), not only after a name
#: the rules above know, and encoded, so that a literal search finds none of it.
SECRET_VARIABLES = ("OSS_ACCESS_KEY_SECRET", "OSS_SESSION_TOKEN", "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
                    "ALIBABA_CLOUD_SECURITY_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
#: Shorter values are masked by the rules alone: a short one would mask ordinary words.
_MIN_VALUE_LENGTH = 8


def has_secret_parameter(url: str) -> bool:
    """Whether the query of ``url`` carries a parameter :data:`SECRET_PARAMETER_NAMES` names."""
    query = url.split("?", 1)[1] if "?" in url else ""
    return SECRET_PARAMETER.search(query) is not None


def redact(text: str) -> str:
    """``text`` with URL user info (but an SSH user name), secret query parameters, known token
    shapes and private keys masked, also where they are percent-encoded; everything else as it was."""
    # Each decoding is read in turn: a URL encoded whole shows its parts only once decoded, while
    # its password's own encoded '/' must stay encoded for the URL to read as one.
    view, to_text = text, (lambda i: i)
    spans = []
    for level in range(_MAX_DECODINGS + 1):
        spans += [(to_text(start), to_text(end)) for start, end in _secret_spans(view)]
        if level == _MAX_DECODINGS or "%" not in view:
            break
        decoded, to_view = _decode(view)
        if decoded == view:
            break
        view, to_text = decoded, (lambda i, inner=to_view, outer=to_text: outer(inner(i)))
    spans += _value_spans(text, secret_values())
    if not spans:
        return text
    out, last = [], 0
    for start, end in _merged(spans):
        out.append(text[last:start] + MASK)
        last = end
    return "".join(out) + text[last:]


def secret_values() -> list[str]:
    """The values of this environment's :data:`SECRET_VARIABLES` long enough to mask."""
    return [v for name in SECRET_VARIABLES if len(v := os.environ.get(name, "")) >= _MIN_VALUE_LENGTH]


def mask_values(text: str, values, mask: str = MASK) -> str:
    """``text`` with each of ``values`` masked however it is written: as it is, or with any of
    its characters percent-encoded, in either case of hex, up to :data:`_MAX_DECODINGS` times
    (a space also as ``+``)."""
    spans = _merged(_value_spans(text, values))
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start] + mask)
        last = end
    return "".join(out) + text[last:]


def _value_spans(text: str, values) -> list[tuple[int, int]]:
    return [m.span() for value in values for m in _value_pattern(value).finditer(text)]


def _value_pattern(value: str) -> re.Pattern:
    def one(char: str) -> str:
        ways = [re.escape(char)]
        if char.isascii():
            ways.append(f"%(?:25){{0,{_MAX_DECODINGS - 1}}}(?i:{ord(char):02x})")
        if char == " ":
            ways.append(r"\+")
        return f"(?:{'|'.join(ways)})"
    return re.compile("".join(one(c) for c in value))


def _secret_spans(view: str) -> list[tuple[int, int]]:
    spans = []
    for match in _USERINFO.finditer(view):
        scheme, info = match.group(1), match.group(2)
        if ":" not in info and scheme.lower().rstrip(":/").endswith("ssh"):
            continue
        spans.append(match.span(2))
    spans += [m.span(2) for m in SECRET_PARAMETER.finditer(view)]
    spans += [m.span() for m in _TOKENS.finditer(view)]
    spans += [m.span() for m in _PRIVATE_KEY.finditer(view)]
    return spans


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` sorted, overlapping ones joined; an empty one (a bare ``https://@``) stays a
    place for the mask unless another covers it."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and (start < out[-1][1] or start == out[-1][1] and end > start):
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _decode(text: str):
    """``text`` with each encoded printable character decoded, and the map from a position in
    the decoded text to the same position in ``text`` (each decoded character was three)."""
    decoded = _ENCODED.sub(lambda m: chr(int(m.group(1), 16)), text)
    # Positions, in the decoded text, of the characters that were encoded.
    places = [m.start() - 2 * i for i, m in enumerate(_ENCODED.finditer(text))]
    return decoded, lambda i: i + 2 * bisect_left(places, i)


def masked_argv(argv: list[str]) -> list[str]:
    """The command line with every value masked: the program, the command words and the option
    names stay (what was run), what the user typed after them does not (it may be a secret)."""
    out: list[str] = []
    words = True
    for arg in argv:
        if arg.startswith("-"):
            words = False
            name, eq, _ = arg.partition("=")
            out.append(f"{name}={MASK}" if eq else name)
        elif words and re.fullmatch(r"[a-z][a-z-]*", arg) or not out:
            out.append(arg)
        else:
            words = False
            # A PLUGIN.OPTION=VALUE or KEY=VALUE keeps its key: which answer it was matters.
            key, eq, _ = arg.partition("=")
            out.append(f"{key}={MASK}" if eq and re.fullmatch(r"[A-Za-z0-9_.-]+", key) else MASK)
    return out
