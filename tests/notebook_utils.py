"""Shared helpers for the chapter tests: where the chapters are, and what of their outputs is compared."""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

from nbval.plugin import coalesce_streams, get_sanitize_patterns

from attn.pretrained import ModelNotInstalledError, model_dir

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
IGNORE_OUTPUT = "nbval-ignore-output"
WIDGET = "application/vnd.jupyter.widget-view+json"
NOT_COMPARED = {"image/png", "image/jpeg", WIDGET}  # what nbval leaves out (images; widget model ids are random)


def _model_missing() -> str | None:
    """Why the pretrained model of chapter 11 cannot be used here, or None when it is installed."""
    try:
        model_dir()
    except ModelNotInstalledError as error:
        return f"chapter 11's pretrained model is not installed: {error}"
    return None


MODEL_MISSING = _model_missing()


def sanitize_patterns() -> list[tuple[str, str]]:
    """The replacements of ``nbval_sanitize.cfg``, in order, read as nbval reads them: what it treats as volatile."""
    return get_sanitize_patterns(SANITIZE.read_text())


def comparable(outputs: list, patterns: list[tuple[str, str]]) -> list:
    """A cell's outputs as nbval compares them: streams merged by nbval, every data field but images and widget
    ids, after the sanitizer's replacements; an error as its name."""

    def clean(text: str) -> str:
        for regex, replace in patterns:
            text = re.sub(regex, replace, text)
        return text

    seen = []
    for output in coalesce_streams(outputs):
        if output["output_type"] == "stream":
            seen.append((output["name"], clean(output["text"])))
        elif output["output_type"] == "error":
            seen.append(("error", output["ename"]))
        else:
            data = {k: v for k, v in output.get("data", {}).items() if k not in NOT_COMPARED}
            seen.append(sorted((k, clean(v) if isinstance(v, str) else v) for k, v in data.items()))
    return seen


VIEWER_DATA = re.compile(r"<script type='application/json' class='av-data'>(.*?)</script>", re.DOTALL)
BERTVIZ_DATA = re.compile(r"const params = (\{.*?\}); // HACK", re.DOTALL)


def attention_views(outputs: list) -> list[tuple[str, list[list[float]], int]]:
    """Every attention matrix an output shows (attn's viewer, bertviz's head view): (where, rows of weights,
    decimals it is rounded to: the viewer's own; for bertviz 2, the fewest a chapter passes it)."""
    found = []
    for output in outputs:
        data = output.get("data", {})
        for payload in VIEWER_DATA.findall(data.get("text/html", "")):
            view = json.loads(payload)
            if not view.get("distributions", True):  # usage, links: not attention, declared so
                continue
            for k, example in enumerate(view["examples"]):
                nq, nk = len(example["rows"]), len(example["cols"])
                weights = [w / view["scale"] for w in example["w"]]
                for m in range(len(weights) // (nq * nk)):
                    block = weights[m * nq * nk : (m + 1) * nq * nk]
                    rows = [block[i * nk : (i + 1) * nk] for i in range(nq)]
                    found.append((f"viewer {view['title']!r}, example {k}, matrix {m}", rows, view["decimals"]))
        for payload in BERTVIZ_DATA.findall(data.get("application/javascript", "")):
            for k, item in enumerate(json.loads(payload)["attention"]):
                for layer, heads in enumerate(item["attn"]):
                    for h, matrix in enumerate(heads):
                        found.append((f"bertviz view {k}, layer {layer}, head {h}", matrix, 2))
    return found


def rows_sum_to_one(rows: list[list[float]], decimals: int) -> bool:
    """Every row of weights sums to 1 (0 for a row with nothing to attend to), up to rounding at ``decimals``."""
    tolerance = len(rows[0]) * 0.5 * 10.0**-decimals + 1e-6
    return all(math.isclose(sum(row), 1.0, abs_tol=tolerance) or sum(row) == 0 for row in rows)


# ------------------------------------------------------------------------------------ claims of typed constants

# Builtins that only reshape what they are given: a call of one on constants is still a constant.
_PASSIVE_CALLS = frozenset(["float", "int", "round", "abs", "min", "max", "sum", "len", "bool", "str"])
_PASSIVE_CALLS |= {"tuple", "list", "dict", "set", "sorted"}


def _bindings(tree: ast.AST) -> dict[str, list[ast.AST | None]]:
    """Every value bound to each name in ``tree``: an expression, or None where the value comes from code (a
    loop over something, an import, a function or class, a ``with ... as``, a parameter, an exception). A method
    called on a name (``x.append(v)``) counts as binding it to that call."""
    bound: dict[str, list[ast.AST | None]] = {}

    def bind(target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            bound.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Starred):
            bind(target.value, None)
        elif isinstance(target, ast.Tuple | ast.List):
            values = value.elts if isinstance(value, ast.Tuple | ast.List) else None
            for k, element in enumerate(target.elts):
                bind(element, values[k] if values is not None and len(values) == len(target.elts) else value)
        elif isinstance(target, ast.Subscript | ast.Attribute):  # x[k] = v changes what x holds
            while isinstance(target, ast.Subscript | ast.Attribute):
                target = target.value
            bind(target, value)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and node.value is not None:
            bind(node.target, node.value)
            if isinstance(node, ast.AugAssign):
                bind(node.target, node.target)  # its old value takes part too
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node.value)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            bind(node.target, node.iter)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind(node.optional_vars, None)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                bound.setdefault((alias.asname or alias.name).split(".")[0], []).append(None)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.setdefault(node.name, []).append(None)
        elif isinstance(node, ast.arg):
            bound.setdefault(node.arg, []).append(None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.setdefault(node.name, []).append(None)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # x.append(v), x[k].update(...)
            bind(node.func.value, node)
    return bound


def _is_constant(expr: ast.AST, constant_names: set[str]) -> bool:
    """Whether ``expr`` is made of literals, operators and passive builtins only, over names that hold constants."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id not in constant_names and node.id not in _PASSIVE_CALLS:
            return False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _PASSIVE_CALLS):
            return False
        if isinstance(node, ast.Attribute | ast.Lambda | ast.Await | ast.Yield | ast.YieldFrom):
            return False
    return True


def typed_constant_claims(source: str) -> list[str]:
    """The ``claim(...)`` calls in ``source`` (a chapter's code, magics removed) whose value is no measurement: an
    expression of literals and of names bound only to such expressions (``claim("x", 3 < 4)``, or ``read =
    {"a": 3 * 24}`` and then ``claim("x", read["a"] > 100)``). Each is returned as its source text."""
    tree = ast.parse(source)
    bindings = _bindings(tree)
    constant = {name for name, values in bindings.items() if all(v is not None for v in values)}
    while True:  # the largest set of names whose every binding is constant, given the set itself
        keep = {name for name in constant if all(_is_constant(v, constant) for v in bindings[name])}
        if keep == constant:
            break
        constant = keep
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "claim":
            value = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "value"), None)
            )
            if value is not None and _is_constant(value, constant):
                found.append(ast.get_source_segment(source, node) or ast.dump(node))
    return found
