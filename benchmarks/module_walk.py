"""How many of rlgen's modules a command passes through, and how often it comes back to one it
had left: a reader following the command through its calls meets the same count.

    python benchmarks/module_walk.py REPO run new lr-x --no-branch --set actor_rollout_ref.actor.optim.lr=3e-6

runs ``rlgen ARGS`` inside REPO in this process with a profile hook on every Python call, keeps
the calls into modules of the package ``rlgen`` (plugins and libraries left out), and prints
the modules in the order first entered, their count and the returns: the distinct steps from
one module back into another the command had already entered (a loop over many items that
steps back and forth counts once). Imports are not calls of a command's own code: the calls a
module's import makes are left out.
"""
from __future__ import annotations

import os
import sys


def walk(argv: list[str]) -> tuple[list[str], int]:
    """(the modules in the order first entered, the distinct steps back into one of them)."""
    from rlgen.cli import main

    order: list[str] = []
    returns: set[tuple[str, str]] = set()
    previous = None

    def hook(frame, event, arg):
        nonlocal previous
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        name = frame.f_globals.get("__name__", "")
        if not (name == "rlgen" or name.startswith("rlgen.")) or name == previous:
            return
        if name in order:
            returns.add((previous, name))
        else:
            order.append(name)
        previous = name

    sys.setprofile(hook)
    try:
        main(argv)
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
    return order, len(returns)


if __name__ == "__main__":
    os.chdir(sys.argv[1])
    modules, back = walk(sys.argv[2:])
    print("\n".join(modules), file=sys.stderr)
    print(f"{len(modules)} modules, {back} returns to a module left before")
