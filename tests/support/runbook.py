"""The generated README's *First sync* read as a user follows it: its numbered steps in order,
each step's own ``sh`` blocks, then those of the sections it says to follow ("as [Section](#anchor)
says"), each block once; and the placeholders a block shows where a user must type a value."""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

STEP = re.compile(r"^### (\d+)\. (.+)$", re.M)
LINK = re.compile(r"\[[^\]]+\]\(#([^)]+)\)")
#: "As [A](#a) says", "as [A](#a), [B](#b) says": the sections whose commands the step runs.
FOLLOWED = re.compile(r"\b[Aa]s ((?:\[[^\]]+\]\(#[^)]+\)(?:, )?)+) says")
BLOCK = re.compile(r"```(sh|json)\n(.*?)```", re.S)


@dataclass(frozen=True)
class Block:
    step: str
    section: str
    kind: str
    text: str

    @property
    def first_line(self) -> str:
        return next(line for line in self.text.splitlines() if line.strip())


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower-case, punctuation dropped, spaces as hyphens."""
    return "".join(c for c in heading.lower() if c.isalnum() or c in " -_").strip().replace(" ", "-")


def sections(readme: str) -> dict[str, tuple[str, str]]:
    """Every ``## `` section by its anchor: (heading, body)."""
    found = {}
    for part in re.split(r"^## ", readme, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        found[anchor(heading.strip())] = (heading.strip(), body)
    return found


def steps(readme: str) -> list[tuple[str, str]]:
    """The First sync's steps in order: (title, text). The numbers run 1, 2, 3..."""
    first = sections(readme)["first-sync"][1]
    marks = list(STEP.finditer(first))
    assert [int(m[1]) for m in marks] == list(range(1, len(marks) + 1)), [m[0] for m in marks]
    return [(m[2], first[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(first)])
            for i, m in enumerate(marks)]


def _blocks(step: str, section: str, text: str) -> list[Block]:
    # A block inside a list item is indented as a whole; the user copies it without that indentation.
    return [Block(step, section, kind, textwrap.dedent(body)) for kind, body in BLOCK.findall(text)]


def run_order(readme: str) -> list[Block]:
    """The ``sh`` blocks a user runs, in order: each step's own, then those of the sections it
    follows. A block already run (the same section followed by two steps) is not run again."""
    every = sections(readme)
    order: list[Block] = []
    for title, text in steps(readme):
        candidates = _blocks(title, "First sync", text)
        for links in FOLLOWED.findall(text):
            for target in LINK.findall(links):
                assert target in every, f"step {title!r} follows #{target}, which no section has"
                candidates += _blocks(title, every[target][0], every[target][1])
        order += [b for b in candidates if b.kind == "sh" and b.text not in {o.text for o in order}]
    return order


def shown(readme: str) -> list[Block]:
    """Every block a First sync reader meets: the steps', and those of each section a step links
    to (followed or referred to), ``json`` ones (the trust policies) included."""
    every = sections(readme)
    found = []
    for title, text in steps(readme):
        found += _blocks(title, "First sync", text)
        for target in LINK.findall(text):
            found += _blocks(title, every[target][0], every[target][1])
    return found


#: ``<what>``, ``KEY=...`` and ``$NAME``: where a block has its reader type a value.
PLACEHOLDER = re.compile(r"<(?!<)([A-Za-z][^<>\n]{0,40})>|\b([A-Z][A-Z0-9_]*)=\.\.\.|\$\{?([A-Z][A-Z0-9_]*)")


def placeholders(block: str) -> list[str]:
    """The placeholders of ``block`` as written."""
    return [m[0] for m in PLACEHOLDER.finditer(block)]
