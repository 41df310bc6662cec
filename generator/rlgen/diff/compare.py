"""Compare the rendered objects of two revisions: added, removed, changed, kept (removed from
the repository but never pruned: the volumes), and per run the trainer-config keys that differ
and what its new RayJob starts from.

Objects are matched by source (see :mod:`rlgen.manifests`), API group, kind, namespace and
name. A run's RayJob and ConfigMap carry hashes in their names, so an edited run shows up as
one removed and one added object each; such a pair is linked, so the report can show what
changed between them.
"""
from __future__ import annotations

import copy
import difflib
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, NamedTuple

from rlgen.errors import RlgenError
from rlgen.immutable_fields import refused
from rlgen.naming import HASH_LENGTH
from rlgen.run import checkpoints
from rlgen.run.config import changes as run_changes
from rlgen.spec import Spec
from rlgen.tools import yamlio
from rlgen.verl import batch_rules
from rlgen.verl.batch_rules import Size
from rlgen.verl.trainer_config import effective_config, flatten

#: kustomize's ConfigMap/Secret suffix: 10 characters of a hash in its own alphabet.
KUSTOMIZE_HASH = r"[245-9bcdfghkmt]{10}"
_HASH_SUFFIX = re.compile(rf"-(?:[0-9a-f]{{{HASH_LENGTH}}}|{KUSTOMIZE_HASH})$")
UNSET = object()


# The records of each change are named tuples: building a dataclass's methods at import cost
# more than most comparisons do.
class Key(NamedTuple):
    """Ordered by its fields, in this order."""

    source: str
    kind: str
    namespace: str
    name: str
    group: str

    @property
    def path(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def label(self) -> str:
        return f"{self.kind} {self.path}"


class ObjectChange(NamedTuple):
    """``old``/``new`` are redacted copies; an added object that replaces a removed one (same
    name but for the hash) has the replaced object as ``old`` and its key as ``partner``."""

    status: str  # added | removed | changed | kept (removed from Git, never pruned)
    key: Key
    old: Any = None
    new: Any = None
    partner: Key | None = None

    def details(self, base: str, head: str) -> str:
        """A unified YAML diff, or the whole object when there is nothing to compare with."""
        if self.new is None:
            return ""
        new_text = yamlio.dump(self.new)
        if self.old is None:
            return new_text
        old_key = self.partner or self.key
        return "".join(difflib.unified_diff(
            yamlio.dump(self.old).splitlines(keepends=True), new_text.splitlines(keepends=True),
            fromfile=f"{base}: {old_key.label}", tofile=f"{head}: {self.key.label}"))


class RunChange(NamedTuple):
    run: str
    status: str  # added | removed | changed
    old_rayjob: str | None
    new_rayjob: str | None
    #: (key, old, new) of the effective trainer config, UNSET where a side lacks the key;
    #: for an added run, what it changes in the base config.
    config: list[tuple[str, Any, Any]]
    #: Other ConfigMap files (tool config, MCP servers) that differ.
    files: list[str]
    #: (old, new) GPU nodes x GPUs when a changed run spans another number of GPUs.
    resize: tuple[Size, Size] | None
    #: Why its new RayJob starts from step 0 (a new RayJob: a checkpoint folder of its own; new
    #: volumes), or where it continues from (--resume-from); None when it keeps its RayJob.
    restart: str | None = None

    @property
    def kept_name(self) -> bool:
        """Changed but under the same RayJob name: KubeRay ignores it for a started job."""
        return self.status == "changed" and self.old_rayjob is not None and self.old_rayjob == self.new_rayjob


@dataclass(frozen=True)
class Comparison:
    objects: list[ObjectChange]
    runs: list[RunChange]

    def count(self, status: str) -> int:
        return sum(1 for c in self.objects if c.status == status)

    @property
    def restarts(self) -> list[RunChange]:
        """The runs whose new RayJob starts from step 0 or continues from another's checkpoint."""
        return [r for r in self.runs if r.restart]

    @property
    def refusals(self) -> list:
        """The changes of objects that keep their name that the API server refuses
        (:mod:`rlgen.immutable_fields`): the sync would stop at their stage."""
        return [r for c in self.objects if c.status == "changed" and c.partner is None
                for r in refused(c.old, c.new)]


def compare(base: dict[str, list[str]], head: dict[str, list[str]], spec: Spec) -> Comparison:
    objects = []
    for source in sorted(set(base) | set(head)):
        old_docs, new_docs = Counter(base.get(source, [])), Counter(head.get(source, []))
        # Documents rendered byte for byte alike are unchanged: only the rest gets parsed.
        old = _index(source, old_docs - new_docs)
        new = _index(source, new_docs - old_docs)
        for key in sorted(set(old) | set(new)):
            if key not in new:
                objects.append(("removed", key, old[key], None))
            elif key not in old:
                objects.append(("added", key, None, new[key]))
            elif old[key] != new[key]:
                objects.append(("changed", key, old[key], new[key]))
    return Comparison(_link_replacements(objects), _runs(objects, spec))


def _index(source: str, docs: Counter) -> dict[Key, dict]:
    out = {}
    for text in docs:
        try:
            obj = yamlio.read_plain(text)
        except ValueError as exc:
            raise RlgenError(f"{source}: a rendered document is not YAML ({exc})") from None
        if not isinstance(obj, dict) or "kind" not in obj:
            continue
        meta = obj.get("metadata") or {}
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        out[Key(source, obj["kind"], meta.get("namespace") or "", meta.get("name") or "", group)] = obj
    return out


def _link_replacements(found: list[tuple]) -> list[ObjectChange]:
    """Pair each removed object with the added one that differs only by the hash in its name."""
    def family(key: Key) -> tuple:
        return key.source, key.group, key.kind, key.namespace, _HASH_SUFFIX.sub("", key.name)

    removed = {family(k): (k, old) for status, k, old, _ in found if status == "removed"}
    added = {family(k) for status, k, _, _ in found if status == "added"}
    out = []
    for status, key, old, new in found:
        partner = None
        if status == "added" and family(key) in removed:
            partner, old = removed[family(key)]
        elif status == "removed" and family(key) in added:
            partner = next(k for s, k, _, _ in found if s == "added" and family(k) == family(key))
        old, new = redact(old, new) if key.kind == "Secret" else (old, new)
        out.append(ObjectChange("kept" if status == "removed" and kept(old) else status, key, old, new, partner))
    return out


def redact(old: dict | None, new: dict | None) -> tuple[dict | None, dict | None]:
    """Secret values never reach a report; a changed value says so without showing either."""
    old, new = copy.deepcopy(old), copy.deepcopy(new)
    for field_name in ("data", "stringData"):
        before = (old or {}).get(field_name) or {}
        if old and before:
            old[field_name] = {k: "<redacted>" for k in before}
        if new and new.get(field_name):
            new[field_name] = {k: "<redacted>" if before.get(k, UNSET) == v else "<redacted, changed>"
                               for k, v in new[field_name].items()}
    return old, new


def _runs(found: list[tuple], spec: Spec) -> list[RunChange]:
    """Runs whose trainer ConfigMap or RayJob differs, recognised by the ConfigMap name
    ``<run>-<trainer configmap>-<hash>`` that every run's objects derive from."""
    configmap = re.compile(rf"^(?P<run>.+)-{re.escape(spec.trainer_configmap)}(-{KUSTOMIZE_HASH})?$")
    sides: list[dict[str, dict]] = [{}, {}]
    for status, key, old, new in found:
        for side, obj in enumerate((old, new)):
            if obj is None:
                continue
            if key.kind == "ConfigMap" and (m := configmap.match(key.name)):
                sides[side].setdefault(m["run"], {})["configmap"] = obj
            elif key.kind == "RayJob":
                names = re.findall(r'"([^"]+)"', json.dumps(obj.get("spec")))
                run = next((m["run"] for n in names if (m := configmap.match(n))), None)
                if run:
                    sides[side].setdefault(run, {}).update(rayjob=key.name, claim=checkpoints.claim(obj))
    out = []
    for run in sorted(set(sides[0]) | set(sides[1])):
        old, new = sides[0].get(run), sides[1].get(run)
        status = "added" if old is None else "removed" if new is None else "changed"
        config, files = _config_changes(run, (old or {}).get("configmap"), (new or {}).get("configmap"), spec)
        out.append(RunChange(run, status, (old or {}).get("rayjob"), (new or {}).get("rayjob"), config, files,
                             _resize(old, new), _restart(old, new)))
    return out


def _restart(old: dict | None, new: dict | None) -> str | None:
    """What a run's new RayJob starts from (rlgen.run.checkpoints): step 0 in a folder of its
    own, on a new volume too when the checkpoints claim changed; or the --resume-from source."""
    if not new or not new.get("rayjob") or (old and old.get("rayjob") == new.get("rayjob")):
        return None
    run_yaml = _load(((new.get("configmap") or {}).get("data") or {}).get(Spec.run_config_key))
    trainer = run_yaml.get("trainer")
    source = trainer.get(checkpoints.SOURCE_KEY.rpartition(".")[2]) if isinstance(trainer, dict) else None
    if source:
        return f"continues from {source} (--resume-from)"
    if not old:
        return None
    reasons = ["new RayJob"] + (["new volumes"] if old.get("claim") != new.get("claim") else [])
    return ", ".join(reasons)


def kept(obj: dict | None) -> bool:
    """An object its sync engine never prunes (the OSS volumes and their claims): removed from
    the repository, it stays in the cluster."""
    notes = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    return (notes.get("kustomize.toolkit.fluxcd.io/prune") == "disabled"
            or "Prune=false" in str(notes.get("argocd.argoproj.io/sync-options", "")))


def _resize(old: dict | None, new: dict | None) -> tuple[Size, Size] | None:
    maps = [(side or {}).get("configmap") for side in (old, new)]
    if None in maps:
        return None
    before, after = (batch_rules.size(effective_config(m.get("data") or {})) for m in maps)
    return (before, after) if before != after else None


def _config_changes(run: str, old: dict | None, new: dict | None, spec: Spec) -> tuple[list, list[str]]:
    if new is None:
        return [], []
    new_data = new.get("data") or {}
    if old is None:
        own = run_changes(spec, run, _load(new_data.get(spec.run_config_key)))
        return [(k, UNSET, v) for k, v in own.items()], []
    old_data = old.get("data") or {}
    before, after = _effective(old_data, spec), _effective(new_data, spec)
    changed = [(k, before.get(k, UNSET), after.get(k, UNSET))
               for k in sorted(set(before) | set(after)) if before.get(k, UNSET) != after.get(k, UNSET)]
    trainer_files = (spec.run_config_key, spec.trainer_config_key)
    files = sorted(k for k in set(old_data) | set(new_data)
                   if k not in trainer_files and old_data.get(k) != new_data.get(k))
    return changed, files


def _effective(data: dict, spec: Spec) -> dict[str, Any]:
    return flatten({k: v for k, v in effective_config(data).items() if k not in ("hydra", "defaults")})


def _load(text: str | None) -> dict:
    try:
        doc = yamlio.parse_value(text or "")
    except ValueError as exc:
        raise RlgenError(f"a run's {Spec.run_config_key} is not valid YAML: {exc}") from None
    return doc if isinstance(doc, dict) else {}
