"""What ``rlgen e2e`` has Argo CD sync: the commit tested plus one on top whose Applications fetch
the command's own Git server instead of the team's URL, written outside the repository."""
from __future__ import annotations

import subprocess

from support.e2e_command import git_objects
from support.repos import GIT_URL

from rlgen.e2e import served_url
from rlgen.tools.yamlio import read_manifests_all

SERVED = "http://127.0.0.1:1/repository.git"


def show(repo, env: dict, spec: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", spec], env=env, capture_output=True, text=True,
                          check=True).stdout


def test_the_applications_of_the_cluster_fetch_the_served_url_and_the_repository_is_untouched(generate, tmp_path):
    repo = generate("--plugin", "argo")
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    before = git_objects(repo)

    served = served_url.stand_in(repo, head, tmp_path / "work", "clusters/production", GIT_URL, SERVED)

    assert served.commit != head and served.root_file == "root.yaml"
    root_app, project = (next(d for d in served.root_documents if d["kind"] == kind)
                         for kind in ("Application", "AppProject"))
    assert root_app["spec"]["source"]["repoURL"] == SERVED
    # The AppProject beside the root lets the Applications fetch the served URL, not the team's.
    assert SERVED in project["spec"]["sourceRepos"] and GIT_URL not in project["spec"]["sourceRepos"]
    assert show(repo, served.env, f"{served.commit}^") == show(repo, served.env, head)
    urls = {}
    listed = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", served.commit, "clusters/production/"],
                            env=served.env, capture_output=True, text=True, check=True).stdout.split()
    for path in (p.rsplit("/", 1)[1] for p in listed):
        for doc in read_manifests_all(show(repo, served.env, f"{served.commit}:clusters/production/{path}")):
            if doc.get("kind") == "Application":
                urls[doc["metadata"]["name"]] = doc["spec"]["source"]["repoURL"]
    # The repository's own stages fetch the served commit; the upstream sources keep their URLs.
    assert {name for name, url in urls.items() if url == SERVED} == {"root", "platform", "runs"}, urls
    assert GIT_URL not in urls.values() and all(u.startswith("https://github.com/") for n, u in urls.items()
                                                  if n not in ("root", "platform", "runs")), urls
    # Nothing written into the repository: no object, no commit, no file.
    assert git_objects(repo) == before
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""
