"""Bounds on a YAML text rlgen parses, checked before any parser builds it."""
from __future__ import annotations

from rlgen.tools.yaml_schema import c_loader


#: Bounds on a YAML text rlgen parses: no file rlgen writes or a user keeps comes near them, and
#: past them a hostile file (an alias bomb, a 50 MB run.yaml, 10,000 nested lists) would keep
#: a command busy for minutes or exhaust the stack.
MAX_BYTES = 8 * 1024 * 1024
MAX_ALIAS_NODES = 200_000
MAX_DEPTH = 200


# long: one loop over libyaml's events, run on every file read; a call per event would slow it.
def bounded(text: str) -> None:
    """Raise ``ValueError`` when ``text`` is beyond :data:`MAX_BYTES`, nests deeper than
    :data:`MAX_DEPTH`, its aliases expand past :data:`MAX_ALIAS_NODES` nodes or one is inside
    the collection it names. One event pass
    by libyaml, which never expands an alias, so the check costs little."""
    if len(text) > MAX_BYTES:
        raise ValueError(f"{len(text)} characters, more than the {MAX_BYTES} rlgen reads")
    if "*" not in text and text.count("[") + text.count("{") < MAX_DEPTH and text.count("\n") < MAX_DEPTH:
        return
    # Lazy: PyYAML is 20 ms (median of 7) of a command that imports yamlio before its kustomize builds.
    import yaml

    sizes: dict[str, int] = {}
    # Each open collection: [anchor, nodes so far]; an alias counts as the nodes of its anchor.
    stack: list[list] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=c_loader()):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append([event.anchor, 1])
                if len(stack) > MAX_DEPTH:
                    raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, count = stack.pop()
                if anchor:
                    sizes[anchor] = count
            elif isinstance(event, yaml.AliasEvent):
                if any(anchor == event.anchor for anchor, _ in stack):
                    # A collection that holds itself: every reader would walk it for ever.
                    mark = event.start_mark
                    raise ValueError(f"line {mark.line + 1}, column {mark.column + 1}: the alias *{event.anchor} "
                                     "is inside the collection it names")
                count = sizes.get(event.anchor, 1)
            elif isinstance(event, yaml.ScalarEvent):
                count = 1
                if event.anchor:
                    sizes[event.anchor] = 1
            else:
                continue
            total += count
            if total > MAX_ALIAS_NODES:
                raise ValueError(f"its aliases expand to more than {MAX_ALIAS_NODES} nodes")
            if stack:
                stack[-1][1] += count
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own bound, met before the events reach ours
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
        return  # the parser proper reports the defect, with its place
