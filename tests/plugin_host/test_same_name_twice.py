"""A plugin name two installed distributions register: rlgen refuses it, naming both, instead of
letting one of them silently win."""
from __future__ import annotations

import os
import subprocess
import sys


def _install_rival(site):
    """A distribution ``rival-datasets`` registering its own ``gsm8k``, found on PYTHONPATH."""
    info = site / "rival_datasets-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rival-datasets\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[rlgen]\ngsm8k = rival_gsm8k\n")
    (site / "rival_gsm8k.py").write_text("raise SystemExit('the rival plugin must never be imported')\n")


def _rlgen(site, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "rlgen", *args], capture_output=True, text=True, env=env)


def test_a_name_registered_twice_is_refused_naming_both_distributions(tmp_path):
    _install_rival(tmp_path)
    result = _rlgen(tmp_path, "plugins", "-o", "json")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "rlgen: error: plugin 'gsm8k' is registered by two distributions, 'rival-datasets' and 'rlgen': "
        "uninstall one (pip uninstall NAME)"]
    assert result.stdout == ""


def test_only_the_name_registered_twice_is_refused(tmp_path):
    # A repository that selects another dataset plugin is not stopped by the clash.
    _install_rival(tmp_path)
    script = ("from rlgen.plugin_host.discovery import discover\n"
              "from rlgen.errors import RlgenError\n"
              "plugins = discover()\n"
              "print(plugins['geometry3k'].info.slot, plugins['vllm'].distribution)\n"
              "try:\n    plugins['gsm8k']\nexcept RlgenError as exc:\n    print('refused', exc)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert result.stdout.splitlines()[0] == "dataset rlgen"
    assert result.stdout.splitlines()[1].startswith("refused plugin 'gsm8k' is registered by two distributions")
