"""What ``rlgen validate`` does: render every root, check every object against its schema and
the semantic rules, and gather the findings by file and object."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlgen.output import status
from rlgen.render.background import Rendering
from rlgen.repo.workspace import find_root
from rlgen.repo.layout import RUNS, is_runs_root

# The rules, schemas and run files are imported inside the functions, after the kustomize
# builds started: the imports then overlap the builds, which are most of validate's time.
# Measured (medians of 9, after rlgen.commands.validate): 144 ms for validate()'s first
# imports, 62 ms its second, 99 ms the schema check's, 26 ms all the others.


@dataclass(frozen=True)
class Validation:
    """The findings (problems), what was checked against which schemas, and the warnings;
    ``summary`` says the problems in one line."""
    findings: list
    checked: int
    engine: str
    sources: list[dict]
    cautions: list
    summary: str


# long: its order is its speed (the docstring says how).
def validate(target: Path | None, locations, offline: bool) -> Validation:
    """Validate the repository holding ``target`` (else the working folder), every object or
    with ``target`` those it contributes; ``locations``: schema location templates.

    One function of some length, as its order is its speed: the builds first, everything that
    needs no rendered object while they run, then each root's objects as it comes."""
    root = find_root(target or Path.cwd())
    # The kustomize builds are most of the time: they start first and everything below that
    # needs no rendered object is done while they run. A refusal below stops them.
    with Rendering(root) as rendering:
        rendering.wait_started()
        # Lazy: overlaps the builds (the numbers are at the top).
        from rlgen.repo import answers
        from rlgen.run import files
        from rlgen.repo.workspace import Workspace, load_selection, load_spec
        from rlgen.validate.conflicts import conflict_findings
        from rlgen.validate.image_folders import image_findings, tracked_files
        from rlgen.validate.run_folders import foreign_findings

        if conflicts := conflict_findings(root):
            # Files with markers do not load or render: report them alone.
            return Validation(conflicts, 0, "none (not rendered)", [], [],
                              f"{len(conflicts)} file(s) with merge conflict markers")
        # A hand-edited file that does not load stops validate before anything is reported.
        selection = load_selection(root)
        ws = Workspace(root, load_spec(root, selection))
        repo = ws.root
        runs = files.check_repository(repo, ws.spec, plain=True)
        # Lazy: overlaps the builds (the numbers are at the top).
        from rlgen.rules import check, findings_by_run_file, run_file, warnings
        from rlgen.rules.tools import acknowledged
        from rlgen.validate.schema_findings import schema_sources

        stale = (stale_findings(repo, ws.spec, runs, target) + image_findings(repo, target, tracked_files(repo))
                 + foreign_findings(repo, ws.spec.run_config_key, ws.spec.namespace, target))
        external = answers.read(repo)["external_secrets"]
        plugins = (selection.hooks(), selection.context(ws.spec))
        secret_plan = _secret_plan(repo, selection)
        validator, located, schema = _schema_check(repo, locations, offline)
        with status(f"Rendering and validating {len(runs)} run(s) and the platform"), schema:
            objects = collect(root, rendering, schema)
            scope = None if target is None or target.resolve() == repo else in_scope(repo, target.resolve(), objects)
            if scope is not None:  # findings name a run's objects by its run.yaml
                scope |= {(run_file(source, label, runs, ws.spec.run_config_key), label) for source, label in scope}
            checked = [o for o in objects if scope is None or (o.source, o.label) in scope]
            rule_findings = [f for f in check(objects, external, plugins, runs)
                             if scope is None or (f.source, f.obj) in scope]
            cautions = acknowledged([w for w in warnings(objects, runs) if scope is None or (w.source, w.obj) in scope],
                                    plugins[1])
            secrets = _secret_findings(repo, objects, secret_plan)
            sources = schema_sources(checked, validator, located, repo)
            findings = [f for f in schema.findings(objects) if scope is None or (f.source, f.obj) in scope]
            findings = findings_by_run_file(findings, runs, ws.spec.run_config_key) + rule_findings + stale
            findings = _with_secret_findings(findings, secrets, scope)
    return Validation(findings, len(checked), schema.engine, sources, cautions,
                      f"{len(findings)} problem(s) in {len({f.obj for f in findings})} object(s)")


def _schema_check(repo: Path, locations, offline: bool):
    """(the validator, the locations with where each comes from, the check kubeconform runs):
    each root's objects are checked as soon as they are rendered, while the others build and the
    rules run."""
    # Lazy: overlaps the builds (the numbers are at the top).
    from rlgen.validate.locations import default_locations
    from rlgen.validate.schema import SchemaValidator
    from rlgen.validate.schema_findings import SchemaCheck

    located = [("--schema-location", loc) for loc in locations] or default_locations(repo, offline)
    cache = repo / ".rlgen-cache"
    validator = SchemaValidator([template for _, template in located], cache_dir=cache, offline=offline)
    schema = SchemaCheck(validator, located, cache, offline)
    schema.warm(training_types(repo))
    return validator, located, schema


def collect(repo: Path, rendering=None, schema=None) -> list:
    """Every object the repository gives the cluster, with the root or file it comes from.

    Only the top roots are rendered (the overlays and ``runs/``, which contain ``base/`` and
    every ``runs/<run>``), so each object is checked once. ``rendering``: one already started;
    ``schema`` (a :class:`rlgen.validate.schema_findings.SchemaCheck`) gets each root's
    documents as soon as kustomize wrote them, and then every object.
    """
    # Lazy: overlaps the builds (the numbers are at the top).
    from rlgen.tools.yamlio import read_manifests_all
    from rlgen.rules import Rendered

    by_source: dict[str, dict] = {}
    with rendering or Rendering(repo) as rendering:
        for source, part, docs, built in rendering.sources():
            if schema and built:  # kubeconform reads them while they are parsed here
                schema.send(docs)
            objects = by_source.setdefault(source, {})[part] = [
                Rendered(source, d) for d in read_manifests_all("\n---\n".join(docs))]
            if schema:
                # One object a document: split() keeps only documents with an apiVersion and a kind.
                schema.add(objects, sent=built)
    # In the order of the render, whichever build or part finished first.
    return [o for source in rendering.result for _, found in sorted(by_source[source].items(), key=_part)
            for o in found]


def _part(item: tuple[int | None, list]) -> int:
    return -1 if item[0] is None else item[0]


def in_scope(repo: Path, target: Path, objects) -> set[tuple[str, str]]:
    """(source, label) of the objects ``target`` contributes to the whole render: those of the
    roots and files below it, and those of a root above it that ``target`` renders alike
    (``runs/<run>`` inside ``overlays/<env>/runs``). Out of context a folder misses what others provide."""
    # Lazy: overlaps the builds (the numbers are at the top).
    from rlgen.render.roots import render_all
    from rlgen.tools.yamlio import read_plain_all
    from rlgen.rules import Rendered

    rel = target.relative_to(repo).as_posix()
    inside = {(o.source, o.label) for o in objects if o.source == rel or o.source.startswith(rel + "/")}
    if target.is_file() or inside:
        return inside
    labels = {Rendered("", d).label for _, text in render_all(target) for d in read_plain_all(text)}
    # A run folder renders inside each environment's runs index that lists it.
    return {(o.source, o.label) for o in objects if o.label in labels
            and (rel.startswith(o.source + "/") or (is_runs_root(o.source) and rel.startswith(RUNS + "/")))}


def training_types(repo: Path) -> set[tuple[str, str]]:
    """(apiVersion, kind) of the objects of the training base, which every run renders."""
    # Lazy: overlaps the builds (the numbers are at the top).
    from rlgen.repo.layout import TRAINING_BASE
    from rlgen.tools.kustomize import KUSTOMIZATION_FILES
    from rlgen.tools import repo_files
    from rlgen.tools.yamlio import read_plain_all

    found = set()
    # The kustomization is no object: looking its kind up would try the remote catalogs.
    for path in sorted(p for p in (repo / TRAINING_BASE).glob("*.y*ml") if p.name not in KUSTOMIZATION_FILES):
        try:
            docs = read_plain_all(repo_files.read_text(path, repo))
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # the render reports it
        found |= {(d["apiVersion"], d["kind"]) for d in docs if isinstance(d, dict)
                  and isinstance(d.get("apiVersion"), str) and isinstance(d.get("kind"), str)}
    return found


def stale_findings(repo: Path, spec, runs: dict, target: Path | None) -> list:
    """A run edited by hand after ``rlgen run`` named it: merged as it is, its RayJob keeps the
    old name and KubeRay never runs the edit. Reported on the run's run.yaml (what one edits)."""
    # Lazy: overlaps the builds (the numbers are at the top).
    from rlgen.run import naming
    from rlgen.rules import Finding

    rel = None if target is None or target.resolve() == repo else target.resolve().relative_to(repo).as_posix()
    found = []
    for run, (pinned, expected) in naming.stale_names(repo, spec, {r: f.pinned for r, f in runs.items()}).items():
        path = f"runs/{run}/{spec.run_config_key}"
        if rel is not None and not (path.startswith(rel + "/") or path == rel or rel.startswith(f"runs/{run}/")
                                    or rel == f"runs/{run}"):
            continue
        found.append(Finding(path, f"RayJob/{pinned or '(not named)'}",
                             "edited after its RayJob was named (this file, its kustomization or the training base): "
                             f"merged as it is, KubeRay never runs the edit (it would be RayJob {expected})",
                             f"rlgen run set {run}"))
    return found


def _secret_plan(repo: Path, selection):
    """What the secrets rules read from the repository's files (before anything is rendered):
    the plan of its Secrets (of ``selection``), and the committed files holding a Secret in
    plain text."""
    # Lazy: overlaps the builds (the numbers are at the top).
    from rlgen.repo.secret_plan import plan
    from rlgen.rules.secrets import plaintext_files

    return plan(repo, selection), list(plaintext_files(repo))


def _secret_findings(repo: Path, objects, read) -> list:
    """The secrets rules, on the rendered objects and what :func:`_secret_plan` read."""
    # Lazy: overlaps the builds (the numbers are at the top).
    from rlgen.rules.secrets import secret_findings

    found, in_files = read
    return secret_findings(repo, objects, found.secrets, found.encrypted, in_files)


def _with_secret_findings(findings, extra, scope) -> list:
    """``findings`` and those of the secrets rules; a plaintext Secret found in a committed
    file is reported once, at that file, not again as a rendered object."""
    # Lazy: overlaps the builds (the numbers are at the top).
    from rlgen.rules.secrets import PLAINTEXT

    in_files = {f.obj for f in extra if f.message == PLAINTEXT}
    findings = [f for f in findings if not (f.message == PLAINTEXT and f.obj in in_files)]
    return findings + [f for f in extra if scope is None or f.message == PLAINTEXT or (f.source, f.obj) in scope]
