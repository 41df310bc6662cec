"""Two rules of the source, read from it: an import inside a function lives in ``commands/``
(each command's one lazy import of its library) or says beside it why it is lazy (a measured
number, a cycle, an optional extra); and no function is over 40 lines without a ``# long:``
reason on its ``def`` line or the line above."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: rlgen and its built-in plugins; the templates are files of the generated repository, not rlgen's code.
SOURCES = [p for base in (ROOT / "generator" / "rlgen", ROOT / "plugins") for p in sorted(base.rglob("*.py"))
           if "templates" not in p.relative_to(base).parts]
MAX_LINES = 40
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _inner_imports(tree: ast.AST):
    def visit(node, inside):
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            yield from visit(child, inside or isinstance(child, FUNCTIONS))
    yield from visit(tree, False)


def _explained(lines: list[str], node: ast.stmt) -> bool:
    """A comment on the import's line, or above it past blank lines and the imports of its group."""
    if "#" in lines[node.lineno - 1]:
        return True
    i = node.lineno - 2
    while i >= 0 and (not lines[i].strip() or lines[i].strip().startswith(("import ", "from "))):
        i -= 1
    return i >= 0 and lines[i].strip().startswith("#")


def test_imports_inside_functions_only_in_commands_or_explained():
    unexplained = []
    for path in SOURCES:
        if path.parent.name == "commands":
            continue
        lines = path.read_text().splitlines()
        for node in _inner_imports(ast.parse("\n".join(lines), str(path))):
            if not _explained(lines, node):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unexplained == [], "import at the top, or say why not beside it (with a measured number for speed):\n" \
        + "\n".join(unexplained)


def test_no_function_over_40_lines_without_a_reason():
    long = []
    for path in SOURCES:
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines), str(path))):
            if isinstance(node, FUNCTIONS) and node.end_lineno - node.lineno + 1 > MAX_LINES:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                around = lines[node.lineno - 1] + lines[first - 2] if first > 1 else lines[node.lineno - 1]
                if "# long:" not in around:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name} "
                                f"({node.end_lineno - node.lineno + 1} lines)")
    assert long == [], f"split these, or write a '# long:' reason above the def:\n" + "\n".join(long)
