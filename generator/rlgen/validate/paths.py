"""Where in an object a schema problem is, written the same way whichever engine found it:
``$.spec.containers[0].image``, names that are not identifiers as ``["nvidia.com/gpu"]``."""
from __future__ import annotations

import json
import re

#: The message of a field the schema does not know, reported at the field's own path.
UNKNOWN = "unknown field"
#: The message of a required field that is absent, reported at the path where it belongs.
MISSING = "missing required field"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH = re.compile(r'\$(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\]|\["(?:[^"\\]|\\.)*"\])*(?=: )')


def json_path(parts: list[str | int]) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            out += "." + part
        else:
            out += "[" + json.dumps(part) + "]"
    return out


def from_pointer(tokens: list[str], obj: object) -> list[str | int]:
    """The parts of a JSON pointer's (unescaped) tokens, with list indexes as numbers, read
    against the object: a pointer does not say whether "0" is an index or a key."""
    parts: list[str | int] = []
    for token in tokens:
        if isinstance(obj, list) and token.isdigit():
            parts.append(int(token))
            obj = obj[int(token)] if int(token) < len(obj) else None
        else:
            parts.append(token)
            obj = obj.get(token) if isinstance(obj, dict) else None
    return parts


def path_of(message: str) -> str | None:
    """The path a problem message starts with, or None (a problem of the whole object, such as
    a missing schema)."""
    match = _PATH.match(message)
    return match.group(0) if match else None
