#!/usr/bin/env python3
"""Fails on a cycle of imports between the top-level modules of a crate.

    .ci/module_cycles.py engine/src

A module's dependencies are the other top-level modules its files name through `crate::` (in a
`use` or in a path), its own submodules included: `engine/src/engine/view.rs` naming
`crate::lower::clock` is an arrow engine → lower. The arrows must form no cycle, so each module
can be read, tested and reasoned about with only what is below it. Prints the arrows, and any
cycle found, and exits 1 on one. Standard library only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# `crate::name`, and the start of a `use crate::{a, b::{c, d}, e}` group.
PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
GROUP = re.compile(r"\bcrate::\{")
COMMENT = re.compile(r"//[^\n]*")


def group_heads(text: str) -> set[str]:
    """The first segment of every item of each `crate::{...}` group, nested braces skipped."""
    heads: set[str] = set()
    for start in GROUP.finditer(text):
        depth, item, at_head = 1, "", True
        for c in text[start.end():]:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1 and c == ",":
                item, at_head = "", True
                continue
            if depth == 1 and at_head:
                if c.isalnum() or c == "_":
                    item += c
                elif item:
                    heads.add(item)
                    at_head = False
        if at_head and item:
            heads.add(item)
    return heads


def module_of(root: Path, file: Path) -> str | None:
    """The top-level module a file belongs to (None for the crate root itself)."""
    rel = file.relative_to(root)
    if rel.parts == ("lib.rs",) or rel.parts == ("main.rs",):
        return None
    first = rel.parts[0]
    return first[:-3] if first.endswith(".rs") else first


def arrows(root: Path) -> dict[str, set[str]]:
    modules = {module_of(root, f) for f in root.rglob("*.rs")} - {None}
    out: dict[str, set[str]] = {m: set() for m in modules}
    for file in root.rglob("*.rs"):
        source = module_of(root, file)
        if source is None:
            continue
        text = COMMENT.sub("", file.read_text())
        names = set(PATH.findall(text)) | group_heads(text)
        out[source].update(n for n in names if n in modules and n != source)
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if state.get(nxt) is None:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    graph = arrows(root)
    for module in sorted(graph):
        print(f"  {module} -> {', '.join(sorted(graph[module])) or '(nothing)'}")
    cycle = find_cycle(graph)
    if cycle:
        print(f"a cycle of imports between modules of {root}: {' -> '.join(cycle)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
