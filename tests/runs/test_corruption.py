"""Hand edits of every file rlgen reads back, times every repository command: each is refused
with exit 2 and one line naming the file, with no traceback, no commit and no file changed.

The edit is committed first, so the run commands meet the file itself and not their refusal
of uncommitted changes. The commands run in-process (the same ``rlgen.cli.main`` as the
console script) to keep 200 invocations fast."""
from __future__ import annotations

import shutil

import pytest
from rlgen.cli import main
from support.repos import commit_all, git, link

RUN = "runs/baseline/run.yaml"
RUN_K = "runs/baseline/kustomization.yaml"
TRAINER = "base/training/trainer.yaml"
ANSWERS = "rlgen.yaml"
LINK = link("baseline")


def replace(old: str, new: str):
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return edit


def append(extra: str):
    return lambda text: text + extra


def whole(new: str):
    return lambda text: new


NOT_UTF8 = b"\xff\xfe not text \x80"

#: (name, file, edit of its text or bytes to write)
CORRUPTIONS = [
    ("answers-not-utf8", ANSWERS, NOT_UTF8),
    ("answers-not-yaml", ANSWERS, append("options: [unclosed\n")),
    ("answers-duplicate-key", ANSWERS, append("plugins: {}\n")),
    ("answers-plugins-number", ANSWERS, replace("plugins:\n", "plugins: 5\nold_plugins:\n")),
    ("answers-options-list", ANSWERS, replace("options:\n", "options: [a, b]\nold:\n")),
    ("answers-a-list", ANSWERS, whole("- plugins\n- options\n")),
    ("answers-unknown-plugin", ANSWERS, replace("rollout: vllm", "rollout: nope")),
    ("answers-secrets-string", ANSWERS, replace("secrets:\n    - git-webhook-token\n    - hf-token", "secrets: hf-token")),
    ("answers-bad-duration", ANSWERS, replace("options:\n", "options:\n  flux: {interval: \"1m\\nbad: true\"}\n")),
    ("answers-bad-bucket", ANSWERS, replace("options:\n", "options:\n  ak-storage: {bucket: UPPER_bucket}\n")),
    ("run-not-utf8", RUN, NOT_UTF8),
    ("run-not-yaml", RUN, append("trainer: [\n")),
    ("run-duplicate-key", RUN, append("hydra: {}\n")),
    ("run-a-list", RUN, whole("- trainer\n")),
    ("run-a-number", RUN, whole("42\n")),
    ("run-no-defaults", RUN, replace("defaults:\n  - trainer\n  - _self_\n", "")),
    ("run-null-batch", RUN, append("data:\n  train_batch_size: null\n")),
    ("run-string-batch", RUN, append("data:\n  train_batch_size: abc\n")),
    ("run-section-number", RUN, append("actor_rollout_ref: 5\n")),
    ("run-number-key", RUN, append("1: one\n")),
    ("run-hydra-string", RUN, replace("hydra:\n  searchpath:", "hydra: x\nold:\n  searchpath:")),
    ("run-kustomization-not-yaml", RUN_K, append("resources: [\n")),
    ("run-kustomization-prefix", RUN_K, replace("namePrefix: baseline-", "namePrefix: other-")),
    ("run-kustomization-transformers-number", RUN_K, replace("transformers:\n", "transformers: 5\nold:\n")),
    ("run-kustomization-patch-not-json", RUN_K, replace('patch: \'[{"op"', 'patch: \'[{op"')),
    ("run-kustomization-no-base", RUN_K, replace("  - ../../base/training\n", "  - ../../base/platform\n")),
    ("link-resources-number", LINK, replace("resources:\n  - ../../../../runs/baseline", "resources: 5")),
    ("link-unknown-run", LINK, replace("../../../../runs/baseline", "../../../../runs/nope")),
    ("link-two-runs", LINK, replace("  - ../../../../runs/baseline", "  - ../../../../runs/baseline\n  - ../../../../runs/baseline")),
    ("link-not-a-run-folder", LINK, replace("  - ../../../../runs/baseline", "  - baseline")),
    ("link-a-list", LINK, whole("- ../../../../runs/baseline\n")),
    # The sync engine would apply it as it is, beside the runs.
    ("runs-folder-stray-manifest", "overlays/production/runs/extra.yaml",
     b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: extra\n  namespace: kube-system\n"),
    ("trainer-not-yaml", TRAINER, append("data: {\n")),
    ("trainer-duplicate-key", TRAINER, append("trainer: {}\n")),
    ("trainer-string-batch", TRAINER, replace("train_batch_size: ", "train_batch_size: x")),
    ("trainer-a-list", TRAINER, whole("- data\n")),
    ("trainer-section-number", TRAINER, append("critic: 3\n")),
]

COMMANDS = [
    ("validate",),
    # diff reads the hand-edited files that differ between its two revisions: compared with
    # the commit before the edit, the edited file is one of them.
    ("diff", "--base", "HEAD~1"),
    ("run", "list"),
    ("run", "set", "baseline", "trainer.total_epochs=3"),
    ("run", "new", "other"),
    ("run", "rm", "baseline", "--no-branch"),
]


def state(repo) -> tuple:
    files = {p.relative_to(repo).as_posix(): p.read_bytes()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}
    return files, git(repo, "branch", "-a"), git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")


@pytest.mark.parametrize("name,path,edit", CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_a_hand_edit_is_refused_by_every_command(name, path, edit, generate, tmp_path, monkeypatch, capsys):
    repo = shutil.copytree(generate(), tmp_path / "repo", symlinks=True)
    target = repo / path
    if isinstance(edit, bytes):
        target.write_bytes(edit)
    else:
        target.write_text(edit(target.read_text()))
    commit_all(repo, f"hand edit: {name}")
    before = state(repo)
    monkeypatch.chdir(repo)
    capsys.readouterr()
    for args in COMMANDS:
        with pytest.raises(SystemExit) as exit_:
            main(list(args))
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert exit_.value.code == 2, (args, err)
        assert len(lines) == 1 and "Traceback" not in err, (args, err)
        assert path.rsplit("/", 1)[-1] in lines[0], (args, lines[0])
        assert state(repo) == before, args
