"""The package's imports, read from its source: every import runs down a floor or stays in its
own package, no command imports another command nor another command's library, every command
is ``rlgen/commands/<name as typed>.py``, and no two modules import each other in a circle. A
new package gets a floor here, which is where a reviewer sees where it belongs."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "generator" / "rlgen"

#: The library of one command each (update's is also rlgen cluster's, an update of the clusters).
LIBRARIES = {"new", "runs", "diff", "validate", "data", "doctor", "status", "update", "secret", "e2e"}
#: The command whose library is not named as it is typed.
LIBRARY_OF = {"run": "runs", "cluster": "update"}
#: Bottom to top; a package (or top-level module) imports only from its own floor's own
#: package or from a floor below.
FLOORS = (
    # The version setuptools-scm writes from the Git tag when rlgen is built.
    {"_version"},
    # What every layer uses: the version, the error every command reports, secrets masked in output.
    {"__init__", "errors", "redaction"},
    # Kubernetes name rules, the shared names (Spec), output formats, the outside tools, what a
    # plugin says of itself (its slot and options), the garbage collector of short commands.
    # The fields the API server never changes in place.
    {"naming", "spec", "output", "tools", "plugin_info", "collector", "immutable_fields"},
    # Option checks, the values hooks pass, the kustomize sources every repository starts from.
    {"option_checks", "contributions", "sources"},
    # The GPU node pool as ACK builds it, and its answers (checked by option_checks).
    {"pool"},
    # The hook contract; verl's config.
    {"hookspecs", "verl"},
    # Plugins: the public module plugin authors import, and the side of rlgen that hosts them.
    {"plugin_api", "plugin_host"},
    # Facts about a repository every command shares: layout, rlgen.yaml, the workspace, secrets.
    {"repo"},
    # A training run, in one place: its files read and written, its RayJob name, its config.
    # Above the repository's facts it reads, below everything that makes, renders or checks runs.
    {"run"},
    # Renders (kustomize builds), the rules no schema holds, the shipped schemas.
    {"render", "rules", "schemas"},
    # The generator: every file rlgen writes, whole repositories and run folders.
    {"generate"},
    # The read-only Kubernetes client of doctor and status; the OSS client of data and doctor.
    {"kube", "oss"},
    LIBRARIES,
    # One module per command, each importing libraries below it and never another command.
    {"commands"},
    {"cli"},
    {"__main__"},
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(("rlgen",) + (parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts))


def _imports() -> dict[str, set[str]]:
    """Module -> the rlgen modules it imports (an imported name that is a module counts as one)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    out: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "rlgen"}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
                if base.split(".")[0] != "rlgen":
                    continue
                found.add(base)
                found |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules}
        out[name] = {m for m in found if m in modules and m != name}
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _floor(package: str) -> int:
    for i, floor in enumerate(FLOORS):
        if package in floor:
            return i
    raise AssertionError(f"package {package!r} has no floor in FLOORS: give it one")


IMPORTS = _imports()
#: The generator is rlgen new's and rlgen update's (and what they call): a command that edits,
#: checks or reads a repository reaches a run through rlgen.run, never through the generator.
NOT_GENERATING = {"runs", "validate", "diff", "status"}


def test_every_package_has_a_floor():
    for module in IMPORTS:
        _floor(_package(module))


def test_no_import_runs_up_a_floor_or_across_commands():
    wrong = []
    for module, targets in sorted(IMPORTS.items()):
        here = _package(module)
        for target in sorted(targets):
            there = _package(target)
            if there == here:
                if here == "commands" and module != "rlgen.commands" and target != "rlgen.commands":
                    wrong.append(f"{module} -> {target} (another command)")
                continue
            if _floor(there) > _floor(here):
                wrong.append(f"{module} -> {target} (up a floor)")
            elif _floor(there) == _floor(here):
                wrong.append(f"{module} -> {target} (across packages of one floor)")
            elif there in LIBRARIES and there != LIBRARY_OF.get(module.split(".")[-1], module.split(".")[-1]):
                wrong.append(f"{module} -> {target} (another command's library)")
    assert wrong == [], "\n".join(wrong)


def test_only_new_and_update_reach_the_generator():
    wrong = [f"{module} -> {target}" for module, targets in sorted(IMPORTS.items())
             if _package(module) in NOT_GENERATING for target in sorted(targets) if _package(target) == "generate"]
    assert wrong == []


def test_every_command_is_a_module_of_commands_named_as_typed():
    from click.testing import CliRunner

    from rlgen.cli import group

    cli = group()
    typed = set(cli.list_commands(None))
    modules = {p.stem for p in (PACKAGE / "commands").glob("*.py") if p.stem != "__init__"}
    assert typed == modules
    for name in typed:
        assert cli.get_command(None, name).callback.__module__ == f"rlgen.commands.{name}"
    # Nothing else declares a click command.
    elsewhere = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if p.parent.name != "commands" and p.name != "cli.py"
                 and any(d in p.read_text() for d in ("@click.command(", "@click.group("))]
    assert elsewhere == []
    # Each command's help is written once, in its module, and the listing shows its first sentence whole.
    listing = " ".join(CliRunner().invoke(cli, ["--help"]).output.split())
    for name in typed:
        first = cli.get_command(None, name).help.split("\n\n")[0]
        assert f"{name} {' '.join(first.split())}" in listing


def test_no_circle():
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(IMPORTS[module]):
            if state.get(target) == 1:
                pytest.fail("circle: " + " -> ".join(path[path.index(target):] + [target]))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(IMPORTS):
        if module not in state:
            visit(module)
