"""A :class:`~rlgen.diff.compare.Comparison` as plain text (terminal) or markdown (PR comment).

Both put the counts first, then the runs (what a reviewer decides on), then each object.
"""
from __future__ import annotations

import difflib
import re

from rlgen.diff.compare import UNSET, Comparison, ObjectChange, RunChange
from rlgen.run.config import show
from rlgen.tools import yamlio

SIGNS = {"added": "+", "removed": "-", "changed": "~", "kept": "="}
#: What a kept object is (rlgen.diff.compare.kept).
KEPT = "kept: prune disabled, it stays in the cluster with its data"
#: GitHub refuses comments over 65536 characters; the object details are cut to fit.
MARKDOWN_LIMIT = 60000
KEPT_NAME = ("keeps its name: KubeRay does not re-run a started RayJob "
             "(`rlgen run set {run} KEY=VALUE` gives it a new name, which starts it again)")


def summary(c: Comparison) -> str:
    return ", ".join(f"{c.count(s)} {s}" for s in SIGNS if s != "kept" or c.count(s))


def restart_line(c: Comparison) -> str:
    """The runs whose new RayJob does not carry on from the old one's checkpoints, in one line."""
    fresh = [f"{r.run} ({r.restart})" for r in c.restarts if not r.restart.startswith("continues")]
    going = [f"{r.run} {r.restart}" for r in c.restarts if r.restart.startswith("continues")]
    parts = ([f"Restart from step 0: {', '.join(fresh)}"] if fresh else []) + going
    return "; ".join(parts)


def _value(value) -> str:
    return "(unset)" if value is UNSET else show(value)


def _config_line(key: str, old, new) -> str:
    return f"{key}: {_value(new)}" if old is UNSET and new is not UNSET else f"{key}: {_value(old)} -> {_value(new)}"


def _rayjobs(r: RunChange, quote: str = "", arrow: str = "->") -> str:
    if r.status == "added":
        return f"RayJob {quote}{r.new_rayjob}{quote}"
    if r.status == "removed" or r.kept_name:
        return f"RayJob {quote}{r.old_rayjob}{quote}"
    return f"RayJob {quote}{r.old_rayjob}{quote} {arrow} {quote}{r.new_rayjob}{quote}"


def resize_line(r: RunChange) -> str:
    old, new = r.resize
    return f"resized: {old} -> {new} GPU nodes x GPUs ({old.gpus} -> {new.gpus} GPUs)"


def _object_note(o: ObjectChange) -> str:
    kept = f"{KEPT}; " if o.status == "kept" else ""
    if o.partner is None:
        return f" ({kept.rstrip('; ')})" if kept else ""
    return f" (replaces {o.partner.name})" if o.status == "added" else f" ({kept}replaced by {o.partner.name})"


IMMUTABLE_MARKER = "<!-- rlgen-immutable -->"
REFUSED = ("The API server refuses these changes (immutable fields): the sync stops at their stage "
           "and every stage after it")


def text(c: Comparison, base: str, head: str) -> str:
    if not c.objects:
        return f"rlgen diff {base} -> {head}: no differences\n"
    out = [f"rlgen diff {base} -> {head}: {summary(c)}", ""]
    if refusals := c.refusals:
        out.append(REFUSED + ":")
        for r in refusals:
            out.append(f"  ! {r.label}: {r.rule.field} ({r.rule.source})")
            out.append(f"      fix: {r.fix}")
        out.append("")
    if c.runs:
        out.append("Runs:")
        for r in c.runs:
            note = " " + KEPT_NAME.replace("`", "'").format(run=r.run) if r.kept_name else ""
            out.append(f"  {SIGNS[r.status]} {r.run}: {_rayjobs(r)}{note}")
            if r.resize:
                out.append(f"      {resize_line(r)}")
            out += [f"      {_config_line(*item)}" for item in r.config]
            out += [f"      {name} changed" for name in r.files]
        if line := restart_line(c):
            out.append(f"  {line}")
        out.append("")
    out.append("Objects:")
    for o in c.objects:
        out.append(f"  {SIGNS[o.status]} {o.key.source}: {o.key.label}{_object_note(o)}")
        # Whole new objects are long and add little on a terminal: only diffs are shown.
        if o.old is not None and o.new is not None:
            out += [f"      {line}" for line in o.details(base, head).splitlines()]
    return "\n".join(out) + "\n"


def markdown(c: Comparison, base: str, head: str) -> str:
    counts = summary(c) if c.objects else "no differences"
    parts = [f"### rlgen diff: {counts}\n\n`{base}` → `{head}`\n"]
    if not c.objects:
        return parts[0]
    if refusals := c.refusals:
        # The marker the generated diff workflow fails on, after posting the comment.
        parts.append(f"\n{IMMUTABLE_MARKER}\n**⚠ {REFUSED}**\n\n" + "".join(
            f"- {r.kind} `{r.namespace + '/' if r.namespace else ''}{r.name}`: `{r.rule.field}` "
            f"({r.rule.source}). Fix: {r.fix}\n" for r in refusals))
    if c.runs:
        line = restart_line(c)
        parts.append("\n**Runs**\n\n" + "".join(_run_markdown(r) for r in c.runs) + (f"\n**{line}**\n" if line else ""))
    rows = "".join(f"| {SIGNS[o.status]} | {o.key.kind} `{o.key.path}`{_object_note(o)} "
                   f"| `{o.key.source}` |\n" for o in c.objects)
    parts.append(f"\n**Objects**\n\n| | object | source |\n|---|---|---|\n{rows}")
    body = "".join(parts)
    left_out = 0
    for o, summary_, details, lang in _details(c, base, head):
        block = (f"\n<details><summary>{SIGNS[o.status]} {o.key.label} ({o.key.source}){summary_}</summary>\n\n"
                 f"{_fenced(details, lang)}\n</details>\n")
        if len(body) + len(block) > MARKDOWN_LIMIT:
            left_out += 1
            continue
        body += block
    if left_out:
        body += f"\n_{left_out} object details left out to fit a comment: run `rlgen diff` locally._\n"
    return body


def _details(c: Comparison, base: str, head: str):
    """(object, what its summary adds, its details, their language) of each object with details.
    An added object of a kind and source already shown whole (a sweep's runs each add a
    ConfigMap and a RayJob of some hundred lines that differ in a few) is shown as its
    difference from the first; a change repeated across objects is shown once, naming them."""
    first: dict[tuple[str, str], ObjectChange] = {}
    changes: dict[str, list[ObjectChange]] = {}
    out = []
    for o in c.objects:
        details = o.details(base, head)
        if not details:
            continue
        if o.old is None and (seen := first.get((o.key.kind, o.key.source))) is not None:
            lines = difflib.unified_diff(yamlio.dump(seen.new).splitlines(keepends=True),
                                         details.splitlines(keepends=True), fromfile=seen.key.label,
                                         tofile=o.key.label, n=1)
            diff = "".join(lines)
            out.append((o, f": as {seen.key.name} but" if diff else f": the same as {seen.key.name}",
                        diff or f"# the same as {seen.key.label}\n", "diff"))
            continue
        if o.old is None:
            first[(o.key.kind, o.key.source)] = o
            out.append((o, "", details, "yaml"))
            continue
        hunks = details.split("\n@@", 1)[-1]
        if hunks in changes:
            changes[hunks].append(o)
            continue
        changes[hunks] = [o]
        out.append((o, "", details, "diff"))
    return [(o, summary_ + _also(changes, o, details, lang), details, lang) for o, summary_, details, lang in out]


def _also(changes: dict[str, list[ObjectChange]], o: ObjectChange, details: str, lang: str) -> str:
    same = changes.get(details.split("\n@@", 1)[-1], []) if lang == "diff" and o.old is not None else []
    return f", the same change in {', '.join(s.key.name for s in same[1:])}" if len(same) > 1 else ""


def _run_markdown(r: RunChange) -> str:
    note = " " + KEPT_NAME.format(run=r.run) if r.kept_name else ""
    lines = [f"- **`{r.run}`** {r.status}: {_rayjobs(r, '`', '→')}{note}\n"]
    if r.resize:
        lines.append(f"  - **{resize_line(r).replace(' -> ', ' → ')}**\n")
    for key, old, new in r.config:
        shown = f"`{_value(new)}`" if old is UNSET else f"`{_value(old)}` → `{_value(new)}`"
        lines.append(f"  - `{key}`: {shown}\n")
    lines += [f"  - `{name}` changed\n" for name in r.files]
    return "".join(lines)


def _fenced(body: str, lang: str) -> str:
    # A fence longer than any backtick run inside, so file contents cannot close it.
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body.rstrip(chr(10))}\n{fence}\n"


def as_data(c: Comparison, base: str, head: str) -> dict:
    """The comparison for scripts: the same facts as the text, secrets still redacted."""
    def value(v):
        return None if v is UNSET else v

    return {
        "base": base, "head": head, "summary": {s: c.count(s) for s in SIGNS if s != "kept" or c.count(s)},
        "restarts": restart_line(c) or None,
        "runs": [{"run": r.run, "status": r.status, "old_rayjob": r.old_rayjob, "new_rayjob": r.new_rayjob,
                  "kept_name": r.kept_name, "files": r.files, "restart": r.restart,
                  "config": [{"key": k, "old": value(o), "new": value(n), "old_set": o is not UNSET,
                              "new_set": n is not UNSET} for k, o, n in r.config]} for r in c.runs],
        "immutable": [r.as_data() for r in c.refusals],
        "objects": [{"status": o.status, "source": o.key.source, "kind": o.key.kind,
                     "namespace": o.key.namespace, "name": o.key.name,
                     "replaces" if o.status == "added" else "replaced_by": o.partner.name if o.partner else None}
                    for o in c.objects],
    }
