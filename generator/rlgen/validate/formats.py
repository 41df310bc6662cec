"""The ``format`` checks kubeconform makes, for rlgen's own validator.

kubeconform v0.8.0 validates with santhosh-tekuri/jsonschema v6.0.2, which asserts ``format``
in schemas before draft 2019-09 (CRD schemas declare no draft and get draft 4), and registers
its own ``duration`` (pkg/validator/validator.go ``validateDuration``). python-jsonschema checks
``date-time`` only with an optional package and ``duration`` not at all before 2019-09, so the
formats the shipped CRD schemas use are ported here from those sources (docs/upstream.md).
"""
from __future__ import annotations

import re

from jsonschema import Draft4Validator, FormatChecker

_INT = re.compile(r"[+-]?[0-9]+")


def _atoi(text: str) -> int | None:
    # Go's strconv.Atoi: an optional sign and ASCII digits only.
    return int(text) if _INT.fullmatch(text) else None


def is_date(value: object) -> bool:
    """santhosh-tekuri v6 format.go ``validateDate``: Go's time.Parse("2006-01-02")."""
    if not isinstance(value, str):
        return True
    match = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", value)
    if match is None:
        return False
    year, month, day = (int(g) for g in match.groups())
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    return 1 <= day <= days


def is_time(value: object) -> bool:
    """santhosh-tekuri v6 format.go ``validateTime`` (RFC 3339 full-time, leap second at 23:59 UTC)."""
    if not isinstance(value, str):
        return True
    if len(value) < 9 or value[2] != ":" or value[5] != ":":
        return False
    hms = [_atoi(tok) for tok in value[:8].split(":", 2)]
    if len(hms) != 3 or any(n is None or n < 0 for n in hms):
        return False
    h, m, s = hms
    if h > 23 or m > 59 or s > 60:
        return False
    rest = value[8:]
    if rest.startswith("."):
        digits = len(rest) - 1 - len(rest[1:].lstrip("0123456789"))
        if digits == 0:
            return False
        rest = rest[1 + digits:]
    if rest not in ("z", "Z"):
        if len(rest) != 6 or rest[0] not in "+-" or rest[3] != ":":
            return False
        zh, zm = _atoi(rest[1:3]), _atoi(rest[4:6])
        if zh is None or zm is None or zh < 0 or zm < 0 or zh > 23 or zm > 59:
            return False
        sign = -1 if rest[0] == "+" else 1
        minutes = (h * 60 + m) + sign * (zh * 60 + zm)
        if minutes < 0:
            minutes += 24 * 60
        h, m = divmod(minutes, 60)
    return not (s >= 60 and (h != 23 or m != 59))


def is_date_time(value: object) -> bool:
    """santhosh-tekuri v6 format.go ``validateDateTime``."""
    if not isinstance(value, str):
        return True
    return len(value) >= 20 and value[10] in "tT" and is_date(value[:10]) and is_time(value[11:])


# Go's time.ParseDuration: "0", or signed decimal numbers each with a unit.
_GO_DURATION = re.compile(r"[-+]?(?:0|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+)")
# k8s.io/kube-openapi pkg/validation/strfmt/duration.go ``ParseDuration``'s fallback.
_STRFMT_PART = re.compile(r"(([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+))")
_STRFMT_UNITS = [["ns", "nano"], ["us", "µs", "micro"], ["ms", "milli"], ["s", "sec"], ["m", "min"],
                 ["h", "hr", "hour"], ["d", "day"], ["w", "wk", "week"]]


def _strfmt_duration(text: str) -> bool:
    parts = _STRFMT_PART.findall(text)
    if any(int(number) >= 2**63 for _, number, _ in parts):  # strconv.Atoi fails the whole parse
        return False
    return any((i == len(variants) - 1 and unit.lower().startswith(v)) or v == unit.lower()
               for _, _, unit in parts for variants in _STRFMT_UNITS for i, v in enumerate(variants))


def is_duration(value: object) -> bool:
    """kubeconform v0.8.0 pkg/validator/validator.go ``validateDuration``: a Go or strfmt duration
    (``1h30m``, ``10 min``), else ISO 8601 (``PT1H30M``, ``P2W``)."""
    if not isinstance(value, str):
        return True
    if _GO_DURATION.fullmatch(value) or _strfmt_duration(value):
        return True
    if not value.startswith("P"):
        return False
    rest = value[1:]
    if not rest:
        return False
    if rest.endswith("W"):
        return rest[:-1] != "" and all("0" <= ch <= "9" for ch in rest[:-1])
    all_units = ["YMD", "HMS"]
    for i, part in enumerate(rest.split("T")):
        if i != 0 and part == "":
            return False
        if i >= len(all_units):
            return False
        units = all_units[i]
        while part:
            digits = len(part) - len(part.lstrip("0123456789"))
            if digits == 0:
                return False
            part = part[digits:]
            if not part:
                return False
            j = units.find(part[0])
            if j == -1:
                return False
            units, part = units[j + 1:], part[1:]
    return True


def is_ipv4(value: object) -> bool:
    """santhosh-tekuri v6 format.go ``validateIPV4``: four decimals 0-255, no leading zeros."""
    if not isinstance(value, str):
        return True
    groups = value.split(".")
    if len(groups) != 4:
        return False
    for group in groups:
        if len(group) > 1 and group[0] == "0":
            return False
        number = _atoi(group)
        if number is None or not 0 <= number <= 255:
            return False
    return True


def kubeconform_format_checker() -> FormatChecker:
    """python-jsonschema's draft-4 checks (email, ipv6, regex), with those ported above in place
    of its own; ``idn-email``, which santhosh-tekuri does not know, is not asserted."""
    checker = FormatChecker(formats=[f for f in Draft4Validator.FORMAT_CHECKER.checkers if f != "idn-email"])
    for name, check in [("date", is_date), ("time", is_time), ("date-time", is_date_time),
                        ("duration", is_duration), ("ipv4", is_ipv4)]:
        checker.checks(name)(check)
    return checker
