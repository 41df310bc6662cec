"""A teammate whose machine lacks a plugin the repository records is told what to install."""
from __future__ import annotations

from rlgen import __version__
from support.repos import one_error_line, rlgen_in


def test_a_recorded_plugin_that_is_not_installed_names_its_package(repo):
    answers = repo / "rlgen.yaml"
    text = answers.read_text().replace("tracking: no-tracking", "tracking: wandb")
    text = text.replace("  rlgen:\n", "  rlgen:\n    plugin_packages:\n    - rlgen-wandb==0.1.0\n", 1)
    answers.write_text(text.replace(f"  no-tracking: {__version__}", "  wandb: 0.1.0"))
    line = one_error_line(rlgen_in(repo, "validate", "--offline"))
    assert line == (f"rlgen: error: {answers}: plugin 'wandb' (tracking slot, version 0.1.0) is not installed: "
                    "pip install rlgen-wandb==0.1.0")
