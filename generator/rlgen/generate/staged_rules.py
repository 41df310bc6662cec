"""The semantic checks of ``rlgen validate``, run on the staged repository before its first
commit: ``rlgen new`` never commits a repository that its own ``rlgen validate`` rejects.

Schemas are left to ``rlgen validate`` (they may need the network); the rules need nothing
but kustomize.
"""
from __future__ import annotations

from pathlib import Path

from rlgen.errors import RlgenError


def refuse_failing(tree: Path, external_secrets: list[str], plugins=None) -> None:
    """Raise one line naming the first problem when the rules (and the plugins' rules of
    ``plugins``, a ``(Hooks, Context)`` pair) find any in ``tree``."""
    from rlgen.render import manifests
    from rlgen.tools.yamlio import read_plain_all
    from rlgen.repo.run_files import read_index
    from rlgen.rules import Rendered, check

    sources = manifests.render({"repo": tree})["repo"]
    objects = [Rendered(source, d) for source, docs in sources.items() for d in read_plain_all("\n---\n".join(docs))]
    findings = check(objects, external_secrets, plugins, read_index(tree))
    if findings:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        raise RlgenError(f"this selection gives a repository that rlgen validate rejects: "
                         f"{first.source}: {first.obj}: {first.message}{more}")
