"""Every argument check of the library: one rule, one message style (the argument's name, what it must be, what it
was: ``ValueError("key has length 5 but value has length 4")``). Hand-written rather than annotation-driven, so
that a student reads one sentence about the argument they passed (see ARCHITECTURE.md).

Checks run once, at the door. A public function names its checks in one line, ``@checked(_attention_args)``, and
its body is the equation alone; the checker reads as one line per argument
(``check_shapes(query=(query, "... Tq d_k"), key=(key, "... Tk d_k"))``). Inside a checked call, the library's
own calls of its other checked functions (a model's forward calling attention at every layer, a DNC calling ten
memory functions at every step) run their equations only: their inputs come from code checked at the door. A call
from anywhere else (a user's hook or callback, a student's function) is checked, wherever it runs."""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import sys
import types
from collections.abc import Callable, Container
from contextvars import ContextVar
from typing import Any, Protocol, TypeGuard, cast

import torch

__all__ = [
    "checked",
    "check",
    "check_shapes",
    "check_positive_int",
    "check_nonnegative_int",
    "check_dropout",
    "check_positive_number",
    "check_query_key",
    "check_attention",
    "overflow_error",
    "check_finite_number",
    "check_in_range",
    "check_choice",
    "check_same_dtype",
    "check_mask",
    "check_size",
    "check_positive_ints",
    "check_sequences",
    "shape_of",
    "describe",
    "require_tensor",
    "broadcast_shapes",
    "same_lead",
    "per_row",
    "check_distribution",
    "check_tokens",
    "check_images",
    "check_dtype_of",
    "check_question",
    "is_real_number",
]

Shape = tuple[int, ...]

_INSIDE = ContextVar("attn_inside_a_checked_call", default=False)
_TORCH = os.path.dirname(torch.__file__) + os.sep


class Checked(Protocol):
    """What :func:`checked` returns: the function, called as before, with its checks as ``.check`` (for code that
    checks at its own door the arguments it will pass on)."""

    check: Callable[..., object]

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def checked(check: Callable[..., object], after: Callable[..., object] | None = None) -> Callable:
    """Decorate a function (or a module's ``forward``) with the checks of its arguments: ``check`` takes the same
    parameters and raises a ValueError for bad input; ``after(result, *args)`` checks what only the result shows
    (scores that overflowed). Both run unless the call comes from the library's own code inside a checked call (a
    model's layers, a DNC's steps): a call from any other code, a user's hook or callback or a student's function
    among them, is checked wherever it runs. While torch exports a graph (``torch.onnx.export``,
    ``torch.export``) the checks are skipped: the graph is for any input, and they read values it does not have."""

    def decorate(function: Callable) -> Checked:
        def parameters(f: Callable) -> list[tuple]:
            return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]

        if parameters(check) != parameters(function):
            raise TypeError(f"{check.__qualname__} must take the parameters of {function.__qualname__}, defaults too")

        @functools.wraps(function)
        def door(*args, **kwargs):
            if _INSIDE.get() and _from_the_library(sys._getframe(1)):  # its inputs were checked at the door
                return function(*args, **kwargs)
            if torch.compiler.is_exporting():  # a graph for any input: its checks read values it does not have
                return function(*args, **kwargs)
            check(*args, **kwargs)
            token = _INSIDE.set(True)
            try:
                result = function(*args, **kwargs)
                if after is not None:
                    after(result, *args, **kwargs)
            finally:
                _INSIDE.reset(token)
            return result

        checked_door = cast(Checked, door)  # functools.wraps's type knows nothing of .check
        checked_door.check = check
        return checked_door

    return decorate


def _from_the_library(frame: types.FrameType | None) -> bool:
    """Whether a call was made by attn's own code (torch's module machinery in between, ``Module.__call__``, does
    not count): hooks and callbacks are the caller's code, and their calls are checked."""
    while frame is not None and frame.f_code.co_filename.startswith(_TORCH):
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "attn"


def check(ok: object, message: str | Callable[[], str]) -> None:
    """A ValueError with ``message`` unless ``ok`` (one line per rule, as ``torch._check``); a callable message is
    built only when the check fails (for messages that read a tensor's values)."""
    if not ok:
        raise ValueError(message() if callable(message) else message)


def is_real_number(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a real number (an int, a float, a NumPy scalar: any ``numbers.Real``), a bool excepted.
    To the type checker it is then a float, which stands for every real number there."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


def check_positive_int(name: str, value: object) -> int:
    """``value`` if it is an int >= 1, else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def check_nonnegative_int(name: str, value: object) -> int:
    """``value`` if it is an int >= 0, else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return int(value)


def check_positive_number(name: str, value: object) -> float:
    """``value`` if it is a finite real number > 0 (a learning rate, a clipping norm, a temperature), else a
    ValueError naming ``name``: one rule for every setting."""
    try:
        ok = is_real_number(value) and 0 < float(value) < math.inf
    except OverflowError:  # an int too large for a float
        ok = False
    check(ok, f"{name} must be a positive finite number, got {value!r}")
    return float(cast(numbers.Real, value))


def check_positive_ints(config: object, *names: str) -> None:
    """Every named field of ``config`` (a dataclass of sizes) is a positive int, else a ValueError naming it."""
    for name in names:
        check_positive_int(name, getattr(config, name))


def check_size(what: str, numbers_: int, limit: int = 10**8) -> None:
    """Refuse, before allocating, a tensor of ``numbers_`` elements beyond ``limit`` (10^8 numbers, 400 MB of
    float32): a ValueError naming ``what`` was asked for, instead of a machine brought down by its memory."""
    if numbers_ > limit:
        raise ValueError(
            f"{what} would hold {numbers_:,} numbers, more than the {limit:,} this book allows in one tensor"
        )


def check_dropout(value: object) -> float:
    """``value`` if it is a probability in [0, 1), else a ValueError."""
    if not is_real_number(value) or not 0 <= value < 1:
        raise ValueError(f"dropout must be a probability in [0, 1), got {value!r}")
    return float(value)


def check_finite_number(name: str, value: object) -> float:
    """``value`` as a float if it is a finite real number, else a ValueError naming ``name``."""
    check(is_real_number(value), lambda: f"{name} must be a real number, got {type(value).__name__}")
    try:
        value = float(cast(numbers.Real, value))
    except OverflowError:
        raise ValueError(f"{name} must be a finite number, got one too large for a float") from None
    check(math.isfinite(value), f"{name} must be a finite number, got {value}")
    return value


def check_in_range(name: str, value: object, low: float = -math.inf, high: float = math.inf) -> float:
    """``value`` as a float if it is a real number in ``[low, high]``, else a ValueError naming ``name``."""
    ok = is_real_number(value) and low <= value <= high
    check(ok, lambda: f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
    return float(cast(numbers.Real, value))


def check_choice(name: str, value: object, choices: Container[object]) -> object:
    """``value`` if it is one of ``choices``, else a ValueError naming ``name`` and the choices."""
    check(isinstance(value, str | int | float | None | tuple) and value in choices,
          lambda: f"{name} must be one of {sorted(choices) if isinstance(choices, set | frozenset) else choices}, "
          f"got {value!r}")  # fmt: skip
    return value


# ---------------------------------------------------------------------------------------------------- tensors


def shape_of(t: torch.Tensor) -> tuple[int, ...]:
    """A tensor's shape as a plain tuple, for messages."""
    return tuple(t.shape)


def describe(x: object) -> object:
    """A tensor's shape, or the type of anything else (for error messages)."""
    return shape_of(x) if isinstance(x, torch.Tensor) else type(x).__name__


_DTYPES = {"float": "a floating-point", "int": "an integer", "bool": "a bool", "any": "a"}


def _dtype_ok(kind: str, x: torch.Tensor) -> bool:
    if kind == "float":
        return x.is_floating_point()
    if kind == "int":
        return not x.is_floating_point() and not x.is_complex() and x.dtype != torch.bool
    return kind == "any" or x.dtype == torch.bool


def check_shapes(**specs: tuple[object, str] | int) -> dict[str, int]:
    """The tensors' shapes, one argument a keyword: ``check_shapes(query=(query, "... Tq d_k"), key=(key, "... Tk
    d_k"))``. A spec names the axes; a name used twice must have one size (``d_k`` above), ``...`` is any number of
    leading (batch) axes, which must broadcast together, and an int keyword fixes a name's size
    (``check_shapes(x=(x, "B T input_size"), input_size=9)``). A spec may start with the dtype it wants: ``float``
    (the default), ``int``, ``bool`` or ``any``. Returns the sizes by name."""
    sizes: dict[str, int] = {name: value for name, value in specs.items() if isinstance(value, int)}
    first: dict[str, tuple[str, tuple[int, ...]]] = {name: ("", ()) for name in sizes}  # "": fixed by a keyword
    lead: tuple[str, tuple[int, ...], tuple[int, ...]] | None = None
    for name, spec in specs.items():
        if not isinstance(spec, int):
            lead = _check_one_shape(name, *spec, sizes, first, lead)
    return sizes


def _check_one_shape(
    name: str, x: object, spec: str, sizes: dict[str, int], first: dict, lead: tuple | None
) -> tuple | None:
    """One argument of :func:`check_shapes`: binds its axes' sizes in ``sizes``; returns the batch shape so far."""
    axes = spec.split()
    kind = axes.pop(0) if axes and axes[0] in _DTYPES else "float"
    batch = bool(axes) and axes[0] == "..."
    axes = axes[1:] if batch else axes
    shown = ", ".join(["...", *axes] if batch else axes)
    check(isinstance(x, torch.Tensor), lambda: f"{name} must be a torch.Tensor, got {type(x).__name__}")
    x = cast(torch.Tensor, x)  # the check raised unless it is one
    shape = tuple(x.shape)
    if batch:
        k = len(axes)
        check(len(shape) >= k, lambda: f"{name} must have at least {k} dimensions, got shape {shape} (want ({shown}))")
    else:
        check(len(shape) == len(axes), lambda: f"{name} must be a ({shown}) tensor, got shape {shape}")
    check(_dtype_ok(kind, x), lambda: f"{name} must be {_DTYPES[kind]} tensor, got dtype {x.dtype} (shape {shape})")
    for axis, size in zip(axes, shape[len(shape) - len(axes) :], strict=True):
        _check_axis(name, shape, shown, axis, size, sizes, first)
    if not batch:
        return lead
    mine = shape[: len(shape) - len(axes)]
    if lead is None:
        return (name, shape, mine)
    joined = broadcast_shapes(lead[2], mine)
    other, other_shape, _ = lead
    what = f"the leading (batch) dimensions of {other} {other_shape} and {name} {shape}"
    check(joined is not None, lambda: f"{what} do not broadcast")
    return (lead[0], lead[1], joined)


def _check_axis(name: str, shape: tuple, shown: str, axis: str, size: int, sizes: dict, first: dict) -> None:
    """One axis of one argument: a fixed size, a new name (bound here), or a name bound before (the same size)."""
    if axis.isdigit():
        check(size == int(axis), lambda: f"{name} must be ({shown}) with {axis} there, got shape {shape}")
    elif axis not in sizes:
        sizes[axis], first[axis] = size, (name, shape)
    elif not first[axis][0]:
        check(size == sizes[axis], lambda: f"{name} must have {axis}={sizes[axis]} ({shown}), got shape {shape}")
    else:
        other, other_shape = first[axis]
        check(size == sizes[axis], lambda: f"{other} and {name} must have the same {axis}, got {other} "
              f"{other_shape} ({axis}={sizes[axis]}) and {name} {shape} ({axis}={size})")  # fmt: skip


def check_same_dtype(**tensors: torch.Tensor) -> None:
    """The tensors share one dtype, else a ValueError naming each one's."""
    if len({t.dtype for t in tensors.values()}) > 1:
        got = ", ".join(f"{name} {t.dtype}" for name, t in tensors.items())
        *first, last = tensors
        raise ValueError(f"{', '.join(first)} and {last} must share a dtype, got {got}")


def check_mask(mask: object, scores_shape: tuple[int, ...], device: torch.device) -> None:
    """``mask`` is a bool tensor (``True`` = may attend) on ``device`` that broadcasts to ``scores_shape``."""
    check(isinstance(mask, torch.Tensor), lambda: f"mask must be a bool torch.Tensor, got {type(mask).__name__}")
    mask = cast(torch.Tensor, mask)  # the check raised unless it is one
    check(mask.dtype == torch.bool, lambda: f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}; "
          "for a float mask of 0/-inf use mask == 0")  # fmt: skip
    check(mask.device == device, lambda: f"mask is on {mask.device} but the scores are on {device}")
    check(broadcast_shapes(tuple(mask.shape), tuple(scores_shape)) == tuple(scores_shape),
          lambda: f"mask of shape {shape_of(mask)} does not broadcast to the scores' shape (..., Tq, Tk) = "
          f"{tuple(scores_shape)}")  # fmt: skip


def check_float_tensor(name: str, x: object, shape: tuple[int, ...], letters: str, what: str = "") -> None:
    """``x`` is a floating-point tensor of exactly ``shape`` (``letters`` names its axes), else a ValueError."""
    if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape or not x.is_floating_point():
        what = f", {what}" if what else ""
        raise ValueError(f"{name} must be a float ({letters}) = {shape} tensor{what}, got {describe(x)}")


def require_tensor(name: str, x: object, min_dim: int = 1) -> None:
    """``x`` is a floating-point tensor with at least ``min_dim`` dimensions, else a ValueError naming ``name``."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions, got shape {shape_of(x)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype} (shape {shape_of(x)})")


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy broadcasting of two shapes, or None if they do not broadcast (``torch.broadcast_shapes`` costs
    ~50 µs a call, more than the attention it guards at a decoder step's size)."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def same_lead(what: str, **tensors: tuple[torch.Tensor, int]) -> None:
    """The leading dimensions (all but the last ``k`` of each tensor) must broadcast together."""
    shape: tuple[int, ...] | None = ()
    for t, k in tensors.values():
        shape = broadcast_shapes(shape, tuple(t.shape[: t.dim() - k])) if shape is not None else None
    if shape is None:
        got = ", ".join(f"{name} {tuple(t.shape)}" for name, (t, _) in tensors.items())
        raise ValueError(f"{what}: the leading (batch) dimensions do not broadcast, got {got}")


def per_row(
    name: str, value: torch.Tensor | float, *weights: torch.Tensor, low: float | None = None, high: float | None = None
) -> torch.Tensor:
    """A number, or a tensor of one value per weighting (its shape broadcasts *to* the weightings' leading shape),
    as a tensor with a trailing axis ``(..., 1)`` ready to multiply the ``(..., N)`` weightings. With ``low`` and
    ``high``, every value must be a finite number in ``[low, high]`` (a gate in [0, 1], a sharpening γ >= 1)."""
    value = torch.as_tensor(value, dtype=weights[0].dtype, device=weights[0].device)
    lead: tuple[int, ...] = ()
    for w in weights:
        lead = broadcast_shapes(lead, tuple(w.shape[:-1])) or lead
    if broadcast_shapes(tuple(value.shape), lead) != lead:
        raise ValueError(
            f"{name} must be a number or have one value per weighting, shape {lead} (or broadcastable to it), "
            f"got shape {tuple(value.shape)}"
        )
    if (low is not None or high is not None) and value.numel():
        lo, hi = -math.inf if low is None else low, math.inf if high is None else high
        inside = torch.isfinite(value) & (value >= lo) & (value <= hi)  # NaN fails too
        if not bool(inside.all()):
            bad = float(value[~inside].flatten()[0])
            where = "" if value.dim() == 0 else f" (shape {tuple(value.shape)})"
            wanted = f">= {lo:g}" if high is None else f"<= {hi:g}" if low is None else f"in [{lo:g}, {hi:g}]"
            raise ValueError(f"{name} must be a finite number {wanted}, got {bad:.4g}{where}")
    return value.unsqueeze(-1)


def check_distribution(name: str, weights: torch.Tensor, atol: float = 1e-3, allow_empty: bool = False) -> None:
    """Every row ``(..., N)`` of ``weights`` is a distribution: no negative entry, a sum of 1 (within ``atol``), or
    with ``allow_empty`` also all zeros (attention's row that had nothing to attend to)."""
    if not weights.numel():
        return
    sums = weights.sum(-1)
    rows_ok = ((sums - 1).abs() <= atol) | ((sums == 0) if allow_empty else False)
    if not bool((weights >= 0).all() & rows_ok.all()):  # NaN fails too
        raise ValueError(
            f"{name} must be a distribution over its last axis (entries >= 0, each row summing to 1), got entries from"
            f" {float(weights.min()):.4g} to {float(weights.max()):.4g} and row sums from"
            f" {float(sums.min()):.4g} to {float(sums.max()):.4g}"
        )


def check_tokens(name: str, tokens: object, vocab_size: int) -> None:
    """A ValueError naming ``name`` unless ``tokens`` is a ``(B, T)`` integer tensor of ids below ``vocab_size``."""
    if not isinstance(tokens, torch.Tensor):
        raise ValueError(f"{name} must be a (B, T) tensor of token ids, got {type(tokens).__name__}")
    if tokens.dim() != 2 or tokens.dtype not in (torch.int64, torch.int32) or tokens.shape[1] == 0:
        raise ValueError(f"{name} must be a (B, T) int64 tensor with T >= 1, got {tokens.dtype} {shape_of(tokens)}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size):
        raise ValueError(
            f"{name} holds ids in [{int(tokens.min())}, {int(tokens.max())}] but the vocabulary has {vocab_size}"
        )


def check_images(
    images: object, channels: int | None = None, size: int | None = None, model: torch.nn.Module | None = None
) -> tuple[int, int, int, int]:
    """``B, C, H, W`` of a float ``(B, C, H, W)`` image batch, else a ValueError naming ``images``. For a ``model``'s
    input the batch must hold an image and be in the model's dtype."""
    require_tensor("images", images, 4)
    images = cast(torch.Tensor, images)  # require_tensor raised unless it is one
    if images.dim() != 4 or not images.is_floating_point():
        raise ValueError(f"images must be a float (B, C, H, W) tensor, got {images.dtype} {shape_of(images)}")
    B, C, H, W = images.shape
    if channels is not None and C != channels:
        raise ValueError(f"images must have {channels} channels (B, {channels}, H, W), got {shape_of(images)}")
    if size is not None and (H, W) != (size, size):
        raise ValueError(f"images must be {size} x {size} pixels, got {shape_of(images)}")
    if model is not None:
        if B == 0:
            raise ValueError(f"images must hold at least one image, got {shape_of(images)}")
        check_dtype_of("images", images, model, "model")
    return B, C, H, W


def check_question(question: object, B: int, num_questions: int) -> None:
    """A ValueError naming ``question`` unless it is ``(B,)`` int64 ids below ``num_questions``."""
    if not isinstance(question, torch.Tensor):
        raise ValueError(f"question must be a ({B},) tensor of int64 ids, got {type(question).__name__}")
    if question.shape != (B,) or question.dtype != torch.int64:
        raise ValueError(f"question must be ({B},) int64 ids, one per image, got {question.dtype} {shape_of(question)}")
    if B and (int(question.min()) < 0 or int(question.max()) >= num_questions):
        raise ValueError(f"question holds ids in [{int(question.min())}, {int(question.max())}], "
                         f"but there are {num_questions} questions")  # fmt: skip


def check_sequences(x: object, input_size: int, model: torch.nn.Module) -> tuple[int, int]:
    """``B, T`` of a finite float ``(B, T, input_size)`` batch, B and T >= 1, in the ``model``'s dtype, else a
    ValueError naming ``x`` (a recurrent model's input: a bad value would surface steps later, far from its cause)."""
    ok = isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() == 3 and x.shape[-1] == input_size
    got = lambda: f"shape {tuple(x.shape)}, dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__  # noqa: E731
    check(ok, lambda: f"x must be a float tensor (B, T, input_size={input_size}), got {got()}")
    x = cast(torch.Tensor, x)  # the check raised unless it is one
    check(0 not in x.shape,
          f"x must hold at least one sequence of at least one step (B, T >= 1), got {tuple(x.shape)}")  # fmt: skip
    check_dtype_of("x", x, model, "model")
    if not bool(torch.isfinite(x).all()):
        bad = (~torch.isfinite(x)).nonzero()[0].tolist()
        raise ValueError(f"x must be finite, got NaN or infinite values (the first at batch {bad[0]}, step {bad[1]})")
    return x.shape[0], x.shape[1]


def check_dtype_of(name: str, x: torch.Tensor, module: torch.nn.Module, what: str = "layer") -> None:
    """``x`` has the dtype of ``module``'s weights (outside autocast), else a ValueError that says how to convert:
    one rule for every module that multiplies an input by its weights."""
    weight = next(module.parameters(), None)
    if weight is not None and x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
        raise ValueError(
            f"{name} has dtype {x.dtype} but the {what}'s weights are {weight.dtype}: convert one to the other "
            f"(e.g. {name}.to({weight.dtype}) or {what}.to({x.dtype}))"
        )


# -------------------------------------------------------------------------------------------- attention


def check_query_key(query: torch.Tensor, key: torch.Tensor) -> dict[str, int]:
    """query ``(..., Tq, d_k)`` and key ``(..., Tk, d_k)`` of one dtype, d_k >= 1, batch axes that broadcast."""
    dims = check_shapes(query=(query, "... Tq d_k"), key=(key, "... Tk d_k"))
    check(dims["d_k"] >= 1, f"query and key need d_k >= 1, got query {shape_of(query)} and key {shape_of(key)}")
    check_same_dtype(query=query, key=key)
    return dims


def check_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None,
                    scale: float | None = None, dropout: float = 0.0) -> None:  # fmt: skip
    """The arguments of scaled dot-product attention (:func:`attn.scaled_dot_product_attention`, the tiled kernel)."""
    check_dropout(dropout)
    check_query_key(query, key)
    require_tensor("value", value, 2)
    check_same_dtype(query=query, key=key, value=value)
    check(key.shape[-2] == value.shape[-2], f"key has length Tk={key.shape[-2]} but value has length "
          f"{value.shape[-2]} (key {shape_of(key)}, value {shape_of(value)})")  # fmt: skip
    batch = cast(Shape, broadcast_shapes(query.shape[:-2], key.shape[:-2]))  # check_query_key saw that they broadcast
    check(broadcast_shapes(batch, value.shape[:-2]) is not None, f"the leading (batch) dimensions of query "
          f"{shape_of(query)}, key {shape_of(key)} and value {shape_of(value)} do not broadcast")  # fmt: skip
    if mask is not None:
        check_mask(mask, (*batch, query.shape[-2], key.shape[-2]), query.device)
    if scale is not None:
        largest = torch.finfo(query.dtype).max
        check(abs(check_finite_number("scale", scale)) <= largest,
              lambda: f"scale must fit in {query.dtype} (at most {largest:.3g}), got {float(scale):.3g}")  # fmt: skip


def overflow_error(query: torch.Tensor, key: torch.Tensor) -> ValueError:
    """What attention says when its scores overflowed or are NaN (an infinite or NaN query or key, or a scale that
    makes them overflow): the same words from every kernel."""
    return ValueError(
        f"the scores Q Kᵀ · scale overflowed or are NaN (query {shape_of(query)}, key {shape_of(key)}): "
        f"the largest |query| is {query.abs().max().item():.3g}, |key| {key.abs().max().item():.3g}"
    )
