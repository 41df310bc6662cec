"""The plugin contract: documented hooks, loud failures for misspelled hooks, light CLI start."""
from __future__ import annotations

import inspect
import subprocess
import sys
import types

import pytest
from rlgen import hookspecs


def hook_functions():
    return [f for name, f in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("rlgen_")]


@pytest.mark.parametrize("hook", hook_functions(), ids=lambda f: f.__name__)
def test_every_hook_is_documented_with_an_example(hook):
    doc = inspect.getdoc(hook) or ""
    assert len(doc.splitlines()[0]) > 20, f"{hook.__name__} needs a one-line summary"
    assert "Example::" in doc and "@hookimpl" in doc, f"{hook.__name__} needs an example"


def test_a_misspelled_hook_fails_loudly():
    from rlgen.errors import RlgenError
    from rlgen.plugin_host.discovery import Installed, discover
    from rlgen.plugin_host.selection import Selection, choose

    installed = discover()
    broken = types.ModuleType("broken_plugin")

    @hookspecs.hookimpl
    def rlgen_resorces(ctx):  # misspelled on purpose
        return []

    broken.rlgen_resorces = rlgen_resorces
    info = installed["vllm"].info
    installed = {**installed, "vllm": Installed(broken, info, "0")}
    selection = Selection(choose(installed, []), installed)
    with pytest.raises(RlgenError, match="rlgen_resorces"):
        selection.hooks()


def test_built_in_plugins_register_through_entry_points():
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="rlgen")}
    assert {"opensource-sandbox", "ak-storage", "gsm8k", "vllm", "flux"} <= names


def test_plugins_import_only_the_plugin_api():
    """Built-in plugins and the third-party example import rlgen's public plugin module only;
    what two built-in plugins share is in private modules (``_*.py``)."""
    import ast
    import pathlib

    root = pathlib.Path(hookspecs.__file__).resolve().parents[2]
    plugins = root / "plugins" / "rlgen_plugins"
    files = [*plugins.glob("*.py"), *(pathlib.Path(__file__).parent / "thirdparty_plugin").rglob("*.py")]
    assert len(files) > 10
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for module in names:
                if module.split(".")[0] == "rlgen":
                    assert module == "rlgen.plugin_api", f"{path.name} imports {module}"
                if module.startswith("rlgen_plugins."):
                    assert module.split(".")[1].startswith("_"), f"{path.name} imports a plugin: {module}"


def test_plugin_api_exports_what_it_names():
    from rlgen import plugin_api

    assert sorted(plugin_api.__all__) == sorted(n for n in vars(plugin_api) if not n.startswith("_")
                                                and n != "annotations")


HEAVY = ("datasets", "alibabacloud_oss_v2", "cookiecutter", "jinja2", "pyarrow", "rich", "jsonschema", "hydra",
         "huggingface_hub", "modelscope", "kubernetes")


def test_cli_help_imports_nothing_heavy():
    code = ("import sys; from rlgen.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
