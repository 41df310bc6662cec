"""``rlgen update --set rlgen.verl=...``: the team's trainer configs moved to another verl
release. Keys the release moved are moved (the table ``rlgen.verl.releases.moves``, derived from
both releases' config trees); keys it removed are reported, one line each, and nothing is
written unless ``--force`` drops them. The render brings the base config, image and tool config;
this moves what the team wrote: every run's ``run.yaml`` and edits of the base trainer config.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rlgen.errors import ProblemsFound
from rlgen.repo.layout import TRAINING_BASE
from rlgen.spec import Spec
from rlgen.tools import yamlio
from rlgen.verl.releases.moves import MOVES
from rlgen.verl.trainer_config import flatten

HYDRA_KEYS = ("hydra", "defaults")


@dataclass(frozen=True)
class Move:
    old: str
    new: str
    force: bool = False
    #: (file, key) dropped with --force.
    dropped: list[tuple[str, str]] = field(default_factory=list)

    def describe(self) -> list[str]:
        return [f"verl {self.old} -> {self.new}"] + [f"dropped {key} from {path} (not in verl {self.new})"
                                                    for path, key in self.dropped]


def move(recorded: dict, new_version: str, force: bool) -> Move | None:
    old = recorded["options"]["rlgen"]["verl"]
    return None if old == new_version else Move(old, new_version, force)


def config_files(files: dict[str, bytes]) -> list[str]:
    """The trainer configs a team writes: each run's run.yaml and the base trainer config."""
    base = f"{TRAINING_BASE}/{Spec.trainer_config_key}"
    return sorted(p for p in files if p == base or (p.startswith("runs/") and p.endswith(f"/{Spec.run_config_key}")))


def apply(m: Move, files: dict[str, bytes], report: bool) -> dict[str, bytes]:
    """The moved files (only those that change). ``report``: refuse removed keys unless forced."""
    table = MOVES[(m.old, m.new)]
    renamed, removed = table["renamed"], set(table["removed"])
    changes, refused = {}, []
    for path in config_files(files):
        doc = yamlio.load(files[path].decode())
        if not isinstance(doc, dict):
            continue  # rlgen validate names a file that is not a mapping
        keys = flatten({k: v for k, v in doc.items() if k not in HYDRA_KEYS})
        gone = [k for k in keys if k in removed]
        moved = {k: renamed[k] for k in keys if k in renamed}
        if gone and not m.force:
            refused += [(path, k) for k in gone]
            continue
        for key in gone:
            _pop(doc, key)
            if report:
                m.dropped.append((path, key))
        for key, target in moved.items():
            _set(doc, target, _pop(doc, key))
        if gone or moved:
            changes[path] = yamlio.dump(doc).encode()
    if refused and report:
        lines = "\n".join(f"{_where(path)}: {key} is not a config key of verl {m.new}" for path, key in refused)
        raise ProblemsFound(f"{lines}\n{len(refused)} key(s) verl {m.new} removed: remove them, or rlgen update "
                            "--force to drop them; nothing was changed")
    return changes


def _where(path: str) -> str:
    parts = path.split("/")
    return f"run {parts[1]}" if parts[0] == "runs" and len(parts) == 3 else path


def _pop(doc: dict, key: str):
    *parents, last = key.split(".")
    chain = [doc]
    for part in parents:
        chain.append(chain[-1][part])
    value = chain[-1].pop(last)
    for node, part in zip(reversed(chain[:-1]), reversed(parents)):
        if node[part] == {}:
            del node[part]  # an emptied section goes with its last key
        else:
            break
    return value


def _set(doc: dict, key: str, value) -> None:
    *parents, last = key.split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
