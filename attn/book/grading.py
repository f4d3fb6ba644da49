"""Classroom exercises: write the student version of a chapter with nbgrader's own preprocessors.

A chapter holds exercises in nbgrader format: a solution cell whose answer sits between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` inside a function body, then an autograder cell of
``assert``s with nbgrader metadata (``grade_id``, ``points``). The student version replaces each answer
with ``raise NotImplementedError()`` and clears all outputs, so every autograder cell fails with
``NotImplementedError`` until the student writes the function.

    python -m attn.book.grading notebooks _build/assignments [--force]
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import gc
import importlib
import inspect
import linecache
import secrets
import sys
import sysconfig
import textwrap
import types
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import nbformat
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attn._checks import check
from attn.book.tampering import DYNAMIC, changes, refusals

__all__ = ["forbid", "check_written", "fresh_generator", "student_version", "write_assignments", "grade_cells"]


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise ValueError(f"cannot import {dotted!r}")


def _caller_globals() -> dict:
    """The global namespace of the code that entered :func:`forbid` (a notebook's, in an autograder cell)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in (__name__, "contextlib"):
        frame = frame.f_back
    return frame.f_globals if frame is not None else {}


# Names that look a function up at run time, past any check of the code as written.


_MISSING = object()


class _Forbidden:
    """The functions an exercise forbids: their objects, and method names (``torch.Tensor.softmax``)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.places: list[tuple[object, str, object, bool, str]] = []  # owner, attribute, original, own, name
        self.by_id: dict[int, str] = {}
        self.methods: dict[str, str] = {}
        for name in names:
            check(isinstance(name, str) and "." in name.strip("."),
                  f"forbid names functions by their dotted path, such as 'torch.softmax', got {name!r}")  # fmt: skip
            owner_name, attr = name.rsplit(".", 1)
            owner = _resolve(owner_name)
            original = getattr(owner, attr, _MISSING)
            check(original is not _MISSING,
                  f"forbid: {owner_name} has no {attr} (is {name!r} spelled as the library spells it?)")  # fmt: skip
            own = not isinstance(owner, type) or attr in vars(owner)  # a class may inherit it
            self.places.append((owner, attr, original, own, name))
            self.by_id[id(original)] = name
            if isinstance(owner, type):
                self.methods[attr] = name

    def name_of(self, obj: object) -> str | None:
        found = self.by_id.get(id(obj))
        if found is None and isinstance(obj, functools.partial):
            found = self.by_id.get(id(obj.func))
        return found


# torch's own operators behind a forbidden torch function: however the function is reached (a private alias,
# torch.ops.aten, another module's copy, a function kept in a list), the call ends in one of these, which the block
# refuses while the solution runs.
_SOFTMAX_OPS = ("_softmax", "_log_softmax", "_safe_softmax", "_masked_softmax", "_sparse_softmax",
                "_sparse_log_softmax")  # fmt: skip
_ATTENTION_OPS = ("_safe_softmax", "scaled_dot_product_attention", "_scaled_dot_product_attention_math",
                  "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
                  "_scaled_dot_product_efficient_attention", "_native_multi_head_attention")  # fmt: skip
_PAD_OPS = ("constant_pad_nd", "pad", "_pad_enum", "_pad_circular", "reflection_pad1d", "reflection_pad2d",
            "reflection_pad3d", "replication_pad1d", "replication_pad2d", "replication_pad3d")  # fmt: skip
_NORM_OPS = ("native_layer_norm", "layer_norm", "native_group_norm", "group_norm", "native_batch_norm", "batch_norm",
             "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "instance_norm", "rms_norm",
             "_fused_rms_norm")  # fmt: skip
_CONV_OPS = ("convolution", "_convolution", "conv2d", "mkldnn_convolution", "_slow_conv2d_forward",
             "_nnpack_spatial_convolution")  # fmt: skip
_OPS = {
    **dict.fromkeys(("torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax", "torch.nn.Softmax",
                     "torch.log_softmax", "torch.nn.functional.log_softmax", "torch.Tensor.log_softmax",
                     "torch.special.softmax", "torch.special.log_softmax"), _SOFTMAX_OPS),
    **dict.fromkeys(("torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention",
                     "torch.nn.functional.multi_head_attention_forward"), _ATTENTION_OPS),
    # every normalisation computes layer norm on a reshaped input (group norm with one group, batch norm of the
    # transpose, RMS norm of the centred input)
    **dict.fromkeys(("torch.nn.functional.layer_norm", "torch.nn.LayerNorm"), _NORM_OPS),
    "torch.special.entr": ("special_entr",),
    **dict.fromkeys(("torch.xlogy", "torch.special.xlogy", "torch.Tensor.xlogy"), ("xlogy", "xlogy_", "special_xlogy")),
    **dict.fromkeys(("torch.nn.functional.unfold", "torch.nn.Unfold"), ("im2col",)),
    "torch.Tensor.unfold": ("unfold",),
    **dict.fromkeys(("torch.nn.functional.pixel_unshuffle", "torch.nn.PixelUnshuffle"), ("pixel_unshuffle",)),
    **dict.fromkeys(("torch.nn.functional.conv2d", "torch.nn.Conv2d"), _CONV_OPS),
    **dict.fromkeys(("torch.nn.functional.pad", "torch.nn.ZeroPad2d", "torch.nn.ConstantPad2d"), _PAD_OPS),
    "torch.nn.functional.grid_sample": ("grid_sampler", "grid_sampler_2d", "grid_sampler_3d"),
}  # fmt: skip


class _BlockOperators(TorchDispatchMode):
    """Refuses torch's operators behind the forbidden torch functions while the solution runs."""

    def __init__(self, ops: dict[str, str]) -> None:
        super().__init__()
        self.ops = ops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 (torch's signature)
        name = func.overloadpacket.__name__
        if name in self.ops:
            raise AssertionError(
                f"{self.ops[name]} is not allowed in this exercise (reached as torch's operator"
                f" {name}): write it yourself"
            )
        return func(*args, **(kwargs or {}))


def _contents(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # a closure variable not bound yet
        return None


_REACH_LIMIT = 2_000_000  # objects read from one name: a chapter's data is far smaller
_LIBRARY_DIRS = tuple(  # the standard library and the installed packages (never "/" or a user's folder)
    str(Path(sysconfig.get_paths()[key]).resolve()) for key in ("stdlib", "platstdlib", "purelib", "platlib")
)


def _library(fn: types.FunctionType) -> bool:
    """A function of an installed package or the standard library (a decorator's wrapper, say), not one a student
    wrote (in a notebook cell or a file of their own)."""
    try:
        where = str(Path(fn.__code__.co_filename).resolve())
    except (OSError, ValueError):
        return False
    return where.startswith(_LIBRARY_DIRS) or where.startswith(str(Path(__file__).resolve().parents[1]))


def _children(obj: object, where: str) -> list[tuple[str, object]]:
    """What ``obj`` holds, each with the place it is held: a container's items, an object's attributes, a partial's
    function and arguments, a method's function and object, a function's closure, defaults and attributes (not its
    globals: the notebook's names are read one by one), a weak reference's referent, and for any other kind what
    the interpreter says it holds (a deque, a chain, a weak-value dict's table)."""
    if isinstance(obj, weakref.ref):  # a weak reference, or a weak-value dict's entry
        return [(f"{where}()", obj())]
    if isinstance(obj, dict):
        return [(f"{where}[{k!r}]", v) for k, v in obj.items()] + [(f"{where} (a key)", k) for k in obj]
    if isinstance(obj, list | tuple | set | frozenset):
        return [(f"{where}[{i}]", v) for i, v in enumerate(obj)]
    if isinstance(obj, functools.partial):
        return [(where, obj.func), *((where, a) for a in obj.args), *((where, v) for v in obj.keywords.values())]
    if isinstance(obj, staticmethod | classmethod | types.MethodType):
        return [(where, obj.__func__), (where, getattr(obj, "__self__", None))]
    if isinstance(obj, property):
        return [(where, obj.fget), (where, obj.fset), (where, obj.fdel)]
    if inspect.isfunction(obj):
        cells = [_contents(c) for c in obj.__closure__ or ()]
        defaults = [*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]
        return [(where, v) for v in cells + defaults] + [(f"{where}.{k}", v) for k, v in vars(obj).items()]
    if isinstance(obj, type):
        return [(f"{where}.{k}", v) for k, v in vars(obj).items()]
    if isinstance(getattr(obj, "__dict__", None), dict) and not hasattr(obj, "__slots__"):
        return [(f"{where}.{k}", v) for k, v in vars(obj).items()]
    return [(where, v) for v in gc.get_referents(obj) if not isinstance(v, type) or v.__module__ == "__main__"]


def _kept_inside(obj: object, forbidden: _Forbidden, where: str, seen: set[int]) -> str | None:
    """Where a forbidden function is kept inside ``obj``, however deep and in whatever container (None: nowhere).

    A walk over what each object holds (:func:`_children`), breadth first and without a depth limit; modules,
    library classes, tensors and plain values are not entered (the forbidden functions are found by name there).
    ``seen`` is shared by the walks of one check: what one walk read without finding anything is not read again.
    """
    queue = deque([(where, obj)])
    read = 0
    while queue:
        where, obj = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if (name := forbidden.name_of(obj)) is not None:
            return f"{where} holds {name}"
        if isinstance(obj, weakref.ProxyTypes):
            return f"{where} is a weak proxy, which the grader cannot read: keep functions under plain names"
        if obj is None or isinstance(obj, _PLAIN) or (isinstance(obj, type) and obj.__module__ != "__main__"):
            continue
        if isinstance(obj, dict) and id(obj) in _module_dicts():
            continue  # a module's namespace: its functions are found by name
        read += 1
        if read > _REACH_LIMIT:
            return f"{where} holds more than {_REACH_LIMIT:,} objects, more than the grader reads"
        queue.extend(_children(obj, where))
    return None


_PLAIN = (str, bytes, bytearray, int, float, complex, bool, range, torch.Tensor, types.ModuleType, types.CodeType,
          types.FrameType, torch.dtype, torch.device, torch.Generator)  # fmt: skip


def _module_dicts() -> set[int]:
    return {id(vars(m)) for m in list(sys.modules.values()) if m is not None and hasattr(m, "__dict__")}


def _source_tree(fn: Callable) -> ast.AST:
    try:
        source = inspect.getsource(fn)
        return ast.parse(textwrap.dedent(source))
    except (OSError, TypeError, SyntaxError, RecursionError) as error:
        raise AssertionError(f"cannot read the code of {fn!r}: write it as a function in a notebook cell") from error


def _bound_locally(tree: ast.AST) -> set[str]:
    """Names the code binds itself (parameters, assignments, loop variables, imports, nested functions)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def _chain(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None if the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _lookup(scope: list[dict], chain: list[str]) -> list[object]:
    """Every object along ``chain`` that can be found without running the function."""
    for namespace in scope:
        if chain[0] in namespace:
            obj = namespace[chain[0]]
            break
    else:
        return []
    found = [obj]
    for attr in chain[1:]:
        try:
            obj = inspect.getattr_static(obj, attr) if isinstance(obj, type) else getattr(obj, attr)
        except AttributeError:
            break
        found.append(obj)
    return found


def _uses(fn: Callable, forbidden: _Forbidden, seen: set[int], reached: set[int] | None = None) -> list[str]:
    """What ``fn`` (and every notebook function it calls) uses of the forbidden functions: one line each.
    ``seen``: the functions read already; ``reached``: the objects :func:`_kept_inside` walked already."""
    reached = set() if reached is None else reached
    if id(fn) in seen or not inspect.isfunction(fn):
        return []
    seen.add(id(fn))
    tree = _source_tree(fn)
    line0 = fn.__code__.co_firstlineno - 1
    where = f"{fn.__name__}"
    closure = dict(zip(fn.__code__.co_freevars, (_contents(c) for c in fn.__closure__ or ()), strict=True))
    local = _bound_locally(tree) - set(closure)
    scope = [closure, fn.__globals__, vars(builtins)]
    problems = []
    defaults = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    for value in defaults:
        if (kept := _kept_inside(value, forbidden, "a default argument", reached)) is not None:
            problems.append(f"{where} takes a default argument that {kept.split(' ', 3)[-1]}")
    for node in ast.walk(tree):
        line = f"line {line0 + getattr(node, 'lineno', 1)}"
        if isinstance(node, ast.Name | ast.Attribute) and not isinstance(getattr(node, "ctx", None), ast.Store):
            label = node.id if isinstance(node, ast.Name) else node.attr
            if label in DYNAMIC:
                problems.append(f"{where} looks names up at run time ({label}, {line}): call functions directly")
                continue
            if isinstance(node, ast.Attribute) and node.attr in forbidden.methods:
                problems.append(f"{where} calls {forbidden.methods[node.attr]} (.{node.attr}, {line})")
                continue
            chain = _chain(node)
            if chain is None or chain[0] in local:
                continue
            found = _lookup(scope, chain)
            if found and (kept := _kept_inside(found[0], forbidden, chain[0], reached)) is not None:
                problems.append(f"{where} uses {chain[0]} ({line}), and {kept}")
                continue
            for obj in found:
                if (name := forbidden.name_of(obj)) is not None:
                    problems.append(f"{where} uses {name} (as {'.'.join(chain)}, {line})")
                    break
                if inspect.isfunction(obj) and obj.__globals__ is fn.__globals__:
                    problems += _uses(obj, forbidden, seen, reached)  # a helper written in the notebook
                elif isinstance(obj, type) and obj.__module__ == fn.__module__:
                    for method in vars(obj).values():  # a class written in the notebook
                        if inspect.isfunction(method) and method.__globals__ is fn.__globals__:
                            problems += _uses(method, forbidden, seen, reached)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            problems += _imported(node, forbidden, where, line)
    return list(dict.fromkeys(problems))


def _imported(node: ast.ImportFrom, forbidden: _Forbidden, where: str, line: str) -> list[str]:
    """The forbidden functions that a solution's ``from module import name`` brings in, one line each."""
    found = []
    for alias in node.names:
        try:
            obj = _resolve(f"{node.module}.{alias.name}")
        except (ValueError, AttributeError):
            continue
        if (name := forbidden.name_of(obj)) is not None:
            found.append(f"{where} imports {name} ({line})")
    return found


def check_written(solution: Callable, *names: str) -> None:
    """Fail (``AssertionError``) if the code of ``solution`` uses any of the named functions.

    Reads the function's source as written (its syntax tree) and resolves every name it uses in the notebook's
    namespace, so an alias bound in any cell (``sm = torch.softmax``, ``from attn import attend as a``), a
    default argument, a closure, an import inside the function, a method call (``x.softmax(-1)``) and a helper
    the notebook defines are all found. Run-time lookups (``getattr``, ``eval``, ``__dict__``) are refused.
    """
    _check_written(solution, _Forbidden(names))


def _written(solution: object) -> list[types.FunctionType]:
    """The functions a student wrote that calling ``solution`` runs: the solution itself or, under a library's
    decorator (``@torch.no_grad()``, ``functools.cache``), the function it wraps, found through ``__wrapped__`` and
    the wrapper's closure (so a ``__wrapped__`` set by hand hides nothing)."""
    written, stack, seen = [], [solution], set()
    while stack:
        obj = stack.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        if inspect.isfunction(obj) and not _library(obj):
            written.append(obj)
        elif inspect.isfunction(obj):  # a library's wrapper: what it wraps
            stack += [getattr(obj, "__wrapped__", None), *(_contents(c) for c in obj.__closure__ or ())]
        elif callable(obj) and not isinstance(obj, type | types.ModuleType | types.BuiltinFunctionType):
            stack.append(getattr(obj, "__wrapped__", None))  # functools.cache's wrapper, say
    return written


def _check_written(solution: Callable, forbidden: _Forbidden) -> None:
    name = forbidden.name_of(solution)
    written = [] if name else _written(solution)
    if not written:
        what = f"is {name}" if name else f"is {type(solution).__name__} {solution!r}, not a function written here"
        raise AssertionError(f"the solution {what}: this exercise asks you to write it yourself")
    for fn in written:
        typed_in = fn.__globals__.get("__name__") == "__main__"  # in a notebook cell, not imported from a file
        cell = "".join(linecache.getlines(fn.__code__.co_filename)) if typed_in else ""
        broken = refusals(cell) if cell else []
        if broken:
            listed = "; ".join(broken)
            raise AssertionError(
                f"the cell of {fn.__name__}: {listed}. Write the solution with public functions"
                " and change nothing outside it: this exercise asks you to write it yourself"
            )
    seen: set[int] = set()
    reached: set[int] = set()
    problems = [p for fn in written for p in _uses(fn, forbidden, seen, reached)]
    if (kept := _kept_inside(solution, forbidden, "the solution", reached)) is not None:  # a wrapper's closure
        problems.append(kept)
    if problems:
        listed = "; ".join(dict.fromkeys(problems))
        raise AssertionError(f"{listed}: this exercise asks you to write it yourself")


def _check_untouched() -> None:
    """Fail if torch, attn, math or builtins were changed since the grader first looked: the checks rely on them."""
    changed = changes()
    if changed:
        listed = ", ".join(changed[:6]) + (" ..." if len(changed) > 6 else "")
        raise AssertionError(
            f"the notebook changed {listed}: a solution may not change the library (the checks compare with it)"
        )


def fresh_generator() -> torch.Generator:
    """A generator seeded at grading time, for hidden tests: their inputs cannot be known, or tabulated, in
    advance (the seed is in the generator, ``initial_seed()``, to repeat a failure)."""
    return torch.Generator().manual_seed(secrets.randbits(62))


@contextmanager
def forbid(*names: str, solution: Callable) -> Iterator[None]:
    """Check ``solution`` and the library, then run the block with the named functions blocked.

    Every autograder cell calls the student's function only inside this block (no names: nothing is forbidden,
    the rest still holds). Before the block, the library must be as the grader first saw it (nothing patched:
    :func:`attn.book.tampering.changes`), the solution's cell must keep the rules of
    :func:`attn.book.tampering.refusals`, and :func:`check_written` reads the solution's code, following names,
    containers, objects' attributes, closures and defaults to any forbidden function. Inside the block each
    function is replaced wherever ``attn`` or the notebook binds it, and torch's operators behind a forbidden
    torch function are refused however they are reached. After the block the library must again be untouched.
    """
    _check_untouched()
    forbidden = _Forbidden(names)
    _check_written(solution, forbidden)
    namespace = _caller_globals()
    places, targets = list(forbidden.places), forbidden.by_id
    for module_name, module in list(sys.modules.items()):
        if module_name == "attn" or module_name.startswith("attn."):
            for attr, value in list(vars(module).items()):
                if id(value) in targets and not any(o is module and a == attr for o, a, *_ in places):
                    places.append((module, attr, value, True, targets[id(value)]))
    aliased = [(key, value) for key, value in namespace.items() if id(value) in targets]

    def blocker(name: str) -> Callable:
        def blocked(*args: object, **kwargs: object) -> None:
            raise AssertionError(f"{name} is not allowed in this exercise: write it yourself")

        return blocked

    ops = {op: name for name in names for op in _OPS.get(name, ())}
    try:
        for owner, attr, _, _, name in places:
            setattr(owner, attr, blocker(name))
        for key, value in aliased:
            namespace[key] = blocker(targets[id(value)])
        with _BlockOperators(ops) if ops else nullcontext():
            yield
    finally:
        for key, value in aliased:
            namespace[key] = value
        for owner, attr, original, own, _ in reversed(places):
            if own:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)
    _check_untouched()


def grade_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The autograder cells of a notebook (nbgrader ``grade: true`` code cells)."""
    return [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]


def student_version(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return the student version of a solution notebook (the input is not modified)."""
    try:
        import nbgrader  # noqa: F401 (an optional dependency: attn[grading])
    except ModuleNotFoundError:
        raise ValueError("student versions need nbgrader: pip install 'attn[grading]' (or nbgrader)") from None
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearHiddenTests,
        ClearMarkScheme,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
    )

    nb = nbformat.from_dict(nb)  # a deep copy
    resources: dict = {}
    for pre in (CheckCellMetadata(), LockCells(), ClearSolutions(), ClearOutput(), ClearHiddenTests(),
                ClearMarkScheme(), ComputeChecksums(), CheckCellMetadata()):  # fmt: skip
        nb, resources = pre.preprocess(nb, resources)
    nb.metadata.pop("widgets", None)  # the saved widget state shows the instructor's run
    return nb


def write_assignments(source: Path, target: Path, force: bool = False) -> list[Path]:
    """Write the student version of every notebook with exercises in ``source`` into ``target``.

    Refuses to overwrite an existing file (an instructor may have edited it) unless ``force``.
    """
    source, target = Path(source), Path(target)
    apart = source.resolve() != target.resolve()
    check(apart, f"target {target} is the source folder: it would overwrite the solutions")
    notebooks = [(p, nbformat.read(p, as_version=4)) for p in sorted(source.glob("*.ipynb"))]
    notebooks = [(p, nb) for p, nb in notebooks if grade_cells(nb)]
    existing = [target / p.name for p, _ in notebooks if (target / p.name).exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise FileExistsError(f"{names} already exist(s); pass --force (make assignments FORCE=1) to overwrite")
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for path, nb in notebooks:
        out = target / path.name
        nbformat.write(student_version(nb), out)
        written.append(out)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn.book.grading", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="folder of solution notebooks (e.g. notebooks)")
    parser.add_argument("target", type=Path, help="folder for the student versions")
    parser.add_argument("--force", action="store_true", help="overwrite student versions that exist")
    args = parser.parse_args(argv)
    try:
        written = write_assignments(args.source, args.target, force=args.force)
    except (FileExistsError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
