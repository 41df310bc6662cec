"""An Argo CD repository on the throwaway control plane, fetched from the run's own Git server.

Each Application names the repository by the team's URL (``rlgen.git_url``), which the run must
not reach. Flux is pointed elsewhere by ``flux bootstrap --url``; Argo CD has no such switch, and
its repo-server resolves revisions with go-git, which reads no ``url.<base>.insteadOf``. So the
commit Argo CD syncs is the one tested plus one commit on top (rlgen.e2e.commit_on_top) whose
Applications, and the AppProject that lets them fetch it, name the served URL where they named
the team's; nothing else differs. The upstream sources keep their own URLs
(``rlgen.upstream_mirror`` where set).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlgen.e2e import commit_on_top as on_top
from rlgen.errors import RlgenError
from rlgen.repo import sync_engines
from rlgen.tools import yamlio


@dataclass(frozen=True)
class Served:
    """The commit to sync, the Git environment that finds it, and the file of the Application of
    the cluster's folder (the root the README applies by hand), with its documents (the
    AppProject beside it) as that commit has them."""

    commit: str
    env: dict
    root_file: str
    root_documents: list


def _sources(app: dict) -> list[dict]:
    spec = app.get("spec") or {}
    return [s for s in [spec.get("source"), *(spec.get("sources") or [])] if isinstance(s, dict)]


def _is_argo(doc, kind: str) -> bool:
    return (isinstance(doc, dict) and doc.get("kind") == kind
            and str(doc.get("apiVersion", "")).startswith(sync_engines.ARGO.group + "/"))


def _moved(doc, team_url: str, served_url: str) -> bool:
    """Point ``doc`` (an Application's sources, an AppProject's sourceRepos) at ``served_url``
    where it names ``team_url``; whether it did."""
    if _is_argo(doc, sync_engines.ARGO.kind):
        sources = [s for s in _sources(doc) if s.get("repoURL") == team_url]
        for source in sources:
            source["repoURL"] = served_url
        return bool(sources)
    if _is_argo(doc, "AppProject"):
        repos = (doc.get("spec") or {}).get("sourceRepos") or []
        if team_url in repos:
            doc["spec"]["sourceRepos"] = [served_url if r == team_url else r for r in repos]
            return True
    return False


def stand_in(root: Path, commit: str, work: Path, folder: str, team_url: str, served_url: str) -> Served:
    """``commit`` with each Application that fetches ``team_url`` fetching ``served_url``, the
    root being the one of ``folder``; ``work`` holds the new objects (commit_on_top.git_env)."""
    env = on_top.git_env(root, work)
    changed: dict[str, tuple[str, bytes]] = {}
    root_file, root_documents = "", []
    for mode, blob, path in on_top.files(root, env, commit):
        in_folder = path.startswith(f"{folder}/")
        if not path.endswith((".yaml", ".yml")):
            continue
        text = on_top.blob(root, env, blob)
        # Only a file that names the URL can change; the cluster's folder is read for its root.
        if team_url.encode() not in text and not in_folder:
            continue
        try:
            docs = yamlio.read_manifests_all(text.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise RlgenError(f"{root / path}: {exc}") from None
        if any([_moved(d, team_url, served_url) for d in docs]):  # every document, not the first
            changed[path] = (mode, yamlio.dump_all(docs).encode())
        if in_folder and any(_is_argo(d, sync_engines.ARGO.kind) and sync_engines.ARGO.stage_path(d) == folder
                             for d in docs):
            root_file, root_documents = path.removeprefix(f"{folder}/"), docs
    if not root_file:
        raise RlgenError(f"{root / folder}: no Argo CD Application syncs {folder}/ (the root the README applies)")
    if not changed:
        return Served(commit, env, root_file, root_documents)
    message = f"rlgen e2e: the Applications fetch {served_url}, the run's own Git server"
    return Served(on_top.commit(root, env, commit, changed, message), env, root_file, root_documents)
