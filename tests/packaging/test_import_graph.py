"""The engine's import graph, read from the source: no module imports another that imports it back (directly or
around a circle, lazy imports inside functions included), and no layer imports one above it (docs/engine.md
draws the layers). A change that adds a circle or an upward import fails here, naming the files."""

from __future__ import annotations

import ast
from pathlib import Path

from repo_paths import ROOT

PACKAGE = ROOT / "mmjudge"

# Top to bottom, as docs/engine.md draws them; a module may import its own layer and the layers below.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("front doors", ("cli", "commands", "space", "leaderboard", "serve", "adapters", "__init__")),
    ("runs", ("stream", "metaeval", "datasets", "reproduce", "pairwise", "judge_card")),
    ("results", ("report",)),
    ("metrics", ("metrics", "testing")),
    ("shared", ("encoders", "prompts", "examples")),
    ("judges", ("judges",)),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Every mmjudge module ``path`` imports, wherever the import stands (top level, function, TYPE_CHECKING)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    edges = {name: imports(path, name, known) for name, path in found.items()}
    # A package's own __init__ is imported on the way to any of its modules: that arrow is Python's, not ours.
    return {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in edges.items()}


def layer(name: str) -> int:
    rest = name.split(".")[1:] or ["__init__"]
    for rank, (_, tops) in enumerate(LAYERS):
        if rest[0] in tops:
            return rank
    return len(LAYERS)  # the leaves: models, store, paths, images, inputs, errors …


def test_no_two_modules_import_each_other_directly_or_around_a_circle():
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    assert circles == [], f"modules that import each other: {circles}"


def test_no_layer_imports_a_layer_above_it():
    upward = sorted(
        f"{name} -> {target}" for name, targets in graph().items() for target in targets if layer(target) < layer(name)
    )
    assert upward == [], f"imports against the grain (docs/engine.md): {upward}"
