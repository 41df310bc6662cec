"""Input rlgen once accepted although it was wrong, each now refused (exit 2, one line, nothing
written) or, for data rows, dropped and counted: names ending in a newline, wrong types in a
hand-edited rlgen.yaml and in a verl list, dataset rows verl cannot train on, commits in the
middle of a git operation, and a Secret value over Kubernetes' limit."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.hostile import record, repository_state
from support.repos import REQUIRED, commit_all, git, run_rlgen

RLGEN = "rlgen.yaml"
#: The shape of an age public key (age1 and 58 bech32 characters); nothing is encrypted here.
RECIPIENT = "age1" + "q" * 58


def _rlgen(cwd: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(cwd.parent / "tmp"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    (cwd.parent / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "rlgen", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, input=input, timeout=300)


def _edit(old: str, new: str) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        text = (repo / RLGEN).read_text()
        assert old in text, old
        (repo / RLGEN).write_text(text.replace(old, new, 1))
        commit_all(repo, "hand edit")
    return change


def _edit_line(start: str, new: str) -> Callable[[Path], None]:
    """Replace the line that starts with ``start`` (a version, whatever rlgen's own is) by ``new``."""
    def change(repo: Path) -> None:
        lines = (repo / RLGEN).read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith(start))
        lines[at] = new + "\n"
        (repo / RLGEN).write_text("".join(lines))
        commit_all(repo, "hand edit")
    return change


def _bisect(repo: Path) -> None:
    git(repo, "bisect", "start")  # the branch stays checked out until good and bad are given


def _sparse(repo: Path) -> None:
    # A rollback would restore files the checkout leaves off disk; a read would find them missing.
    git(repo, "sparse-checkout", "set", "--no-cone", "/*", "!/components/")


def _merge_without_changes(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "side")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "side")
    git(repo, "switch", "-q", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "merge", "-q", "--no-ff", "--no-commit", "side")


def _cherry_pick_empty(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "side")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "side")
    git(repo, "switch", "-q", "main")
    # An empty commit stops the cherry-pick and leaves it in progress, with a clean tree.
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "cherry-pick", "side"],
                   cwd=repo, capture_output=True)


def _rebase_stopped(repo: Path) -> None:
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "next")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "rebase", "-i", "HEAD~1"],
                   cwd=repo, capture_output=True, check=True,
                   env={**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i '1i break'"})


REFUSED = [
    # (name, prepare, args, text of the one error line)
    ("run-name-newline", None, ("run", "new", "zz\n"), "zz"),
    ("cluster-name-newline", None, ("cluster", "add", "zz\n", "--env", "staging"), "zz"),
    ("environment-newline", None, ("cluster", "add", "second", "--env", "zz\n"), "zz"),
    ("answers-run-naming-true", _edit("run_naming: 2", "run_naming: true"), ("validate",), "run_naming"),
    ("answers-node-cpu-text", _edit("    node_cpu: 180\n", '    node_cpu: "180"\n'), ("validate",),
     'rlgen.node_cpu: "180" is not an integer'),
    ("answers-secret-mapping", _edit("    - hf-token\n", "    - {a: 1}\n"), ("validate",), "external.secrets"),
    ("answers-version-list", _edit_line("  gsm8k: ", "  gsm8k: [1]"), ("validate",), "plugin_versions"),
    ("answers-rlgen-version-list", _edit_line("rlgen_version: ", "rlgen_version: [1]"), ("validate",),
     "rlgen_version"),
    ("verl-list-element-run-new", None, ("run", "new", "second", "--set", "trainer.logger=[console, 5]"),
     "trainer.logger: expects a list of strings"),
    ("verl-list-element-sweep", None, ("run", "sweep", "lg", "--grid", "trainer.logger=[[console], [console, 5]]"),
     "trainer.logger: expects a list of strings"),
    ("verl-list-element-numbers", None, ("run", "new", "second", "--set", "actor_rollout_ref.actor.optim.betas=[0.9, b]"),
     "expects a list of numbers"),
    ("bisect-run-new", _bisect, ("run", "new", "second"), "a git bisect is in progress"),
    ("bisect-update", _bisect, ("update", "--set", "ak-storage.bucket=other-bucket"), "a git bisect is in progress"),
    ("merge-run-rm", _merge_without_changes, ("run", "rm", "baseline"), "a git merge is in progress"),
    ("cherry-pick-run-set", _cherry_pick_empty, ("run", "set", "baseline", "trainer.total_epochs=3"),
     "a git cherry-pick is in progress"),
    ("rebase-run-new", _rebase_stopped, ("run", "new", "second"), "a git rebase is in progress"),
    ("sparse-run-set", _sparse, ("run", "set", "baseline", "trainer.total_epochs=3"), "git sparse-checkout disable"),
    ("sparse-update", _sparse, ("update", "--set", "ak-storage.bucket=other-bucket"), "git sparse-checkout disable"),
]


@pytest.mark.parametrize("name,prepare,args,says", REFUSED, ids=[r[0] for r in REFUSED])
def test_wrong_input_is_refused_before_anything_is_written(name, prepare, args, says, generate, tmp_path,
                                                            record_property):
    repo = Path(shutil.copytree(generate(), tmp_path / "case" / "repo", symlinks=True))
    if prepare:
        prepare(repo)
    before = repository_state(repo)
    files = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    result = _rlgen(repo, *args)
    record(record_property, expected=2, result=result, changed=repository_state(repo) != before)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stdout[-1500:] + result.stderr
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert repository_state(repo) == before
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts} == files


def test_a_secret_value_over_kubernetes_limit_is_refused_before_encrypting(tmp_path, record_property):
    target = tmp_path / "case" / "repo"
    made = run_rlgen("new", str(target), *REQUIRED, "--plugin", "sops", "--set", f"sops.age_recipients={RECIPIENT}",
                     "--no-input")
    assert made.returncode == 0, made.stderr
    before = repository_state(target)
    # No sops on PATH: the refusal must come before the value would be encrypted.
    result = _rlgen(target, "secret", "set", "hf-token", "token", input="x" * (1024 * 1024 + 1) + "\n")
    record(record_property, expected=2, result=result)
    assert result.returncode == 2, result.stderr
    assert "over 1048576 bytes (1 MiB)" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert repository_state(target) == before


def _parquet(folder: Path, split: str, questions: list, answers: list) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"question": questions, "answer": answers}), folder / f"{split}.parquet")


@pytest.mark.parametrize("source", ["parquet", "jsonl"])
def test_rows_verl_cannot_train_on_are_dropped_and_counted(source, tmp_path, record_property):
    src = tmp_path / "src"
    good = [("1+1?", "#### 2"), ("2+2?", "#### 4")]
    if source == "parquet":
        # A typed column: nulls, blank text and "####" lines with no number.
        _parquet(src, "train", [q for q, _ in good] + [None, "  ", "3+3?", "4+4?"],
                 [a for _, a in good] + ["#### 1", "#### 1", "#### .", None])
        expected = {"question is null": 1, "question is empty": 1, "answer's '####' line holds no number": 1,
                    "answer is null": 1}
    else:
        # Rows that mix types in one column: datasets hands them over as JSON text.
        src.mkdir()
        rows = [{"question": q, "answer": a} for q, a in good] + [
            {"question": None, "answer": "#### 1"}, {"question": ["a", "b"], "answer": "#### 1"},
            {"question": "5+5?", "answer": 10}, {"question": "6+6?", "answer": "#### ,"}]
        (src / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        expected = {"question is null": 1, "question is not text but a list": 1, "answer is not text but a number": 1,
                    "answer's '####' line holds no number": 1}
        (src / "test.jsonl").write_text(json.dumps({"question": "2+2?", "answer": "#### 4"}) + "\n")
    if source == "parquet":
        _parquet(src, "test", ["2+2?"], ["#### 4"])
    result = _rlgen(tmp_path, "data", "prepare", "--dataset", "gsm8k", "--source", str(src), "--out", "out",
                    "-o", "json")
    record(record_property, expected=0, result=result)
    assert result.returncode == 0, result.stderr
    train = json.loads(result.stdout)["splits"][0]
    assert (train["rows_in"], train["rows_out"], train["dropped"]) == (6, 2, expected)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["dropped"] == expected
    rows = pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()
    assert [r["extra_info"]["question"] for r in rows] == ["1+1?", "2+2?"]
    assert [r["reward_model"]["ground_truth"] for r in rows] == ["2", "4"]
