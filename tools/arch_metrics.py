"""Architecture metrics of the `parity` package (issue #32's before/after numbers).

    python3 tools/arch_metrics.py [--root parity]

Prints: top-level modules of the package, import cycles between modules (strongly connected
components of the module import graph, function-local imports included), imports that go up the
layer order of the package tree (`LAYERS` below: a module's layer is its first package), functions
over 80 lines, and branches on op identity (an `if`/`elif`/conditional expression whose test holds
an op name, family or kernel root of the catalog) outside the catalog (`parity/ops`, `parity/profiles`).
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

import grimp

# Highest first: the package layer order of pyproject's import contract. Old flat modules are mapped
# onto the package they moved to, so the same count is meaningful before and after the move.
LAYERS = ["__main__", "pytest_plugin", "cli", "mutate", "render", "run", "executors", "timing", "host",
          "suite", "chains", "profiles", "ops", "core"]
MOVED = {  # flat module (before issue #32) -> its package after (git log --follow parity/<package>/<module>.py)
    "cli_bench": "cli", "cli_mutate": "cli", "cli_peak": "cli", "cli_suite": "cli", "commands": "cli",
    "doctor": "run", "baseline": "render", "diff": "render", "findings": "render", "wave_link": "render",
    "outcome": "render", "engine": "run", "levels": "run", "journal": "run", "results": "run", "repro": "run",
    "cases": "run", "shard": "run", "coverage": "suite", "golden": "suite", "amd_static": "suite",
    "since": "suite", "port": "suite", "compile_cache": "suite", "hip_api": "suite", "hipcall": "host",
    "dtypes": "core", "numerics": "core", "layouts": "core", "values": "core", "tolerance": "core",
    "compare": "core", "row": "core", "resources": "core", "suggest": "core", "termtable": "render",
    "peak": "timing", "data": "suite", "_bundled": "suite",
}


def layer(module: str) -> str:
    part = module.split(".")[1] if "." in module else ""
    return MOVED.get(part, part)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="parity")
    root = Path(ap.parse_args().root)
    sys.path.insert(0, str(root.resolve().parent))
    graph = grimp.build_graph(root.name)
    mods = sorted(m for m in graph.modules if m.startswith(root.name + "."))
    top = [p for p in root.glob("*.py") if p.stem not in ("__init__", "__main__")]
    print(f"top-level modules (besides __init__/__main__): {len(top)}")

    edges = {m: {i for i in graph.find_modules_directly_imported_by(m) if i.startswith(root.name + ".")} for m in mods}
    print(f"import cycles between modules: {len([c for c in _sccs(edges) if len(c) > 1])}"
          + "".join(f"\n    {' <-> '.join(sorted(c))}" for c in _sccs(edges) if len(c) > 1))
    order = {name: i for i, name in enumerate(LAYERS)}
    up = sorted((a, b) for a in mods for b in edges[a]
                if layer(a) in order and layer(b) in order and order[layer(b)] < order[layer(a)])
    print(f"upward imports (a lower layer's module imports a higher one's): {len(up)}"
          + "".join(f"\n    {a} -> {b}" for a, b in up))

    long_fns, branches = [], []
    names = _op_words()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long_fns.append(f"{path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
            in_catalog = path.relative_to(root).parts[0] in ("ops", "profiles")
            if not in_catalog and isinstance(node, (ast.If, ast.IfExp)) and _names_op(node.test, names):
                branches.append(f"{path}:{node.lineno}")
    print(f"functions over 80 lines: {len(long_fns)}" + "".join(f"\n    {f}" for f in long_fns))
    per_file: dict[str, int] = {}
    for b in branches:
        per_file[b.split(":")[0]] = per_file.get(b.split(":")[0], 0) + 1
    print(f"branches on op identity outside parity/ops and parity/profiles: {len(branches)}"
          + "".join(f"\n    {f}: {n}" for f, n in sorted(per_file.items(), key=lambda x: -x[1])))


def _op_words() -> set[str]:
    from parity import profiles
    words: set[str] = set()
    for prof in (profiles.builtin(n) for n in profiles.BUILTIN):
        for op in prof.select(None):
            words |= {op.name, op.family, op.name.split(".", 1)[-1]}
            if getattr(op, "root", None):
                words.add(op.root)
    words |= {w.rstrip("0123456789_") for w in set(words)} - {""}
    return words


def _names_op(test: ast.AST, words: set[str]) -> bool:
    """The test compares against a catalog word (==, in, startswith) and reads an op-ish attribute."""
    consts = [n.value for n in ast.walk(test) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    attrs = {n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)} | \
            {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    opish = attrs & {"name", "family", "root", "op", "op_name", "kernel", "fam"}   # (not `kind`: view and layout kinds)
    return bool(opish) and any(c in words for c in consts)


def _sccs(edges: dict[str, set[str]]) -> list[set[str]]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    main()
