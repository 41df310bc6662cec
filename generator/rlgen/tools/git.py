"""Real git through subprocess: the one way rlgen runs git, and the questions every command
asks of a repository (its HEAD, whether its tree is clean, who commits). A commit carries the
user's own git identity or is refused with git's advice, never made under another name. The
object-store plumbing of ``rlgen update`` is in :mod:`rlgen.tools.git_plumbing`, the
all-or-nothing change of ``rlgen run`` and ``rlgen update`` in :mod:`rlgen.tools.git_change`."""
from __future__ import annotations

import json
import locale
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable

from rlgen.errors import RlgenError
from rlgen.tools import children

#: git guesses a name and email from the login and the host when none is configured
#: (user.useConfigOnly, git-config(1)): a commit of rlgen's is made only as someone the user
#: named, in git's configuration or its GIT_AUTHOR_*/GIT_COMMITTER_*/EMAIL variables.
CONFIGURED_ONLY = ("-c", "user.useConfigOnly=true")


#: A read-only question (status, diff) must not take the index's lock to save a refresh of its
#: stat data (git's "optional locks", git 2.15): killed then, with rlgen, it would leave
#: index.lock behind and refuse the next command. What needs the refreshed index refreshes it.
_NO_OPTIONAL_LOCKS = {"GIT_OPTIONAL_LOCKS": "0"}


def run(repo: Path, *args: str, check: bool = True, input: str | None = None,
        extra_env: dict[str, str] | None = None, ok_codes: tuple[int, ...] = (0,)) -> str:
    """git's output; an exit code outside ``ok_codes`` is an :class:`RlgenError` unless ``check``
    is false (then the output is empty)."""
    env = {**os.environ, **_NO_OPTIONAL_LOCKS, **(extra_env or {})}
    try:
        result = children.run(["git", *args], cwd=repo, text=True, env=env, input=input,
                              preexec_fn=children.die_with_parent())
    except FileNotFoundError:
        raise RlgenError("git is not installed") from None
    if result.returncode not in ok_codes and check:
        raise RlgenError(f"git {_subcommand(args)} failed: {' '.join(result.stderr.split())}")
    return result.stdout if result.returncode in ok_codes else ""


def start(repo: Path, *args: str, input: str | None = None) -> Callable[[], str]:
    """A question to git (``git ARGS`` reads; ``git diff`` may at most refresh the index's
    file stats, with git's own lock) started now; the function returned waits for it and gives
    what :func:`run` gives: questions that do not depend on each other asked at once. The
    output goes to a file, not a pipe, so a long one never stalls git while another is awaited.
    A question that outlives a killed rlgen only finishes, so it is not tied to rlgen's life
    (killed, it could leave git's lock behind): with nothing to run between fork and exec,
    Python starts it the cheaper way (vfork)."""
    # Lazy: tempfile is 6-12 ms (median of 7) of every command that imports git.
    import tempfile

    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    given = subprocess.DEVNULL
    if input is not None:
        given = tempfile.TemporaryFile()
        given.write(input.encode(locale.getpreferredencoding(False)))
        given.seek(0)
    try:
        proc = children.popen(["git", *args], cwd=repo, stdin=given, stdout=out, stderr=err,
                              env={**os.environ, **_NO_OPTIONAL_LOCKS})
    except FileNotFoundError:
        out.close(), err.close()
        raise RlgenError("git is not installed") from None
    finally:
        if input is not None:
            given.close()
    answer: list[str] = []

    def result() -> str:
        if not answer:
            with out, err:
                code = proc.wait()
                out.seek(0), err.seek(0)
                if code != 0:
                    raise RlgenError(f"git {args[0]} failed: {' '.join(_text(err.read()).split())}")
                answer.append(_text(out.read()))
        return answer[0]
    return result


def _subcommand(args: tuple[str, ...]) -> str:
    # git's own options (-c KEY=VALUE) come first.
    return next((a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] != "-c")), "")


def _text(data: bytes) -> str:
    # As subprocess's text mode reads output: the locale's encoding, universal newlines.
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def require_identity(where: Path) -> None:
    """The user's git identity, as a commit in ``where`` (a repository, or the folder a new one
    goes in) would take it; none is refused before anything is written, with git's own advice."""
    for who in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        try:
            probe = children.run(["git", *CONFIGURED_ONLY, "var", who], cwd=where, text=True,
                                 env={**os.environ, **_NO_OPTIONAL_LOCKS})
        except FileNotFoundError:
            raise RlgenError("git is not installed") from None
        if probe.returncode != 0:
            advice = " ".join(line.strip() for line in probe.stderr.splitlines() if line.strip())
            raise RlgenError(f"git has no name and email of yours, and rlgen commits only as you: {advice}")


def init(repo: Path, branch: str) -> None:
    """A repository whose first commit lands on ``branch``: a new one, or an empty clone
    already there (then symbolic-ref: a re-init ignores ``init -b``)."""
    again = (repo / ".git").exists()
    run(repo, "init", "-q", *([] if again else [f"--initial-branch={branch}"]))
    if again:
        run(repo, "symbolic-ref", "HEAD", f"refs/heads/{branch}")


def commit_all(repo: Path, message: str) -> None:
    run(repo, "add", "-A")
    commit(repo, message)


def commit(repo: Path, message: str, paths: list[str] | None = None) -> None:
    """``git commit`` of the index, the porcelain way: the repository's hooks (pre-commit,
    prepare-commit-msg, commit-msg, post-commit) run and its signing settings
    (``commit.gpgsign``, ``gpg.format``, ``user.signingkey``) apply. A hook that refuses the
    commit is named, from the hook events git traces (trace2) into a file with no name.
    ``paths``: only these pathspecs are committed, whatever else the user staged."""
    # Lazy: tempfile is 6-12 ms (median of 7) of every command that imports git.
    import tempfile

    env = {**os.environ}
    with tempfile.TemporaryFile("w+") as trace:
        fds: tuple[int, ...] = ()
        if os.path.isdir("/dev/fd"):
            env.update(GIT_TRACE2_EVENT=f"/dev/fd/{trace.fileno()}", GIT_TRACE2_EVENT_NESTING="1")
            fds = (trace.fileno(),)
        try:
            # The hooks run in git's process group, which an interrupt of rlgen ends whole.
            result = children.run(["git", *CONFIGURED_ONLY, "commit", "-q", "-F", "-",
                                   *(["--", *paths] if paths else [])], cwd=repo, text=True,
                                  env=env, input=message, pass_fds=fds, preexec_fn=children.die_with_parent())
        except FileNotFoundError:
            raise RlgenError("git is not installed") from None
        if result.returncode == 0:
            return
        trace.seek(0)
        events = [json.loads(line) for line in trace if line.startswith("{")]
    said = " ".join(result.stderr.split())
    hooks = {e["child_id"]: e for e in events if e.get("event") == "child_start" and e.get("child_class") == "hook"}
    for event in events:
        hook = hooks.get(event.get("child_id"))
        if event.get("event") == "child_exit" and hook and event.get("code"):
            where = (hook.get("argv") or [hook["hook_name"]])[0]
            raise RlgenError(f"the {hook['hook_name']} hook ({where}) refused the commit, so nothing was committed"
                             + (f": {said}" if said else ""))
    raise RlgenError(f"git commit failed: {said or f'exit code {result.returncode}'}")


def signing_args(repo: Path) -> list[str]:
    """``-S`` when the repository asks every commit to be signed: ``git commit-tree``, plumbing,
    reads ``gpg.format`` and ``user.signingkey`` but not ``commit.gpgsign`` (see docs/upstream.md)."""
    return ["-S"] if run(repo, "config", "--bool", "commit.gpgsign", check=False).strip() == "true" else []


def hooks_present(repo: Path, names: tuple[str, ...] = ("pre-commit", "commit-msg")) -> list[str]:
    """Those of ``names`` the repository has as executable hooks (``core.hooksPath`` or the git directory's)."""
    configured = run(repo, "config", "core.hooksPath", check=False).strip()
    folder = Path(repo, os.path.expanduser(configured)) if configured else Path(
        repo, run(repo, "rev-parse", "--git-path", "hooks").strip())
    return [n for n in names if (folder / n).is_file() and os.access(folder / n, os.X_OK)]


def origin_url(repo: Path) -> str | None:
    """``git remote get-url origin`` of ``repo``, or None when it has no such remote."""
    probe = children.run(["git", "remote", "get-url", "origin"], cwd=repo, text=True)
    return probe.stdout.strip() or None if probe.returncode == 0 else None


def fetch(repo: Path, branch: str) -> str | None:
    """``branch`` fetched from origin into ``origin/<branch>``: None when it was, or when there
    is no origin; else why not, in git's words. Never a prompt for credentials."""
    if origin_url(repo) is None:
        return None
    result = children.run(["git", "fetch", "-q", "--no-tags", "origin", f"+refs/heads/{branch}:refs/remotes/origin/{branch}"],
                          cwd=repo, text=True, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
                          preexec_fn=children.die_with_parent())
    return None if result.returncode == 0 else " ".join(result.stderr.split()) or f"exit code {result.returncode}"


def has_commits(repo: Path) -> bool:
    return _succeeds(repo, "rev-parse", "-q", "--verify", "HEAD")


def commit_of(repo: Path, ref: str) -> str:
    """The commit ``ref`` names, "" when it names none."""
    return run(repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False).strip()


def is_ancestor(repo: Path, commit: str, of: str) -> bool:
    """Whether ``commit`` is ``of`` or one of its ancestors (no when git knows either not)."""
    return _succeeds(repo, "merge-base", "--is-ancestor", commit, of)


def _succeeds(repo: Path, *args: str) -> bool:
    return children.run(["git", *args], cwd=repo, env={**os.environ, **_NO_OPTIONAL_LOCKS}).returncode == 0


def head(repo: Path) -> tuple[str | None, str]:
    """(the checked-out branch, ``None`` on a detached HEAD; the commit HEAD points at)."""
    sha = run(repo, "rev-parse", "HEAD").strip()
    return run(repo, "symbolic-ref", "-q", "--short", "HEAD", check=False).strip() or None, sha


def name_status(repo: Path, *args: str) -> dict[str, list[str]]:
    """``git diff --name-status ARGS`` as the ``files`` object of a change's JSON: paths added,
    changed and removed (a rename is a removal and an addition)."""
    found: dict[str, list[str]] = {"A": [], "M": [], "D": []}
    for line in run(repo, "diff", "--name-status", "--no-renames", *args).splitlines():
        status, _, path = line.partition("\t")
        found.get(status[:1], found["M"]).append(path)
    return {"added": sorted(found["A"]), "changed": sorted(found["M"]), "removed": sorted(found["D"])}


def require_clean(repo: Path, paths: list[Path] | None = None) -> None:
    """No uncommitted change to ``paths`` (files or folders), the files a command writes: a
    commit of ours holds only our change, and a rollback must not touch the user's work. Without
    ``paths``, no change to a tracked file anywhere. Untracked files elsewhere never count."""
    specs = ["--", *(p.relative_to(repo).as_posix() for p in paths)] if paths is not None else ["--untracked-files=no"]
    found = sorted(line[3:] for line in run(repo, "status", "--porcelain", "--no-renames", *specs).splitlines() if line)
    if found:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise RlgenError(f"uncommitted changes to {shown}, which this command writes: commit them, "
                         "or put them aside with git stash -u")


def require_no_stale_lock(repo: Path) -> None:
    """A git lock file left by a killed git (``index.lock``, ``HEAD.lock``) makes a later step
    fail halfway; said first, before anything is created."""
    git_dir = Path(repo, run(repo, "rev-parse", "--git-dir").strip())
    for name in ("index.lock", "HEAD.lock"):
        if (git_dir / name).exists():
            raise RlgenError(f"{git_dir / name} exists: another git command is running, or one was killed and left "
                             "its lock; if no git runs, delete that file and run this again")


def require_writable(repo: Path, paths: list[Path] = ()) -> None:
    """A read-only work tree or git directory said before anything is written: a change that
    fails halfway could not even be put back."""
    git_dir = Path(repo, run(repo, "rev-parse", "--git-common-dir").strip()).resolve()
    folders = [repo, git_dir, git_dir / "objects", git_dir / "refs" / "heads"]
    for path in paths:
        existing = next(p for p in (path, *path.parents) if p.exists())
        folders.append(existing if existing.is_dir() else existing.parent)
        if path.is_dir():
            folders += [p for p in path.rglob("*") if p.is_dir()]
    files = [git_dir / "index", git_dir / "HEAD"] + [p for path in paths if path.exists()
                                                      for p in ([path] if path.is_file() else path.rglob("*"))
                                                      if p.is_file()]
    for path in [*folders, *(f for f in files if f.exists())]:
        if not os.access(path, os.W_OK):
            what = "folder" if path.is_dir() else "file"
            raise RlgenError(f"{path} is read-only: this command writes that {what}; make it writable "
                             "(chmod u+w) and run this again")


#: What git keeps while an operation waits for the user, and the command that ends it.
_IN_PROGRESS = (("BISECT_LOG", "a git bisect", "git bisect reset"),
                ("rebase-merge", "a git rebase", "git rebase --continue or --abort"),
                ("rebase-apply", "a git rebase or git am", "git rebase --abort or git am --abort"),
                ("MERGE_HEAD", "a git merge", "git merge --continue or --abort"),
                ("CHERRY_PICK_HEAD", "a git cherry-pick", "git cherry-pick --continue or --abort"),
                ("REVERT_HEAD", "a git revert", "git revert --continue or --abort"))


def require_no_operation(repo: Path) -> None:
    """A bisect, rebase, merge, cherry-pick or revert under way: a commit of ours would land in
    the middle of it (and a bisect's reset would drop it), so none is made."""
    for name, what, end in _IN_PROGRESS:
        path = Path(repo, run(repo, "rev-parse", "--git-path", name).strip())
        if path.exists():
            raise RlgenError(f"{what} is in progress in {repo} ({path} exists): finish it first ({end})")


def require_whole_checkout(repo: Path) -> None:
    """A sparse checkout (or files marked skip-worktree) leaves tracked files off disk: rlgen
    reads the repository's files and restores them on a rollback, so it refuses before it starts.
    The setting is read too: git marks the index's entries only when it next rewrites the index."""
    absent = [line[2:] for line in run(repo, "ls-files", "-t").splitlines() if line.startswith("S ")]
    sparse = run(repo, "config", "--bool", "core.sparseCheckout", check=False).strip() == "true"
    if absent or sparse:
        first = f"; first: {absent[0]}" if absent else ""
        raise RlgenError(f"{repo} is a sparse checkout (git sparse-checkout, or files marked skip-worktree{first}): "
                         "rlgen reads and restores the whole repository; run git sparse-checkout disable first")


def require_branch(repo: Path) -> str:
    require_no_operation(repo)
    require_whole_checkout(repo)
    # A commit on a detached HEAD belongs to no branch: the next checkout orphans it.
    branch = head(repo)[0]
    if branch is None:
        raise RlgenError("HEAD is detached (no branch checked out): switch to a branch first, "
                         "or a commit here would belong to no branch")
    return branch
