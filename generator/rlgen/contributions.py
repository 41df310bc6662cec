"""The values that pass through the hooks of :mod:`rlgen.hookspecs`, both ways.

:class:`Context` is what a contribution hook receives; the frozen dataclasses are what it
returns. Kubernetes objects are plain dicts (key order is kept when they are written).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Mapping

# What a plugin says of itself, defined apart (rlgen's own answers are checked against it
# without the rest of this module) and part of what hooks return like the rest.
from rlgen.plugin_info import SLOTS, Option, PluginInfo  # noqa: F401
from rlgen.naming import IMAGE_HASH_LENGTH, context_hash

if TYPE_CHECKING:
    from rlgen.spec import Spec

class Layer(str, Enum):
    """Where a plugin's object lands. ``infrastructure`` syncs first (controllers and add-on
    settings), then ``platform`` (long-lived shared objects), then ``training`` (every run)."""

    INFRASTRUCTURE = "infrastructure"
    PLATFORM = "platform"
    TRAINING = "training"


class Context:
    """What every contribution hook receives.

    - ``spec``: the shared names and paths (:class:`rlgen.spec.Spec`), never typed twice;
    - ``plugins``: the selected plugin name of each slot, e.g. ``ctx.plugins["rollout"]``;
    - ``options(name)``: the converted and checked options of plugin ``name``.
    """

    def __init__(self, spec: Spec, plugins: Mapping[str, str], values: Mapping[str, Mapping[str, Any]]):
        self.spec = spec
        self.plugins = dict(plugins)
        self._values = {name: dict(v) for name, v in values.items()}

    def options(self, plugin: str) -> dict[str, Any]:
        return dict(self._values.get(plugin, {}))


@dataclass(frozen=True)
class Problem:
    """A reason the selected plugins cannot work together; ``plugins`` names the culprits."""

    message: str
    plugins: tuple[str, ...]


@dataclass(frozen=True)
class Resource:
    """A Kubernetes object that a plugin adds to its kustomize component of ``layer``.

    ``comment`` is written above the object in its YAML file.
    """

    layer: Layer | str
    filename: str
    obj: dict
    comment: str = ""


@dataclass(frozen=True)
class Patch:
    """A kustomize patch (strategic merge when ``patch`` is a dict, JSON 6902 when a list)
    applied by the plugin's component of ``layer`` to objects matching ``target``.

    ``name`` names the patch file (``<name>.yaml``): say what it patches, e.g. ``rayjob-oss-volumes``.
    """

    layer: Layer | str
    target: dict
    patch: dict | list
    name: str
    comment: str = ""


@dataclass(frozen=True)
class Rendered:
    """One object the repository renders (a plain dict), with the kustomization root or file it
    comes from. On a RayJob, ``trainer_config`` is the verl config its pods mount (the training
    base with its run's ``run.yaml`` merged, nested dicts); ``None`` on any other object."""

    source: str
    obj: dict
    trainer_config: dict | None = field(default=None, compare=False)

    @property
    def kind(self) -> str | None:
        return self.obj.get("kind")

    @property
    def label(self) -> str:
        """``Kind/namespace/name``, how findings name the object."""
        meta = self.obj.get("metadata", {})
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.obj.get('kind')}/{ns}{meta.get('name')}"


@dataclass(frozen=True)
class Finding:
    """A problem ``rlgen validate`` reports: the ``source`` root or file, the object's label,
    what is wrong and, when there is one, the command or edit that fixes it."""

    source: str
    obj: str
    message: str
    fix: str = ""


@dataclass(frozen=True)
class Document:
    """One object of a plain manifest file (a sync entry point), with a comment above it."""

    obj: dict
    comment: str = ""


@dataclass(frozen=True)
class ConfigFile:
    """A file that becomes a key of the trainer ConfigMap, mounted at ``spec.configs_mount``."""

    key: str
    content: str


@dataclass(frozen=True)
class UpstreamSource:
    """A kustomize root in an upstream Git repository, pinned to a tag.

    The sync plugin turns it into whatever its engine uses (a Flux GitRepository and
    Kustomization, an Argo CD Application), so every root of the generated repository
    still builds offline. ``images`` entries are kustomize ``images:`` items; ``patches``
    entries are ``{"target": {...}, "patch": [JSON 6902 ops]}`` (or a strategic-merge patch as
    a string, e.g. a ``$patch: delete``) applied on top of the root
    (Flux ``spec.patches``, Argo CD ``kustomize.patches``); ``depends_on`` names upstream
    sources of the same stage that must be ready first (e.g. the one creating its Namespace).
    """

    name: str
    url: str
    tag: str
    path: str
    namespace: str
    images: tuple[dict, ...] = ()
    comment: str = ""
    patches: tuple[dict, ...] = ()
    depends_on: tuple[str, ...] = ()
    #: The root creates ``namespace`` (upstream's own Namespace object); other stages using it wait.
    creates_namespace: bool = False

    def annotations(self) -> dict[str, str]:
        """What ``rlgen validate`` needs to order the stage without fetching the root: the
        sync plugins put these on the object that applies it."""
        out = {NAMESPACE_ANNOTATION: self.namespace}
        if self.creates_namespace:
            out[CREATES_ANNOTATION] = "true"
        return out


#: Annotations of a sync stage applying an upstream root: its namespace, and whether it creates it.
NAMESPACE_ANNOTATION = "rlgen.io/namespace"
CREATES_ANNOTATION = "rlgen.io/creates-namespace"


@dataclass(frozen=True)
class TrainingImage:
    """The rollout plugin's training image: verl's dependency image for its engine (``base``,
    which ships without verl) and the readable start of the tag the repository's build of it is
    pushed under; a hash of ``images/training`` completes the tag."""

    base: str
    tag: str


@dataclass(frozen=True)
class ImageBuild:
    """An image the repository builds: its build context (a folder of the repository), where it
    is pushed and its tag, which ends in a hash of the folder's files (:meth:`of`), so a changed
    folder is a new tag and the cluster pulls the new image. ``images/build.sh`` builds it."""

    context: str
    repository: str
    tag: str

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}"

    @classmethod
    def of(cls, files: Mapping[str, bytes], context: str, repository: str, prefix: str) -> ImageBuild:
        """``context``'s image in ``files`` (``{path: bytes}``), tagged ``<prefix>-<hash>``
        (without a prefix: the hash)."""
        digest = context_hash(files, context)[:IMAGE_HASH_LENGTH]
        return cls(context, repository, f"{prefix}-{digest}" if prefix else digest)


@dataclass(frozen=True)
class SecretRef:
    """A Secret the repository's objects read: its name, namespace, keys and what reads it.

    Plugins declare them (``rlgen_secrets``); the secrets plugin delivers every one of them,
    whatever its mode (created by hand, SOPS-encrypted in Git, synced from a secret store).
    """

    name: str
    namespace: str
    keys: tuple[str, ...]
    purpose: str
    used_by: str
    #: The consumers start without it (e.g. a token only private models need).
    optional: bool = False
    #: Labels the Secret must carry, as ``(key, value)`` pairs: a consumer that finds its Secrets
    #: by label (Argo CD reads only Secrets labelled ``app.kubernetes.io/part-of: argocd``).
    labels: tuple[tuple[str, str], ...] = ()
    #: The namespace is the sync engine's own (``flux-system``, ``argocd``): it exists before any
    #: stage syncs, and the secrets stage must not create it, or the stage would own a namespace
    #: the engine's root applies into and would have to sync before that root.
    engine_namespace: bool = False

    def env(self, key: str) -> str:
        """The shell variable a value of ``key`` is read from in the README's commands."""
        return (self.name if len(self.keys) == 1 else f"{self.name}_{key}").upper().replace("-", "_")


#: The folder of the ``secrets`` stage, synced before every other stage when a secrets plugin
#: puts a kustomization there (encrypted Secrets, ExternalSecrets).
SECRETS_FOLDER = "secrets"

#: The folder of the ``optional-secrets`` stage, applied after the ``secrets`` stage and waited
#: for by nothing: Secrets whose consumers start without them (an ExternalSecret that cannot
#: sync, the value not stored yet, must not hold back the stages that read the others).
OPTIONAL_SECRETS_FOLDER = "optional-secrets"

#: The folder of the sync engine's objects that apply the upstream roots (a Flux GitRepository
#: and Kustomizations, Argo CD Applications): one kustomization, the same for every cluster,
#: which each ``clusters/<cluster>/`` points at.
UPSTREAM_FOLDER = "infrastructure/upstream"


@dataclass(frozen=True)
class SecretDelivery:
    """How the secrets plugin delivers the declared Secrets.

    ``files`` are written into the repository (``{path: text}``, or ``{path: [Document, ...]}``
    for YAML objects); when they hold
    ``secrets/kustomization.yaml`` that folder is the ``secrets`` stage, applied before every
    other stage; ``optional-secrets/kustomization.yaml`` makes that folder a stage applied after
    it that no stage waits for (the Secrets declared ``optional``). ``decryption`` names the
    Secret, in the sync engine's namespace, holding the
    SOPS key that decrypts that stage ("" when nothing is encrypted). ``readme`` is the README's
    section on Secrets. ``set_hints`` is what ``rlgen secret set`` prints for a Secret whose values
    live outside Git, by ``namespace/name``, ``{key}`` standing for the key being set; with
    ``decryption`` set, rlgen encrypts the value into ``secrets/<namespace>/<name>/<key>`` instead.
    """

    readme: str
    files: Mapping[str, str | list[Document]] = field(default_factory=dict)
    decryption: str = ""
    set_hints: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DatasetFormat:
    """How a dataset plugin turns source rows into the rows verl reads.

    ``map_row(row, split, index)`` returns the verl row, or raises ``ValueError`` to drop
    the row (the reason is counted in the manifest). ``default_model`` is the Hugging Face
    model trained when the user names none; ``vision`` says the rows carry images.

    ``agent_name`` is the verl agent loop every row names in its ``agent_name`` column
    (``tool_agent`` calls the configured tools); ``None`` means the rows carry no such column
    and verl runs ``actor_rollout_ref.rollout.agent.default_agent_loop`` (``single_turn_agent``
    unless set), which never calls a tool. ``rlgen validate`` compares it with the tool setup.
    """

    name: str
    source: str
    columns: tuple[str, ...]
    map_row: Callable[[dict, str, int], dict]
    default_model: str
    vision: bool = False
    splits: tuple[str, ...] = ("train", "test")
    #: The Hugging Face config of ``source`` (e.g. GSM8K's "main"); used only with that source
    #: and its ModelScope copy.
    config: str | None = None
    agent_name: str | None = None
    #: The same data set on ModelScope (``owner/name``), which the dataset Job loads in
    #: mainland-China regions (``rlgen.region``); empty: none known, the user names one there.
    modelscope_source: str = ""


def row_text(row: Mapping[str, Any], column: str, numbers: bool = False) -> str:
    """The text of ``row[column]`` for a dataset plugin's ``map_row``: a null, a list,
    a mapping or blank text raise ``ValueError``, so the row is dropped and counted, never
    trained on as "None" or "['a', 'b']". ``numbers``: a number stands for its text (an answer 12)."""
    value = row.get(column)
    if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        what = "null" if value is None else "not text but " + (
            "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict)
            else "true or false" if isinstance(value, bool) else "a number" if isinstance(value, (int, float))
            else f"a {type(value).__name__}")
        raise ValueError(f"{column} is {what}")
    if not value.strip():
        raise ValueError(f"{column} is empty")
    return value


@dataclass(frozen=True)
class Stage:
    """One step of the sync order (infrastructure -> platform -> runs) for the sync plugin.

    ``path`` is the repository folder the stage applies ("" when only ``upstream`` sources
    make it up); ``depends_on`` names earlier stages; ``wait`` False: the engine applies the
    stage without waiting for its objects to be ready, and its readiness holds back nothing
    (the runs: a RayJob is never Ready; the optional Secrets).
    """

    name: str
    path: str
    depends_on: tuple[str, ...] = ()
    upstream: tuple[UpstreamSource, ...] = ()
    #: The Secret (in the sync engine's namespace) with the SOPS key this stage is decrypted with.
    decryption: str = ""
    wait: bool = True
    #: This cluster's own patches of the stage's objects, entries as :class:`UpstreamSource`'s
    #: ``patches``: the answers only it reads (``Option.per_cluster``, ``rlgen cluster add``).
    patches: tuple[dict, ...] = ()
