"""What ``rlgen new`` does: generate a repository in memory, write it beside the target, check
and commit it there, and move it into place with one rename."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rlgen import __version__
from rlgen.errors import RlgenError
from rlgen.generate import template_source
from rlgen.generate.filetree import check_target, empty_clone, staged
from rlgen.generate.pipeline import Build, generate
from rlgen.generate.readme import GITLAB_NOTE
from rlgen.generate.staged_rules import EarlyBuilds, refuse_failing
from rlgen.generate.team_template import clash_line
from rlgen.naming import git_host
from rlgen.option_checks import credential_error
from rlgen.plugin_host import install
from rlgen.plugin_host.discovery import discover
from rlgen.plugin_host.selection import parse_sets, select
from rlgen.redaction import redact
from rlgen.tools import git, kustomize


@dataclass(frozen=True)
class Created:
    target: Path
    files: int
    plugins: dict[str, str]
    run: str
    rayjob: str
    #: The images the cluster pulls, which the repository's images workflow builds.
    images: tuple[str, ...] = ()


def create(directory: Path, plugins: list[str], sets: list[str], cluster: str | None, template: str | None,
           template_ref: str | None, prompt: Callable | None, warn: Callable[[str], None]) -> Created:
    """Make the repository ``directory``; ``prompt`` asks a missing answer (None: never ask),
    ``warn`` gets each line for the user that is no error (a template's file rlgen's own won, a
    repository on GitLab, which runs none of the generated workflows)."""
    target = directory.resolve()
    check_target(target)
    git.require_identity(next(p for p in (target, *target.parents) if p.is_dir()))
    if template_ref is not None and template is None:
        raise RlgenError("--template-ref needs --template")
    if template is not None:
        template_source.check(template, template_ref)
    kustomize.command()
    answers = _answers(directory, target, sets, cluster)
    selection = select(discover(), plugins, answers, prompt, require=_required_sources(answers))
    if git_host(selection.values["rlgen"]["git_url"], selection.values["rlgen"]["git_host"]) == "gitlab":
        warn(GITLAB_NOTE)
    with ExitStack() as stack:
        fetched = template_source.recorded_from(stack.enter_context(template_source.fetched(template, template_ref)),
                                                target) if template is not None else None
        early = EarlyStart(target, stack)
        build = generate(selection, template=fetched, on_ready=early.ready)
        for path in build.clashes:
            warn(clash_line(path))
        folder = early.written(build)

        def meanwhile(probed: list[str]) -> None:
            # While kustomize renders: git's index of every file but those holding a patch's
            # twin for the render.
            git.run(folder, "add", "-A", "--", ".", *(f":(exclude,literal){path}" for path in probed))

        refuse_failing(folder, [s.name for s in build.secrets()], (build.hooks, build.ctx),
                       build.hooks.patches(build.ctx), meanwhile=meanwhile, early=early.builds)
        # The patched files, their own content again.
        git.run(folder, "add", "-A", "--", ".")
        plugins_line = ", ".join(f"{slot}={name}" for slot, name in selection.plugins.items())
        git.commit(folder, f"Generate with rlgen {__version__}\n\nPlugins: {plugins_line}\n")
    return Created(target, len(build.tree.files), selection.plugins, build.run, build.rayjob,
                   tuple(i.ref for i in build.images))


def _answers(directory: Path, target: Path, sets: list[str], cluster: str | None) -> dict:
    answers = parse_sets(sets)
    if cluster:
        answers.setdefault("rlgen", {})["cluster"] = cluster
    if empty_clone(target) and (origin := git.origin_url(target)) and "git_url" not in answers.get("rlgen", {}):
        # The repository the sync engine pulls is the one being filled; a token in its origin
        # URL must not reach the files and the first commit.
        if credential_error(origin):
            raise RlgenError(f"the origin remote of {directory} carries credentials ({redact(origin)}): "
                             "pass --set rlgen.git_url=URL without them (the sync engine reads its "
                             "credentials from a Kubernetes Secret)")
        answers.setdefault("rlgen", {})["git_url"] = origin
    return answers


def _required_sources(answers: dict) -> dict[str, str]:
    """rlgen.install, when its default (where this rlgen came from) is no source an image
    build can reach: asked before every other question, as the generation needs it."""
    if "install" in answers.get("rlgen", {}) or (why := install.default_unusable()) is None:
        return {}
    return {"rlgen.install": why}


class EarlyStart:
    """The first roots' kustomize builds, and git init, started in the staged folder while the
    rest of the repository is still being generated: most of ``rlgen new``'s time is those
    builds. Only beside an existing folder, as a refusal must not leave the parents it made."""

    def __init__(self, target: Path, stack: ExitStack):
        self._target = target
        self._stack = stack
        self._folder: Path | None = None
        self._initialized: Future | None = None
        self.builds: EarlyBuilds | None = None

    def ready(self, build: Build, roots: list[str]) -> None:
        """``generate``'s ``on_ready``: ``roots`` have every file they read."""
        if self.builds is None and self._target.parent.is_dir():
            self._folder = self._stack.enter_context(staged(self._target))
            pool = self._stack.enter_context(ThreadPoolExecutor(max_workers=1))
            self._initialized = pool.submit(git.init, self._folder, build.spec.git_branch)
            self.builds = self._stack.enter_context(EarlyBuilds(self._folder, build.hooks.patches(build.ctx)))
        if self.builds is not None:
            self.builds.start(build.tree.files, roots)

    def written(self, build: Build) -> Path:
        """The staged folder, holding every file of ``build`` and an initialised git repository."""
        if self.builds is None:
            folder = self._stack.enter_context(staged(self._target))
            build.tree.write(folder)
            git.init(folder, build.spec.git_branch)
            return folder
        self.builds.write(build.tree.files)
        self._initialized.result()
        return self._folder
