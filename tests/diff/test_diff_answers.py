"""``rlgen diff`` asks git for the base before rlgen's answers are checked (they are checked while
kustomize builds): the branch it forks from is still the one the answers name, and a defect of
the answers is still what it says first."""
from __future__ import annotations

import json

from rlgen.cli import main
from rlgen.repo import answers
from support.repos import git, ok, one_error_line, rlgen_in


def answer(repo, key: str, value: str) -> None:
    path = repo / "rlgen.yaml"
    path.write_text(path.read_text().replace("\n  rlgen:\n", f"\n  rlgen:\n    {key}: {value}\n", 1))


def test_the_base_forks_from_the_branch_the_answers_name(repo):
    answer(repo, "git_branch", "trunk")
    git(repo, "commit", "-qam", "sync trunk")
    git(repo, "branch", "-q", "-m", "trunk")
    git(repo, "switch", "-q", "-c", "epochs")
    ok(rlgen_in(repo, "run", "set", "baseline", "trainer.total_epochs=3"))
    out = json.loads(ok(rlgen_in(repo, "diff", "-o", "json")))
    assert out["base"].startswith("trunk@") and [r["run"] for r in out["runs"]] == ["baseline"], out


def test_a_defect_of_the_answers_is_said_before_a_bad_revision(repo):
    answer(repo, "namespace", "Not_A_Label")
    git(repo, "commit", "-qam", "a hand edit")
    for args in (("--base", "no-such-ref"), ("--head", "no-such-ref"), ()):
        line = one_error_line(rlgen_in(repo, "diff", "-o", "table", *args))
        assert "rlgen.yaml" in line and "rlgen.namespace" in line and "no-such-ref" not in line, (args, line)
    git(repo, "branch", "-q", "-m", "elsewhere")  # no base branch either
    line = one_error_line(rlgen_in(repo, "diff", "-o", "table"))
    assert "rlgen.namespace" in line and "no base revision" not in line, line


def test_a_plain_reading_that_names_another_branch_is_corrected(repo, monkeypatch, capsys):
    git(repo, "switch", "-q", "-c", "epochs")
    ok(rlgen_in(repo, "run", "set", "baseline", "trainer.total_epochs=3"))
    expected = ok(rlgen_in(repo, "diff", "-o", "json"))
    monkeypatch.chdir(repo)
    monkeypatch.setattr(answers, "branch_hint", lambda root: "epochs")
    main(["diff", "-o", "json"])
    assert capsys.readouterr().out == expected
