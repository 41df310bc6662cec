"""make demo's answer to rlgen.install: the pip requirement of this checkout's commit at its
origin, which the demo's data image build and CI runners can clone, or the requirement given.

    python3 scripts/demo_install.py [REQUIREMENT]

prints REQUIREMENT when it is not empty, else ``rlgen @ git+<origin>@<HEAD's commit>``. A
checkout without an origin a runner can fetch (none, a local path) still gets its demo: the
answer is then this checkout's release, ``rlgen==<version>``, with a warning that its CI and data
image install only once that release is on the package index, and what to pass instead. An editable install (make demo's .venv) is no source an image build can
reach, which is why rlgen itself refuses to default to it.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTEAD = "make demo DEMO_INSTALL='rlgen @ git+URL@COMMIT' (or 'rlgen==VERSION --index-url URL')"


def git(*args: str) -> str:
    result = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else ""


def pip_url(origin: str) -> str | None:
    """``origin`` as pip's ``git+`` URL takes it, or None for a local repository."""
    if re.match(r"(https?|ssh|git)://", origin):
        return origin
    scp = re.fullmatch(r"([\w.-]+@)?([\w.-]+):(?!//)(.+)", origin)  # git@host:owner/repo.git
    if scp and not origin.startswith("/"):
        return f"ssh://{scp.group(1) or ''}{scp.group(2)}/{scp.group(3)}"
    return None


def release() -> str:
    """This checkout's release: its newest ``vX.Y.Z`` tag, else the version rlgen falls back to."""
    tag = git("describe", "--tags", "--abbrev=0", "--match", "v[0-9]*")
    if tag:
        return tag.removeprefix("v")
    return re.search(r'fallback_version = "([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)


def main(given: str) -> int:
    if given.strip():
        print(given.strip())
        return 0
    origin = git("remote", "get-url", "origin")
    url = pip_url(origin) if origin else None
    if url is None:
        where = f"its origin {origin} is a local repository" if origin else "it has no origin"
        version = release()
        print(f"demo_install: warning: no runner can install this checkout of rlgen ({where}): the demo's CI "
              f"and data image install rlgen=={version} from the package index; to change that, {INSTEAD}",
              file=sys.stderr)
        print(f"rlgen=={version}")
        return 0
    commit = git("rev-parse", "HEAD")
    if not git("branch", "--remotes", "--contains", commit):
        print(f"demo_install: commit {commit[:12]} is on no branch of origin yet: push it before the demo's "
              "CI and data image install rlgen from it", file=sys.stderr)
    print(f"rlgen @ git+{url}@{commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
