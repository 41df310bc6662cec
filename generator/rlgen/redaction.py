"""Secrets masked in everything rlgen prints or saves: error lines, JSON output and crash files.

A user may paste a URL with a token into an answer or a flag (``--endpoint http://id:key@host``);
the answer is refused, but the line that says so, and the crash file a bug leaves, must not
repeat the secret.
"""
from __future__ import annotations

import re

MASK = "***"
# A URL's user info (a name with its password, or a bare token) before the host; an SSH user name alone is no secret.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@?#'\"]*)@")
_SECRET_PARAM = re.compile(r"(?i)([?&;](?:access_?token|token|api_?key|key|secret|password|passwd|pwd|signature|sig|"
                           r"x-amz-signature|x-amz-credential|x-oss-signature|x-oss-security-token|security-token|"
                           r"auth)=)[^&#\s'\"]+")
# Shapes of keys that are secrets wherever they appear: GitHub, GitLab and Hugging Face tokens,
# Alibaba Cloud and AWS access key ids, private key blocks.
_TOKENS = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|"
                     r"hf_[A-Za-z0-9]{20,}|LTAI[A-Za-z0-9]{12,}|AKIA[A-Z0-9]{16}|ASIA[A-Z0-9]{16}|"
                     r"sk-[A-Za-z0-9_-]{20,})")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)


def redact(text: str) -> str:
    """``text`` with URL user info (but an SSH user name), secret query parameters, known token
    shapes and private keys masked."""
    def userinfo(match: re.Match) -> str:
        scheme, info = match.group(1), match.group(2)
        if ":" not in info and scheme.lower().rstrip(":/").endswith("ssh"):
            return match.group(0)
        return f"{scheme}{MASK}@"

    text = _USERINFO.sub(userinfo, text)
    text = _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, text)
    text = _TOKENS.sub(MASK, text)
    return _PRIVATE_KEY.sub(MASK, text)


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
