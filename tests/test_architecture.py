"""The layout rules of ARCHITECTURE.md, read from the imports of every module of attn: the floors, the mechanism
packages side by side and laid out alike, views that know no model, no private name used outside its module, and a
graph that stays shallow."""

import ast
import importlib
import inspect
import textwrap
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
MAX_LEVELS = 6  # the deepest: a trainer -> its model -> the blocks (layers -> attention) -> attend -> the checks


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


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _imports() -> dict[str, set[str]]:
    """Each module of attn -> the modules of attn it imports (``from attn.x import f``: attn.x, or attn.x.f if that
    is a module)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        annotations_only = {id(n) for block in ast.walk(tree) if _type_checking(block) for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in annotations_only:  # `if TYPE_CHECKING:` imports never run: no edge
                continue
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
    """The package or top-level module a module belongs to: attn.memory.model -> attn.memory."""
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
    assert "attn.blocks" in EDGES["attn.vision.model"]
    broken = {**EDGES, "attn.vision.model": EDGES["attn.vision.model"] | {"attn.transformer.model"}}
    assert crossings(broken) == ["attn.vision.model -> attn.transformer.model"]


# ------------------------------------------------------------------------------- one layout in every mechanism package

LAID_OUT = {"model", "train", "measures", "explain", "__main__"}  # the same names in every package, where it has them
EQUATIONS = {  # the mechanism's own equations, one idea per module
    "attn.memory": {"addressing", "access", "dynamic_allocation", "temporal_linkage"},
    "attn.memn2n": set(),
    "attn.seq2seq": {"scores", "translate"},
    "attn.transformer": {"mixers", "translate", "pretraining"},
    "attn.vision": {"glimpse", "patches", "rollout", "ram"},  # ram: the hard-attention model's hybrid loss
    "attn.scale": {"linear", "tiled", "recall"},
}
PACKAGES = sorted(name for name in INITS if name in MECHANISMS)


def _defined(module_name: str) -> list[tuple[str, object]]:
    """The classes and functions a module defines itself (not those it imports)."""
    module = importlib.import_module(module_name)
    return [(n, v) for n, v in vars(module).items()
            if (inspect.isclass(v) or inspect.isfunction(v)) and v.__module__ == module_name]  # fmt: skip


def misnamed(package: str, names: set[str]) -> list[str]:
    """The modules of ``package`` named neither as the layout says nor as one of its equations."""
    return sorted(names - LAID_OUT - EQUATIONS[package])


def test_every_mechanism_package_is_laid_out_alike():
    """model.py (its models, their configs and outputs), train.py (every train_* function and its loss helpers),
    measures.py, explain.py, __main__.py: no models.py, measure.py, cost.py, tagging.py, ntm.py, vit.py..."""
    assert PACKAGES == sorted(EQUATIONS), "a new mechanism package: give it its EQUATIONS here"
    assert misnamed("attn.vision", {"model", "vit", "cost", "glimpse"}) == ["cost", "vit"]  # the rule can fail
    for package in PACKAGES:
        names = {name.rpartition(".")[2] for name in MODULES if name.startswith(package + ".")}
        assert misnamed(package, names) == [], f"{package}: name these modules as ARCHITECTURE.md says"
        defined = {name: _defined(name) for name in MODULES if name.startswith(package + ".")}
        models = {
            m for m, found in defined.items() for _, v in found if inspect.isclass(v) and issubclass(v, nn.Module)
        }
        trainers = {
            m for m, found in defined.items() for n, v in found if inspect.isfunction(v) and n.startswith("train_")
        }
        assert not models or f"{package}.model" in models, f"{package} defines models in {sorted(models)}, no model.py"
        assert trainers <= {f"{package}.train"}, f"{package} defines train_* functions outside train.py: {trainers}"
        for module, found in defined.items():
            configs = [n for n, v in found if inspect.isclass(v) and n.endswith("Config")]
            assert not configs or module == f"{package}.model", f"{module} defines {configs}: they go to model.py"
            modules = [n for n, v in found if inspect.isclass(v) and issubclass(v, nn.Module)]
            assert not modules or module.rpartition(".")[2] not in LAID_OUT - {"model"}, f"{module} defines {modules}"


def private_imports(name: str, source: str) -> list[str]:
    """The names starting with ``_`` that module ``name`` takes from another module of attn: ``from attn.x import
    _f``, or ``m._f`` / ``C._f`` where ``m`` is an attn module it imported or ``C`` a name it imported from one."""
    found, imported = [], set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "attn"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{name} imports {alias.name} from {node.module}")
                imported.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            imported |= {
                alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name.startswith("attn")
            }
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in imported:
                found.append(f"{name} reads {ast.unparse(node)}")
    return found


def test_no_module_uses_another_modules_private_names():
    """A name starting with ``_`` is its module's own: a helper two modules share is public, in the lower one."""
    used = [f for name, path in MODULES.items() for f in private_imports(name, path.read_text(encoding="utf-8"))]
    assert used == []
    source = textwrap.dedent("""
        import attn.scale.tiled as tiled
        from attn.memory.measures import _described
        from attn.transformer.model import Embedding
        tiled._online_softmax_update, Embedding._check, Embedding.forward.check
    """)
    assert private_imports("attn.x", source) == [
        "attn.x imports _described from attn.memory.measures",
        "attn.x reads tiled._online_softmax_update",
        "attn.x reads Embedding._check",
    ]


# ------------------------------------------------------------------------------- one trainer contract, short functions


def test_every_trainer_returns_the_one_result_type():
    """Every ``train_*`` of a mechanism's train.py returns :class:`attn.training.Trained` (model, history), or a
    subclass that adds what the model needs beside it (MemN2NRun: the vocabulary)."""
    import typing

    from attn.training import Trained

    found = []
    for package in sorted(MECHANISMS):
        if not (ROOT / package.split(".")[1] / "train.py").is_file():
            continue
        module = importlib.import_module(f"{package}.train")
        for name, function in vars(module).items():
            if name.startswith("train_") and inspect.isfunction(function) and function.__module__ == module.__name__:
                returned = typing.get_type_hints(inspect.unwrap(function))["return"]
                assert isinstance(returned, type) and issubclass(returned, Trained), f"{package}.train.{name}"
                found.append(name)
    assert len(found) >= 9, found


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines without its signature and docstring."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


LONGEST_FUNCTION = 50


def test_no_function_runs_over_fifty_lines():
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and body_lines(node) > LONGEST_FUNCTION:
                long.append(f"{name}.{node.name}: {body_lines(node)} lines")
    assert not long, "functions over fifty lines (split them):\n" + "\n".join(long)
    tree = ast.parse("def f():\n" + "    x = 1\n" * (LONGEST_FUNCTION + 1))
    assert body_lines(tree.body[0]) > LONGEST_FUNCTION  # the rule can fail
