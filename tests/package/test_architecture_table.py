"""docs/architecture.md's table names every package and top-level module of rlgen."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "generator" / "rlgen"


def test_the_architecture_table_lists_every_package_and_module():
    text = ROOT.joinpath("docs", "architecture.md").read_text()
    table = text[text.index("| floor | where | what |"):].split("\n\n", 1)[0]
    names = [f"rlgen/{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()]
    names += [f"rlgen/{p.name}" for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert [n for n in sorted(names) if f"`{n}`" not in table] == []
