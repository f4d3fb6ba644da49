"""The layout rules of ARCHITECTURE.md, read from the imports of every module of attn: the floors, the mechanism
packages side by side, views that know no model, and a graph that stays shallow."""

import ast
import importlib
import inspect
from collections import defaultdict
from pathlib import Path

import pytest
from torch import nn

ROOT = Path(__file__).resolve().parents[1] / "attn"

FLOOR = {"attn._checks", "attn._random", "attn.functional", "attn.masks", "attn.data", "attn.training"}
BLOCKS = {"attn.blocks"}
MECHANISMS = {
    "attn.seq2seq",
    "attn.memn2n",
    "attn.memory",
    "attn.transformer",
    "attn.vision",
    "attn.pretrained",
    "attn.analysis",
    "attn.scale",
}
VIEWS = {"attn.viz"}
BOOK = {"attn.book"}
MAX_LEVELS = 6


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()
INITS = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def _resolve(name: str) -> str:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports() -> dict[str, set[str]]:
    """Each module of attn -> the modules of attn it imports (``from attn.x import f``: attn.x, or attn.x.f if that
    is a module)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                if target.split(".")[0] == "attn" and _resolve(target) not in ("", name):
                    edges[name].add(_resolve(target))
    return edges


EDGES = _imports()


def unit(name: str) -> str:
    """The package or top-level module a module belongs to: attn.memory.dnc -> attn.memory."""
    return ".".join(name.split(".")[:2])


def _flattened() -> dict[str, set[str]]:
    """The import graph with each package's __init__ replaced by the modules it re-exports."""

    def expand(name: str) -> set[str]:
        if name not in INITS:
            return {name}
        return set().union(set(), *(expand(d) for d in EDGES[name] if d != name))

    return {
        name: set().union(set(), *(expand(d) for d in EDGES[name])) - {name} for name in MODULES if name not in INITS
    }


def test_every_module_belongs_to_a_floor():
    placed = FLOOR | BLOCKS | MECHANISMS | VIEWS | BOOK | {"attn"}
    assert {unit(name) for name in MODULES} <= placed, {unit(name) for name in MODULES} - placed


@pytest.mark.parametrize("group", ["floor", "blocks"])
def test_the_floors_import_nothing_above_them(group):
    allowed = FLOOR if group == "floor" else FLOOR | BLOCKS
    for name, imported in EDGES.items():
        if unit(name) in (FLOOR if group == "floor" else BLOCKS):
            above = {d for d in imported if unit(d) not in allowed}
            assert not above, f"{name} (the {group}) imports {sorted(above)}"


def crossings(edges: dict[str, set[str]]) -> list[str]:
    """Every import of one mechanism package by another, or of a view or the book by a mechanism."""
    found = []
    for name, imported in edges.items():
        if unit(name) in MECHANISMS:
            for d in sorted(imported):
                if (unit(d) in MECHANISMS and unit(d) != unit(name)) or unit(d) in VIEWS | BOOK:
                    found.append(f"{name} -> {d}")
    return found


def test_mechanism_packages_stand_side_by_side():
    assert crossings(EDGES) == [], "a mechanism imports another: move the shared part down to a floor"


def test_views_import_no_model_and_no_trainer():
    """A view takes tensors, token lists and result objects: nothing it imports defines a module or trains one."""
    for name, imported in EDGES.items():
        if unit(name) not in VIEWS:
            continue
        for dependency in imported - INITS:
            module = importlib.import_module(dependency)
            models = [n for n, v in vars(module).items() if inspect.isclass(v) and issubclass(v, nn.Module)
                      and v.__module__ == dependency]  # fmt: skip
            trainers = [n for n, v in vars(module).items() if inspect.isfunction(v) and n.startswith(("train", "fit"))]
            assert not models and not trainers, f"{name} imports {dependency}, which holds {models + trainers}"


def test_the_book_machinery_stands_apart_from_the_models():
    for name, imported in EDGES.items():
        if unit(name) in BOOK:
            assert {unit(d) for d in imported} <= BOOK | {"attn._checks"}, f"{name} imports {sorted(imported)}"


def test_no_cycle_and_at_most_six_levels():
    graph = _flattened()
    level: dict[str, int] = {}

    def depth(name: str, path: tuple[str, ...] = ()) -> int:
        assert name not in path, "an import cycle: " + " -> ".join((*path, name))
        if name not in level:
            level[name] = 1 + max((depth(d, (*path, name)) for d in graph[name]), default=0)
        return level[name]

    deepest = max(graph, key=depth)
    chain = [deepest]
    while graph[chain[-1]]:
        chain.append(max(graph[chain[-1]], key=level.__getitem__))
    assert level[deepest] <= MAX_LEVELS, f"{level[deepest]} levels: " + " -> ".join(chain)


def test_the_rules_can_fail():
    """The rules read real imports, and a break is seen: the ViT taking its encoder from the Transformer's package
    instead of the blocks."""
    assert "attn.blocks" in EDGES["attn.vision.vit"]
    broken = {**EDGES, "attn.vision.vit": EDGES["attn.vision.vit"] | {"attn.transformer.models"}}
    assert crossings(broken) == ["attn.vision.vit -> attn.transformer.models"]
