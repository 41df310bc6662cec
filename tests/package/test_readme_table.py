"""The README's "How it is built" table names every package and top-level module of rlgen."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "generator" / "rlgen"


def test_the_readme_table_lists_every_package_and_module():
    text = ROOT.joinpath("README.md").read_text()
    table = text.split("## How it is built", 1)[1].split("\n\n", 3)[2]
    names = [f"rlgen/{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()]
    names += [f"rlgen/{p.name}" for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert [n for n in sorted(names) if f"`{n}`" not in table] == []
