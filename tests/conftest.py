"""Fixtures shared by every test folder; helpers live in ``support/``."""
from __future__ import annotations

import os
import shutil

import pytest
from support.repos import required_for, run_rlgen

# Commits the tests make, and rlgen makes for them, need an author: a tester's machine may have
# no git identity at all, and no test may fail for want of one. git takes these variables as
# the user's identity, as rlgen does; a test of a user without one removes them.
os.environ.update({"GIT_AUTHOR_NAME": "rlgen tests", "GIT_AUTHOR_EMAIL": "tests@rlgen.invalid",
                   "GIT_COMMITTER_NAME": "rlgen tests", "GIT_COMMITTER_EMAIL": "tests@rlgen.invalid"})


@pytest.fixture(scope="session")
def generate(tmp_path_factory):
    """``generate(*args)`` runs ``rlgen new <fresh dir> *args --no-input`` and returns the path."""
    cache: dict[tuple, object] = {}

    def _generate(*args: str):
        if args not in cache:
            target = tmp_path_factory.mktemp("repo") / "repo"
            result = run_rlgen("new", str(target), *required_for(*args), *args, "--no-input")
            assert result.returncode == 0, result.stderr
            cache[args] = target
        return cache[args]

    return _generate


@pytest.fixture(scope="session")
def schemas():
    """rlgen's schema validator reading the catalog rlgen ships (no network needed)."""
    from rlgen.validate.schema import SchemaValidator, schema_dir_locations
    from support.repos import schema_dir

    return SchemaValidator(schema_dir_locations(schema_dir())).validate


@pytest.fixture
def repo(generate, tmp_path):
    """A fresh copy (with its .git) of the default generated repository, for a test to change."""
    return shutil.copytree(generate(), tmp_path / "repo", symlinks=True)


def pytest_terminal_summary(terminalreporter):
    """How many objects tests/validate/test_kubeconform_parity.py had both schema engines check
    (summed here: under xdist each worker records its own)."""
    totals = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if name.startswith("kubeconform_parity_"):
                    totals[name] = totals.get(name, 0) + value
    if totals:
        terminalreporter.write_line(
            f"kubeconform parity: {sum(totals.values())} objects checked by kubeconform and rlgen's validator "
            f"({totals.get('kubeconform_parity_combinations', 0)} of the plugin combinations, "
            f"{totals.get('kubeconform_parity_planted', 0)} beside planted faults)")
