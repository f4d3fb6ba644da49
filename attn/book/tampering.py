"""What a student's code may not do to the grading: the rules read from its source, the library as the grader
saw it (:mod:`attn.book.preprocessors` applies the rules before a submission runs).

A solution changes nothing outside itself. Everything the autograder compares with (torch, attn, the chapter's
own results) must be as the chapter left it, so student code may not patch a module, rebind a name the chapter's
cells bind, reach the interpreter's machinery (``sys``, ``gc``, ``inspect``, frames, ``__dict__``) or look names up
at run time. Code in the same kernel can always find a way around rules read from its text (see the instructors'
page): the rules stop the ways we know of, and :func:`changes` catches a patched library at run time.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
import types
from collections.abc import Iterable

import torch

__all__ = [
    "DYNAMIC", "refusals", "bound_names", "free_names", "import_bindings", "snapshot", "changes", "ipython_lines",
]  # fmt: skip

# Modules that reach the interpreter, the kernel or the grader, or rebuild objects from bytes.
_MODULES = frozenset({
    "sys", "builtins", "importlib", "gc", "ctypes", "inspect", "unittest", "IPython", "ipykernel", "types", "pickle",
    "marshal", "copyreg", "dill", "cloudpickle", "shelve", "code", "codeop", "runpy", "pkgutil", "traceback",
    "nbgrader", "attn.book", "torch.overrides", "torch.library", "torch.ops", "torch.utils._python_dispatch",
})  # fmt: skip
# Names that look other names up at run time, where no reading of the source can follow them: refused in a student's
# cell (refusals) and reported in a solution's code (attn.book.grading.check_written). One list for both.
DYNAMIC = frozenset({
    "getattr", "eval", "exec", "compile", "__import__", "globals", "vars", "locals", "import_module", "__dict__",
    "__getattribute__", "__builtins__", "__globals__",
})  # fmt: skip
# Built-in names that look names up, change other objects' attributes, run text as code, or reach the kernel.
_NAMES = DYNAMIC | {"setattr", "delattr", "breakpoint", "get_ipython", "exit", "quit"}
# Attributes that reach code, frames or namespaces (dunders not listed in _DUNDERS_ALLOWED are refused too).
_ATTRIBUTES = frozenset({
    "f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "user_ns",
    "ops", "library", "overrides",
})  # fmt: skip
_DUNDERS_ALLOWED = frozenset({"__init__", "__call__", "__len__", "__getitem__", "__iter__", "__next__",
                              "__enter__", "__exit__", "__repr__", "__str__", "__name__", "__doc__"})  # fmt: skip


def _module_refused(name: str) -> bool:
    if name == "__future__" or name.startswith("__future__."):
        return False
    parts = name.split(".")
    private = any(p.startswith("_") for p in parts)
    return private or any(name == m or name.startswith(m + ".") for m in _MODULES)


def _root(node: ast.AST) -> ast.AST:
    """The object an attribute or item chain starts from: ``a`` in ``a.b[0].c`` (a call ends the chain)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
        node = node.value
    return node


class _Scope:
    """The names one function (or the cell's top level) binds, and which of them hold objects it did not make."""

    def __init__(self, own: set[str], foreign: set[str]) -> None:
        self.own, self.foreign = own, foreign

    def is_own(self, node: ast.AST) -> bool:
        """Whether an expression's root is an object this scope made (a parameter, or a local made by a call)."""
        root = _root(node)
        if isinstance(root, ast.Name):
            return root.id in self.own and root.id not in self.foreign
        return isinstance(root, ast.Call)  # a new object, e.g. torch.zeros(3)[0] = 1


def _mentions(node: ast.AST, names: set[str]) -> bool:
    """Whether an expression's value may be (part of) one of ``names``' objects: its root chain, or an element of a
    container it builds (``[torch][0]``)."""
    root = _root(node)
    if isinstance(root, ast.Name):
        return root.id in names
    if isinstance(root, ast.List | ast.Tuple | ast.Set):
        return any(_mentions(e, names) for e in root.elts)
    if isinstance(root, ast.Dict):
        return any(_mentions(v, names) for v in root.values if v is not None)
    if isinstance(root, ast.IfExp | ast.BoolOp):
        parts = [root.body, root.orelse] if isinstance(root, ast.IfExp) else root.values
        return any(_mentions(p, names) for p in parts)
    return isinstance(root, ast.NamedExpr | ast.Lambda)


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    if isinstance(node, ast.Delete):
        return node.targets
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    if isinstance(node, ast.NamedExpr):
        return [node.target]
    name = getattr(node, "rest" if isinstance(node, ast.MatchMapping) else "name", None)
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar | ast.MatchMapping) and name:
        return [ast.Name(id=name, ctx=ast.Store(), lineno=getattr(node, "lineno", 0))]
    return []


def _flat(targets: Iterable[ast.AST]) -> list[ast.AST]:
    out = []
    for t in targets:
        if isinstance(t, ast.Tuple | ast.List):
            out += _flat(t.elts)
        elif isinstance(t, ast.Starred):
            out += _flat([t.value])
        else:
            out.append(t)
    return out


def bound_names(source: str) -> set[str]:
    """The names a cell binds at its top level (assignments, definitions, imports, loop variables, ``:=``,
    ``except ... as``, ``match`` captures), not those local to its functions and classes."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError):  # RecursionError: nested too deeply for Python's parser
        return set()
    names: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:  # without recursion: a long expression is as deep as it is long
        node = stack.pop()
        for target in _flat(_targets(node)):
            if isinstance(target, ast.Name):
                names.add(target.id)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update(_binding(node, a)[0] for a in node.names if a.name != "*")
        stack.extend(ast.iter_child_nodes(node))
    return names


def free_names(source: str) -> set[str]:
    """The names a cell reads that it never binds itself, in any scope: what it takes from the notebook."""
    try:
        tree = ast.parse(ipython_lines(source))
    except (SyntaxError, RecursionError):
        return set()
    loads: set[str] = set()
    stores: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, ast.arg):
            stores.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stores.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            stores.update(_binding(node, a)[0] for a in node.names if a.name != "*")
        for target in _flat(_targets(node)):
            if isinstance(target, ast.Name):
                stores.add(target.id)
    return loads - stores


def _binding(node: ast.Import | ast.ImportFrom, alias: ast.alias) -> tuple[str, str]:
    """The name an import binds and what it binds it to, as a dotted path (``import a.b`` binds ``a`` to a,
    ``from a import b`` and ``import a.b as b`` bind ``b`` to a.b)."""
    if isinstance(node, ast.ImportFrom):
        return alias.asname or alias.name, f"{'.' * node.level}{node.module}.{alias.name}"
    if alias.asname:
        return alias.asname, alias.name
    root = alias.name.split(".")[0]
    return root, root


def import_bindings(source: str) -> dict[str, set[str]]:
    """What each name a cell imports is bound to (a dotted path): importing the same thing again rebinds nothing."""
    try:
        tree = ast.parse(ipython_lines(source))
    except SyntaxError:
        return {}
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                name, what = _binding(node, alias)
                found.setdefault(name, set()).add(what)
    return found


def ipython_lines(source: str) -> str:
    """The cell as Python: IPython's magics (``%matplotlib``) and shell escapes become comments."""
    return "\n".join("#" + line if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


class _Rules(ast.NodeVisitor):
    """The rules of :func:`refusals`, one method per kind of node. Each ``visit_*`` returns the nodes to walk next,
    with their scope: :meth:`walk` keeps its own stack instead of recursing, since a long expression (a sum of a
    thousand terms) is as deep as it is long."""

    def __init__(self, reserved: set[str], modules: set[str], same_imports: dict[str, set[str]]) -> None:
        self.reserved, self.modules, self.same_imports = reserved, modules, same_imports
        self.problems: list[str] = []
        self.scope, self.top = _Scope(set(), set()), True

    def walk(self, tree: ast.Module) -> list[str]:
        stack: list[tuple[ast.AST, _Scope, bool]] = [
            (statement, self.function_scope(tree), True) for statement in reversed(tree.body)
        ]
        while stack:  # depth first, in the order of the source
            node, self.scope, self.top = stack.pop()
            stack.extend(reversed(self.visit(node)))
        return list(dict.fromkeys(self.problems))

    def visit(self, node: ast.AST) -> list[tuple[ast.AST, _Scope, bool]]:
        children = super().visit(node)  # the rule for this kind of node, then the rule for what it stores into
        self.stores(node)
        return children

    def refuse(self, node: ast.AST, why: str) -> None:
        self.problems.append(f"line {getattr(node, 'lineno', '?')}: {why}")

    def function_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.Module) -> _Scope:
        """A function's names (its parameters are its own), or the cell's (the chapter's names are not)."""
        params: set[str] = set()
        if not isinstance(node, ast.Module):
            args = node.args
            params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        own, foreign = set(params), set()
        for inner in ast.walk(node):
            for target in _flat(_targets(inner)):
                if isinstance(target, ast.Name):
                    own.add(target.id)
                    value = getattr(inner, "value", None) or getattr(inner, "iter", None)
                    if value is not None and _mentions(value, (self.modules | self.reserved) - params):
                        foreign.add(target.id)
        if isinstance(node, ast.Module):
            own -= self.reserved | self.modules
        return _Scope(own, foreign)

    def generic_visit(self, node: ast.AST) -> list[tuple[ast.AST, _Scope, bool]]:
        return [(child, self.scope, self.top) for child in ast.iter_child_nodes(node)]

    def stores(self, node: ast.AST) -> None:
        """A store into a name the chapter's checks read, or into an object the solution did not make."""
        for target in _flat(_targets(node)):
            if isinstance(target, ast.Name) and self.top and target.id in self.reserved:
                self.refuse(node, f"binds {target.id}, a name the chapter's cells use: the checks read it")
            elif isinstance(target, ast.Attribute | ast.Subscript) and not self.scope.is_own(target):
                root = _root(target)
                what = root.id if isinstance(root, ast.Name) else "an object"
                self.refuse(node, f"changes {what}, which the solution did not make: leave the library and the "
                            "chapter as they are")  # fmt: skip

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> list:
        names = ", ".join(node.names)
        self.refuse(node, f"{type(node).__name__.lower()} {names}: a solution changes nothing outside itself")
        return self.generic_visit(node)

    visit_Nonlocal = visit_Global  # noqa: N815 (ast.NodeVisitor names its methods after the node classes)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> list:
        for alias in node.names:
            name = f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name
            absolute = getattr(node, "level", 0) == 0
            if absolute and (_module_refused(name) or _module_refused(name.rpartition(".")[0] or name)):
                self.refuse(node, f"imports {name}, which reaches the interpreter or the grader")
            name, what = _binding(node, alias)
            if self.top and name in self.reserved and what not in self.same_imports.get(name, set()):
                self.refuse(node, f"binds {name}, a name the chapter's cells use, to something else")
        return self.generic_visit(node)

    visit_ImportFrom = visit_Import  # noqa: N815

    def visit_Name(self, node: ast.Name) -> list:
        if node.id in _NAMES:
            self.refuse(node, f"uses {node.id}: call functions directly, and change nothing outside the solution")
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> list:
        attr = node.attr
        dunder = attr.startswith("__") and attr.endswith("__")
        on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        if (dunder and attr not in _DUNDERS_ALLOWED) or (attr.startswith("_") and not dunder and not on_self):
            self.refuse(node, f"reaches .{attr}: private attributes and the interpreter's are out of bounds")
        elif attr in _ATTRIBUTES:
            self.refuse(node, f"reaches .{attr}, which bypasses the library's public functions")
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list:
        if not isinstance(node, ast.Lambda) and self.top and node.name in self.reserved:
            self.refuse(node, f"defines {node.name}, a name the chapter's cells use")
        outside = [d for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None]
        outside += getattr(node, "decorator_list", [])
        inner = self.function_scope(node)
        body = node.body if isinstance(node.body, list) else [node.body]
        return [(n, self.scope, self.top) for n in outside] + [(n, inner, False) for n in body]

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef  # noqa: N815

    def visit_ClassDef(self, node: ast.ClassDef) -> list:
        if self.top and node.name in self.reserved:
            self.refuse(node, f"defines {node.name}, a name the chapter's cells use")
        outside = [*node.bases, *node.keywords, *node.decorator_list]
        empty = _Scope(set(), set())  # class attributes: nothing outside
        return [(n, self.scope, self.top) for n in outside] + [(n, empty, False) for n in node.body]


def refusals(
    source: str,
    reserved: Iterable[str] = (),
    imported: Iterable[str] = (),
    same_imports: dict[str, set[str]] | None = None,
) -> list[str]:
    """Everything in a cell's code that could change the grading, one line each (empty: nothing found).

    ``reserved``: names the checks read from the notebook (the chapter's results, built-ins), which a student cell
    may not bind again at its top level, except by importing what the chapter imported under that name
    (``same_imports``, from :func:`import_bindings`).
    ``imported``: names bound to modules in other cells (``torch``, ``F``); a store into them is a patch.
    """
    try:
        tree = ast.parse(ipython_lines(source))
    except SyntaxError as error:
        return [f"line {error.lineno}: cannot be read as Python ({error.msg})"]
    except RecursionError:  # Python's own parser gives up: the cell could not run either
        return ["cannot be read as Python (an expression nested too deeply for the parser)"]
    modules = set(imported) | {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                               if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}  # fmt: skip
    return _Rules(set(reserved), modules, same_imports or {}).walk(tree)


# ---- the library as the grader saw it -------------------------------------------------------------------------


def _watched() -> list[tuple[str, object]]:
    """The namespaces a check relies on: torch's public modules, its tensor class and its module classes' methods,
    math, builtins, and attn's modules and classes."""
    names = ["torch", "torch.nn", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft",
             "torch.distributions", "torch.nn.init", "math", "builtins", "functools", "operator"]  # fmt: skip
    found: list[tuple[str, object]] = [(n, sys.modules[n]) for n in names if n in sys.modules]
    found += [(n, m) for n, m in list(sys.modules.items()) if (n == "attn" or n.startswith("attn.")) and m]
    found += [("torch.Tensor", torch.Tensor)]
    for module_name, module in list(found):
        if module_name.startswith(("attn", "torch.nn", "torch.distributions")):
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__module__.startswith(("attn", "torch")):
                    found.append((f"{value.__module__}.{value.__qualname__}", value))
    return list(dict(found).items())


_TORCH_DIR = os.path.dirname(os.path.abspath(inspect.getfile(torch))) + os.sep
_SEEN: dict[str, dict[str, object]] = {}
# ipykernel binds builtins.input anew for every cell it runs (to forward input() to the notebook)
_SWAPPED_BY_THE_KERNEL = {("builtins", "input")}


def _ids(namespace: object) -> dict[str, object]:
    """Public attributes and their objects (submodules, which appear when they are imported, do not count)."""
    return {k: v for k, v in list(vars(namespace).items())
            if not k.startswith("_") and not isinstance(v, types.ModuleType)}  # fmt: skip


def _torch_wrapper(new: object, old: object) -> bool:
    """Whether ``new`` is torch's own wrapper of ``old`` (``torch._dynamo`` wraps ``torch.manual_seed`` when it is
    imported): a function written in torch's files, wrapping the very object that was there."""
    code = getattr(new, "__code__", None)
    in_torch = code is not None and os.path.abspath(code.co_filename).startswith(_TORCH_DIR)
    return in_torch and getattr(new, "__wrapped__", None) is old


def _from_a_notebook(value: object) -> bool:
    """Whether an object was defined by the notebook's own code (a function or class typed into a cell)."""
    module = getattr(value, "__module__", None)
    return module == "__main__" and (inspect.isfunction(value) or isinstance(value, type))


def _take(namespaces: list[tuple[str, object]]) -> None:
    for name, namespace in namespaces:
        _SEEN.setdefault(name, _ids(namespace))


def snapshot() -> None:
    """The grader's first look at torch, attn, math and builtins: a chapter calls it in its first cell (locked),
    before any exercise, and :func:`changes` compares with what it saw."""
    _take(_watched())


def changes() -> list[str]:
    """What was rebound or removed in torch, attn, math or builtins since the grader first looked
    (:func:`snapshot`), and any object of theirs a notebook defined; modules imported since, or everything when no
    snapshot was taken, are taken as they are at their first look. Only torch's own wrapper of the same object
    (see :func:`_torch_wrapper`) does not count."""
    watched = _watched()
    found = []
    for name, namespace in watched:
        before = _SEEN.get(name)
        if before is None:
            continue
        now = _ids(namespace)
        for key, old in before.items():
            if (name, key) in _SWAPPED_BY_THE_KERNEL:
                continue
            if key not in now or (now[key] is not old and not _torch_wrapper(now[key], old)):
                found.append(f"{name}.{key}")
        if name != "builtins":
            found += [f"{name}.{k}" for k, v in list(vars(namespace).items())
                      if _from_a_notebook(v) and f"{name}.{k}" not in found]  # fmt: skip
    _take(watched)
    return found
