#!/usr/bin/env python3
"""The package's import graph, by stage: circles, and imports that run from a lower stage to a higher one.

Stages, lowest first (docs/layout.md "Layout"): the shared base modules, poetry (rhyme and metre), data,
generators, metrics, bpomp, jobs (the typed job records), report, and the entry points (params, cli, api, docs,
and the package's own ``__init__``, which re-exports ``api.evaluate``); a module of no named stage is a base
module. Every import counts, also one deferred into a function body.
Usage: ``python scripts/import_layers.py [src/poeval]``; exit status 1 when there is a circle. It reads the
sources and imports nothing of the package, so it can check a broken one (tests/unit/test_layout.py loads it).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

STAGES = ("base", "poetry", "data", "generators", "metrics", "bpomp", "jobs", "report", "entry")
ENTRY = {"params", "cli", "cli_args", "cli_bpomp", "cli_data", "cli_evaluate", "cli_provenance", "cli_report", "cli_similarity", "api", "docs",
         "__main__"}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage(module: str) -> str:
    """A module's stage: its subpackage, the entry points, or the base."""
    if module == "poeval":   # the package's __init__: `from poeval import evaluate` (poeval.api)
        return "entry"
    part = module.split(".")[1] if "." in module else ""
    return "entry" if part in ENTRY else part if part in STAGES else "base"


def imports(root: Path) -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from poeval.x import y`` counts ``poeval.x.y`` when that
    is a module, else ``poeval.x``)."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a module of a lower stage to one of a higher stage."""
    rank = {s: i for i, s in enumerate(STAGES)}
    return sorted((a, b) for a, targets in graph.items() for b in targets if rank[stage(a)] < rank[stage(b)])


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "src/poeval").resolve()
    graph = imports(root)
    found = circles(graph)
    for comp in found:
        print(f"circle of {len(comp)}: {', '.join(comp)}")
    for a, b in upward(graph):
        print(f"upward: {a} ({stage(a)}) -> {b} ({stage(b)})")
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, {len(found)} circle(s), "
          f"{len(upward(graph))} upward import(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
