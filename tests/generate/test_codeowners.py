"""``.github/CODEOWNERS`` from the two teams a user answers: the runs (``runs/`` and each
environment's runs folder) are the researchers' team's, everything else the platform team's;
no teams, no file; one team alone, or a handle that is no GitHub team, refused at the door."""
from __future__ import annotations

import json
import shutil

import pytest
from support.repos import ok, one_error_line, required_for, rlgen_in, run_rlgen

TEAMS = ("--set", "rlgen.researchers_team=@rl-org/researchers", "--set", "rlgen.platform_team=@rl-org/platform")


def test_the_runs_are_the_researchers_and_the_rest_the_platform_teams(generate, tmp_path):
    repo = shutil.copytree(generate(*TEAMS), tmp_path / "repo", symlinks=True)
    lines = [ln for ln in (repo / ".github/CODEOWNERS").read_text().splitlines() if ln and not ln.startswith("#")]
    # GitHub: the last matching pattern owns a file, so the runs' lines come after the catch-all.
    assert lines == ["* @rl-org/platform", "/runs/ @rl-org/researchers", "/overlays/production/runs/ @rl-org/researchers"]
    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch"))
    assert (repo / ".github/CODEOWNERS").read_text().rstrip().endswith("/overlays/staging/runs/ @rl-org/researchers")


def test_no_teams_no_codeowners(generate):
    assert not (generate() / ".github/CODEOWNERS").exists()


@pytest.mark.parametrize("args,says", [
    (TEAMS[:2], "rlgen.researchers_team and rlgen.platform_team go together"),
    (TEAMS[2:], "rlgen.researchers_team and rlgen.platform_team go together"),
    (("--set", "rlgen.platform_team=rl-org/platform", *TEAMS[:2]), "rlgen.platform_team: \"rl-org/platform\" is not a GitHub team"),
    (("--set", "rlgen.researchers_team=@rl-org/a b", *TEAMS[2:]), "rlgen.researchers_team: \"@rl-org/a b\" is not a GitHub team"),
], ids=["researchers-alone", "platform-alone", "no-at", "space"])
def test_teams_are_checked_at_the_door(args, says, tmp_path):
    target = tmp_path / "repo"
    line = one_error_line(run_rlgen("new", str(target), *required_for(), *args, "--no-input"))
    assert says in line and not target.exists()


def test_rlgen_plugins_lists_both_teams_as_optional_answers():
    listing = json.loads(ok(run_rlgen("plugins", "-o", "json")))
    teams = {o["name"]: o for o in listing["core_options"] if o["name"].endswith("_team")}
    assert set(teams) == {"researchers_team", "platform_team"}
    assert all(o["default"] == "" and not o["required"] and "@org/team" in o["help"] for o in teams.values())
