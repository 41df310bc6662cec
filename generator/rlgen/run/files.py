"""A run's files as rlgen reads them back after a user may have edited them by hand: the runs
index (``overlays/<env>/runs/kustomization.yaml``: which runs it lists),
``runs/<run>/kustomization.yaml`` (the pinned RayJob name), ``runs/<run>/run.yaml`` and
``base/training/trainer.yaml``. What writes them is :mod:`rlgen.run.folder`.

Each has one loader here that checks its shape and names the file, the place in it and what
is wrong in one :class:`RlgenError` line. Every command (``run``, ``validate``) loads them
through :func:`check_repository` first, so no command accepts what another refuses; ``diff``,
which reads only what differs between two revisions, loads those of them through
:func:`check_changed`, by the same loaders.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from rlgen.errors import RlgenError
from rlgen.naming import dns1035_label_error
from rlgen.repo import answers
from rlgen.repo.layout import (OLD_RUNS_INDEX, RUN_ENTRY, RUN_LINK, RUNS, TRAINING_BASE, runs_env,
                               runs_index, runs_root)
from rlgen.spec import Spec
from rlgen.tools import repo_files, yamlio
from rlgen.tools.kustomize_reads import KUSTOMIZATION_FILES
from rlgen.verl import keys, releases, trainer_config

#: Keys of run.yaml that are Hydra's, not verl's.
HYDRA_KEYS = ("hydra", "defaults")
#: The name of the transformer in a run's kustomization that pins its RayJob's name.
RENAME_TRANSFORMER = "rayjob-name"


class Defect(RlgenError):
    """A hand edit rlgen cannot work with: ``<file>: <place>: <problem>``."""

    def __init__(self, path: Path, place: str, problem: str):
        super().__init__(f"{path}: {place + ': ' if place else ''}{problem}")


@dataclass(frozen=True)
class RunFiles:
    """One run as rlgen reads it: its run.yaml (round-trip, comments kept) and pinned name."""

    name: str
    doc: Any
    pinned: str | None


def read_mapping(path: Path, plain: bool = False) -> Any:
    """A YAML file that must hold a mapping with string keys (an empty file is an empty one).
    ``plain``: as plain data, read at libyaml speed (the round-trip reader, which keeps
    comments for writing back, is many times slower); a file the fast reader refuses is read
    again by the round-trip one, which names the place."""
    doc = _read_plain(path) if plain else None
    if doc is None:
        doc = yamlio.read_file(path)
    if doc is None:
        return CommentedMap()
    if not isinstance(doc, dict):
        raise Defect(path, "", f"expected a mapping, got {_kind(doc)}")
    _string_keys(path, doc, "")
    return doc


def _read_plain(path: Path) -> Any:
    try:
        return yamlio.read_checked12(repo_files.read_text(path))
    except (OSError, RlgenError, ValueError):
        return None


def index_path(repo: Path, env: str | None = None) -> Path:
    """Where ``env`` (a cluster's environment; by default the main cluster's, which ``rlgen run``
    edits) lists its runs: its index when it has one, else its runs folder, one folder per run."""
    if not env:
        env = answers.main_environment(repo)
    else:
        known = {answers.main_environment(repo), *answers.read(repo)["clusters"].values()}
        if env not in known:
            raise RlgenError(f"--env {env}: no cluster syncs that environment (environments: {', '.join(sorted(known))})")
    index = repo / runs_index(env)
    return index if index.is_file() or index.is_symlink() else repo / runs_root(env)


def read_index(repo: Path, plain: bool = False, env: str | None = None) -> list[str]:
    """The runs ``env`` gets (the main environment's by default): each a run folder that exists."""
    path = index_path(repo, env)
    require_inside(repo, path)
    if path.name != "kustomization.yaml":
        return read_links(repo, path, plain)
    if (repo / OLD_RUNS_INDEX).is_file():
        raise RlgenError(f"{OLD_RUNS_INDEX}: an earlier rlgen kept the runs index there; it is now "
                         f"{path.relative_to(repo)}: rlgen update moves it")
    doc = read_mapping(path, plain)
    resources = _list_of_str(path, doc, "resources")
    runs = []
    for i, entry in enumerate(resources):
        runs.append(_run_named(repo, path, f"resources[{i}]", entry, RUN_ENTRY))
    if len(set(runs)) != len(runs):
        raise Defect(path, "resources", "a run is listed twice")
    return runs


def read_links(repo: Path, folder: Path, plain: bool = False) -> list[str]:
    """The runs of a runs folder without index, found as the sync engine finds them: each
    sub-folder holding a kustomization (docs/upstream.md). Anything else there that the engine
    would apply (a YAML file, a folder of them) is refused, naming it: it is no run's."""
    if (repo / OLD_RUNS_INDEX).is_file():
        raise RlgenError(f"{OLD_RUNS_INDEX}: an earlier rlgen kept the runs index there; each run is now "
                         f"a folder of {folder.relative_to(repo)}/: rlgen update moves it")
    runs = []
    for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
        if entry.is_dir() and not entry.is_symlink() and any((entry / n).is_file() for n in KUSTOMIZATION_FILES):
            path = entry / "kustomization.yaml"
            if not path.is_file():
                raise Defect(entry, "", "expected kustomization.yaml in a run's folder here (the name rlgen reads)")
            require_inside(repo, path)
            resources = _list_of_str(path, read_mapping(path, plain), "resources")
            if len(resources) != 1:
                raise Defect(path, "resources", f"expected one entry, {RUN_LINK.format(run=entry.name)}")
            runs.append(_run_named(repo, path, "resources[0]", resources[0], RUN_LINK))
            if runs[-1] != entry.name:
                raise Defect(path, "resources[0]", f"expected {RUN_LINK.format(run=entry.name)} (the folder's name)")
        elif entry.suffix in (".yaml", ".yml") or (entry.is_dir() and any(entry.rglob("*.y*ml"))):
            raise Defect(entry, "", "not a run's folder, yet the sync engine applies what it holds: a run is a "
                                    "folder here with a kustomization.yaml naming runs/<run> (rlgen run new)")
    return runs


def _run_named(repo: Path, path: Path, place: str, entry: str, pattern: str) -> str:
    """The run ``entry`` (written as ``pattern``) names, whose folder exists."""
    prefix, _, suffix = pattern.partition("{run}")
    name = entry.removeprefix(prefix).removesuffix(suffix) if entry.startswith(prefix) else ""
    if not name or dns1035_label_error(name):
        raise Defect(path, place, f"not a run folder: expected {pattern.format(run='<run>')}")
    if not (repo / RUNS / name).is_dir():
        raise Defect(path, place, f"no folder runs/{name}")
    return name


def read_run_config(path: Path, spec: Spec, plain: bool = False) -> Any:
    """``runs/<run>/run.yaml``: the Hydra entry point plus verl keys of the right types."""
    doc = read_mapping(path, plain)
    defaults = doc.get("defaults")
    base = spec.trainer_config_key.removesuffix(".yaml")
    if not isinstance(defaults, list) or base not in defaults or "_self_" not in defaults:
        raise Defect(path, "defaults", f"expected a list with '{base}' (the shared base) and '_self_'")
    hydra = doc.get("hydra")
    if hydra is not None and not isinstance(hydra, dict):
        raise Defect(path, "hydra", f"expected a mapping, got {_kind(hydra)}")
    # Checkpoints go to the run's folder of the checkpoints volume, never a path of the node.
    local_dir = (doc.get("trainer") or {}).get("default_local_dir") if isinstance(doc.get("trainer"), dict) else None
    root = spec.volumes["checkpoints"].mount_path.rstrip("/") + "/"
    if isinstance(local_dir, str) and (not local_dir.startswith(root) or ".." in local_dir.split("/")):
        raise Defect(path, "trainer.default_local_dir", f"{json.dumps(local_dir)} is outside the checkpoints "
                                                        f"volume ({root}); rlgen writes {spec.checkpoint_dir(path.parent.name)}")
    check_verl_values(path, {k: v for k, v in doc.items() if k not in HYDRA_KEYS}, spec)
    return doc


def read_trainer_config(repo: Path, spec: Spec, plain: bool = False) -> Any:
    """``base/training/trainer.yaml``: verl keys of the right types."""
    path = repo / TRAINING_BASE / Spec.trainer_config_key
    require_inside(repo, path)
    doc = read_mapping(path, plain)
    check_verl_values(path, {k: v for k, v in doc.items() if k not in HYDRA_KEYS}, spec)
    return doc


def check_verl_values(path: Path, doc: dict, spec: Spec) -> None:
    """Keys the repository's verl release has, with values of its types: verl's struct config
    refuses any other key, but only when the job starts on the GPUs."""
    release = releases.get(spec.verl_version)
    defaults = release.defaults
    flat = trainer_config.flatten(doc)
    for key, value in flat.items():
        if key in defaults:
            if problem := value_error(value, defaults[key]) or keys.range_error(key, value):
                raise Defect(path, key, problem)
        elif any(k.startswith(key + ".") for k in defaults):
            if not isinstance(value, dict):
                raise Defect(path, key, f"expected a mapping (a section of verl's config), got {_kind(value)}")
        elif problem := keys.unknown_key_error(key, release, flat):
            raise Defect(path, key, problem)


def value_error(value: Any, default: Any) -> str | None:
    """Why verl cannot take ``value`` for a key whose default is ``default``: a null where verl
    needs a value (its code does arithmetic on it), or another type."""
    if value is None and default is not None:
        return f"null, but verl needs a value like the default {json.dumps(default)}"
    return keys.type_error(value, default)


def read_run_kustomization(path: Path, run: str, plain: bool = False) -> str | None:
    """``runs/<run>/kustomization.yaml`` as ``rlgen run`` writes it; the pinned RayJob name."""
    doc = read_mapping(path, plain)
    resources = _list_of_str(path, doc, "resources")
    if f"../../{TRAINING_BASE}" not in resources:
        raise Defect(path, "resources", f"expected ../../{TRAINING_BASE} (the training base)")
    if doc.get("namePrefix") != f"{run}-":
        raise Defect(path, "namePrefix", f"expected '{run}-' (every object of the run carries its name)")
    generators = doc.get("configMapGenerator")
    if not isinstance(generators, list) or not all(isinstance(g, dict) for g in generators):
        raise Defect(path, "configMapGenerator", "expected a list of generators (the run's run.yaml)")
    transformers = doc.get("transformers") or []
    if not isinstance(transformers, list):
        raise Defect(path, "transformers", f"expected a list, got {_kind(transformers)}")
    for i, item in enumerate(transformers):
        name = _pinned(path, f"transformers[{i}]", item)
        if name:
            return name
    return None


def _pinned(path: Path, place: str, item: Any) -> str | None:
    if isinstance(item, str):
        try:
            item = yamlio.read_checked12(str(item))
        except ValueError:
            try:  # the reader of typed values says what is wrong
                item = yamlio.parse_value(item)
            except ValueError as exc:
                raise Defect(path, place, f"not YAML ({exc})") from None
    if not isinstance(item, dict) or (item.get("metadata") or {}).get("name") != RENAME_TRANSFORMER:
        return None
    try:
        value = json.loads(item["patch"])[0]["value"]
    except (KeyError, IndexError, TypeError, ValueError):
        raise Defect(path, f"{place}.patch", "expected the JSON patch rlgen run writes "
                                             "(restore it with rlgen run set)") from None
    # Only the shape: whether the name is one Kubernetes accepts is rlgen validate's finding.
    if not isinstance(value, str) or not value:
        raise Defect(path, f"{place}.patch", f"{json.dumps(value)} is not a RayJob name")
    return value


def require_inside(repo: Path, path: Path) -> None:
    """Refuse a file or folder that is a symbolic link or resolves outside ``repo``: rlgen reads
    and rewrites these files, and a committed link would make it write anywhere on the machine."""
    relative = path.relative_to(repo)
    for depth in range(1, len(relative.parts) + 1):
        part = repo.joinpath(*relative.parts[:depth])
        if part.is_symlink():
            raise Defect(part, "", "is a symbolic link: rlgen reads and writes only files inside the repository")
    if not path.resolve().is_relative_to(repo.resolve()):
        raise Defect(path, "", "is outside the repository")


def read_run(repo: Path, spec: Spec, run: str, plain: bool = False) -> RunFiles:
    where = folder_of(repo, run)
    for path in (where / spec.run_config_key, where / "kustomization.yaml"):
        require_inside(repo, path)
    doc = read_run_config(where / spec.run_config_key, spec, plain)
    return RunFiles(run, doc, read_run_kustomization(where / "kustomization.yaml", run, plain))


def check_repository(repo: Path, spec: Spec, plain: bool = False) -> dict[str, RunFiles]:
    """Load every hand-editable file of the repository; the active runs by name. ``plain``:
    their documents as plain data, for a command that only checks them and writes none back
    (``diff``, ``validate``): the same verdicts, at libyaml speed."""
    read_trainer_config(repo, spec, plain)
    return {run: read_run(repo, spec, run, plain) for run in read_index(repo, plain)}


def check_changed(repo: Path, spec: Spec, changed: set[str], plain: bool = False) -> None:
    """Load, as :func:`check_repository` does, the hand-editable files among ``changed`` (paths
    relative to ``repo``), and the runs index whenever it or a file below ``runs/`` changed (it
    says which run folders are runs)."""
    if f"{TRAINING_BASE}/{Spec.trainer_config_key}" in changed:
        read_trainer_config(repo, spec, plain)
    if not any(is_hand_edited_run_file(rel) for rel in changed):
        return
    for run in read_index(repo, plain):
        if {f"runs/{run}/{spec.run_config_key}", f"runs/{run}/kustomization.yaml"} & changed:
            read_run(repo, spec, run, plain)


def is_hand_edited_run_file(rel: str) -> bool:
    """``rel`` (relative to the repository) is a run's file, a runs index or any file of an
    environment's runs folder."""
    return rel.startswith(f"{RUNS}/") or runs_env(rel) is not None


def _list_of_str(path: Path, doc: dict, key: str) -> list[str]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Defect(path, key, f"expected a list, got {_kind(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise Defect(path, f"{key}[{i}]", f"expected a string, got {_kind(item)}")
    return [str(v) for v in value]


def _string_keys(path: Path, node: Any, place: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                raise Defect(path, place or "top level", f"key {json.dumps(key, default=str)} is not a string")
            _string_keys(path, value, f"{place}.{key}" if place else key)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            _string_keys(path, item, f"{place}[{i}]")


def _kind(value: Any) -> str:
    for types, name in ((type(None), "null"), (bool, "a boolean"), ((int, float), "a number"),
                        (str, "a string"), (list, "a list"), (dict, "a mapping")):
        if isinstance(value, types):
            return name
    return type(value).__name__


def read_data(text: str):
    """A file's data, only read: at libyaml speed (``rlgen validate`` names every run),
    the round-trip reader only for a file the fast one refuses, so a defect reads as before."""
    try:
        return yamlio.read_checked12(text)  # which keeps the round-trip reader's bounds
    except ValueError:
        return yamlio.load(text)


def folder_of(repo: Path, run: str) -> Path:
    """``runs/<run>/``, the folder of a run's files."""
    return repo / RUNS / run


def pinned_name(repo: Path, run: str) -> str | None:
    """The RayJob name ``rlgen run`` pinned into the run's kustomization."""
    return read_run_kustomization(folder_of(repo, run) / "kustomization.yaml", run)
