"""The Git server of ``rlgen e2e`` (rlgen.e2e.git_server), which the tests share."""
from rlgen.e2e.git_server import GitServer  # noqa: F401
