"""Errors that end a command with one line on stderr and a fixed exit code."""


class RlgenError(Exception):
    """Bad input or environment: exit code 2, one line, nothing written."""

    exit_code = 2


class ProblemsFound(RlgenError):
    """Validation found problems in a repository: exit code 1."""

    exit_code = 1


#: The exit code of a bug in rlgen (BSD's EX_SOFTWARE), distinct from every expected outcome.
INTERNAL_ERROR = 70
