"""What the argument checks cost (issue 50): lines of checks against lines of math in five functions, the checks'
host synchronisations per call, and the time of one DNC and one NTM step against their own LSTM controller.

    python benchmarks/checks.py [--threads 1] [--repeats 15]

Table 1 reads each function's source with ``ast``: its body without the docstring, a statement at a time. A
statement is a check when it raises, is an ``if`` whose branch ends in a raise, or calls a checker (a name starting
with ``check``, ``_check`` or ``require``, or ``same_lead``, ``per_row``); every other line is math. A function
decorated with ``@checked(door)`` adds its door checker's lines to its check lines (they are what a reader of the
function must also read), and so do the module's own ``_check...`` helpers that the body calls. "Checker calls"
counts, by tracing one call with ``sys.setprofile``, the calls into ``attn/_checks.py`` and into functions named
``check...``/``_check...``/``_...args`` (the one-line rule ``check(ok, message)`` and the checkers' own helpers not
counted); "host syncs" counts
``aten::_local_scalar_dense`` (a ``bool(tensor)``, ``tensor.item()`` or ``int(tensor)``: on a GPU each makes the host
wait for the device) during one call, with a ``TorchDispatchMode``.

Table 2: one step (forward and backward of one time step, averaged over a 10-step sequence) of the chapter-4 DNC and
NTM at batch 32; the reference is the model's own ``nn.LSTMCell`` controller doing the same step, measured in the
same run (a step can never cost less than its controller).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import sys
import textwrap
from pathlib import Path

import torch
from common import paired_medians
from torch.utils._python_dispatch import TorchDispatchMode

import attn
from attn.blocks import MultiHeadAttention
from attn.functional import content_addressing
from attn.memn2n import MemN2N, MemN2NConfig
from attn.memory import DNC, NTM, DNCConfig, NTMConfig

CHECKERS = ("check", "_check", "require")
CHECKER_NAMES = {"same_lead", "per_row", "check_shapes"}
LIBRARY = str(Path(attn.__file__).parent)


def _called_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        f = node.func
        return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return ""


def _is_check(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Raise):
        return True
    if isinstance(statement, ast.If):
        return any(isinstance(s, ast.Raise) for s in statement.body[-1:] + statement.orelse[-1:])
    for node in ast.walk(statement):
        name = _called_name(node)
        if name.startswith(CHECKERS) or name in CHECKER_NAMES:
            return True
    return False


def _body(function) -> list[ast.stmt]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(function))))
    body = tree.body[0].body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body


def _lines(statement: ast.stmt) -> int:
    return statement.end_lineno - statement.lineno + 1


def split_lines(function) -> tuple[int, int]:
    """(lines of math, lines of checks) in ``function``'s own body, its door checker's lines counted as checks."""
    math_, checks = 0, 0
    for statement in _body(function):
        if _is_check(statement):
            checks += _lines(statement)
        else:
            math_ += _lines(statement)
    door = getattr(function, "check", None)
    if door is not None:
        checks += sum(_lines(statement) for statement in _body(door))
    for name in _private_checkers(function):  # checks kept in the module's own helpers count too
        checks += sum(_lines(statement) for statement in _body(inspect.unwrap(function).__globals__[name]))
    return math_, checks


def _private_checkers(function) -> set[str]:
    """The module-level ``_check...`` functions that ``function``'s body calls."""
    names = set()
    namespace = inspect.unwrap(function).__globals__
    for statement in _body(function):
        for node in ast.walk(statement):
            name = _called_name(node)
            if name.startswith("_check") and inspect.isfunction(namespace.get(name)):
                names.add(name)
    return names


def _is_checker(code) -> bool:
    name = code.co_name
    machinery = ("door", "check", "<lambda>", "_from_the_library")  # the decorator itself and the one-line rule
    return code.co_filename.endswith("_checks.py") and name not in machinery or name.startswith(
        ("check", "_check")) or (name.startswith("_") and name.endswith("_args"))  # fmt: skip


class _SyncCount(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.syncs = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.syncs += 1
        return func(*args, **(kwargs or {}))


def per_call(fn) -> tuple[int, int]:
    """(checker calls, host syncs) during one ``fn()``."""
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        code, caller = frame.f_code, frame.f_back.f_code if frame.f_back else None
        inner = caller is not None and caller.co_filename.endswith("_checks.py") and caller.co_name != "door"
        if event == "call" and code.co_filename.startswith(LIBRARY) and _is_checker(code) and not inner:
            calls += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    with _SyncCount() as counter:
        fn()
    return calls, counter.syncs


def functions():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16)
    memory, key = torch.randn(2, 16, 8), torch.randn(2, 8)
    mha = MultiHeadAttention(64, 4)
    x = torch.randn(2, 8, 64)
    dnc = DNC(DNCConfig(input_size=9, output_size=8))
    bits = torch.randn(2, 10, 9)
    memn2n = MemN2N(MemN2NConfig(vocab_size=20, d=16, memory_size=10, hops=3))
    story, query = torch.randint(1, 20, (2, 10, 6)), torch.randint(1, 20, (2, 6))
    lengths = torch.tensor([10, 7])
    return [
        ("content_addressing", content_addressing, lambda: content_addressing(key, memory, 2.0)),
        ("scaled_dot_product_attention", attn.scaled_dot_product_attention,
         lambda: attn.scaled_dot_product_attention(q, k, v)),
        ("MultiHeadAttention.forward", MultiHeadAttention.forward, lambda: mha(x, x, x)),
        ("MemN2N.forward", MemN2N.forward, lambda: memn2n(story, query, lengths)),
        ("DNC.forward (10 steps)", DNC.forward, lambda: dnc(bits)),
    ]  # fmt: skip


def _step_time(model: torch.nn.Module, repeats: int, B: int = 32, T: int = 10) -> tuple[float, float]:
    """Seconds per time step of ``model`` and of its ``nn.LSTMCell`` controller alone, forward and backward."""
    x = torch.randn(B, T, 9)
    controller = model.controller
    extra = x.new_zeros(B, controller.input_size - 9)  # the reads the controller also sees

    def step_model():
        model(x).logits.sum().backward()

    def step_controller():
        state, outs = None, []
        for t in range(T):
            h, c = state = controller(torch.cat([x[:, t], extra], -1), state)
            outs.append(h)
        torch.stack(outs).sum().backward()

    model_s, controller_s = paired_medians([step_model, step_controller], repeats)
    return model_s / T, controller_s / T


def step_times(repeats: int) -> list[tuple[str, float, float]]:
    models = {"DNC": DNC(DNCConfig(input_size=9, output_size=8)), "NTM": NTM(NTMConfig(input_size=9, output_size=8))}
    return [(name, *_step_time(model, repeats)) for name, model in models.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print("Table 1: checks and math, per function (lines in its source; checker calls and host syncs per call)")
    print(f"| {'function':<30} | math lines | check lines | checker calls | host syncs |")
    print(f"| {'-' * 30} | ---------- | ----------- | ------------- | ---------- |")
    for name, function, call in functions():
        m, c = split_lines(function)
        run, syncs = per_call(call)
        print(f"| {name:<30} | {m:>10} | {c:>11} | {run:>13} | {syncs:>10} |")
    files = list(Path(LIBRARY).rglob("*.py"))
    raises = sum(p.read_text().count("raise ValueError") for p in files)
    outside = sum(p.read_text().count("raise ValueError") for p in files if p.name != "_checks.py")
    print(f"\n`raise ValueError` in attn/: {raises}, outside attn/_checks.py: {outside}")
    print(f"\nTable 2: one time step, forward and backward, batch 32, {args.threads} thread(s) (median ms)")
    print("| model | step (ms) | its LSTMCell controller (ms) | ratio |")
    print("| ----- | --------- | ---------------------------- | ----- |")
    for name, model_s, controller_s in step_times(args.repeats):
        print(f"| {name} | {model_s * 1e3:9.3f} | {controller_s * 1e3:28.3f} | {model_s / controller_s:5.1f} |")


if __name__ == "__main__":
    main()
