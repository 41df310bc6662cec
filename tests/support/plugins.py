"""The example third-party plugin (tests/contract/thirdparty_plugin), installed for a test run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

from rlgen.plugin_host.discovery import Installed

SOURCE = Path(__file__).resolve().parents[1] / "contract" / "thirdparty_plugin"
#: Where a repository's CI and data image install the example distribution from: installed from
#: a local folder, it has no source an image build could reach of its own.
PLUGIN_PACKAGES = ("--set", 'rlgen.plugin_packages=["rlgen-example-math==0.3.1"]')


def install_example_plugin(work: Path) -> dict[str, str]:
    """The environment of an rlgen that has the example distribution installed, in a folder of
    its own on PYTHONPATH (never the shared virtualenv, so concurrent tests do not see it)."""
    shutil.copytree(SOURCE, work / "src", ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = work / "site"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                             str(work / "src")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    path = [str(site)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def with_hooks(installed: dict, plugin: str, **hooks) -> dict:
    """``installed`` where ``plugin``'s module also has (or now has) ``hooks``, name -> function."""
    original = installed[plugin]
    module = types.ModuleType(f"{plugin}_with_hooks")
    for name in dir(original.module):
        if name.startswith("rlgen_"):
            setattr(module, name, getattr(original.module, name))
    for name, function in hooks.items():
        setattr(module, name, function)
    return {**installed, plugin: Installed(module, original.info, original.version)}
