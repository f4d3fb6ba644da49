"""Every argument check of the library: one rule, one message style (the argument's name, what it must be, what it
was: ``ValueError("key has length 5 but value has length 4")``). Hand-written rather than annotation-driven, so
that a student reads one sentence about the argument they passed (see ARCHITECTURE.md)."""

from __future__ import annotations

import math
import numbers

import torch

__all__ = [
    "check_positive_int",
    "check_nonnegative_int",
    "check_dropout",
    "check_positive_number",
    "check_size",
    "shape_of",
    "require_tensor",
    "broadcast_shapes",
    "same_lead",
    "per_row",
    "check_distribution",
    "check_tokens",
    "check_images",
    "check_dtype_of",
    "check_question",
]


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
    """``value`` if it is a finite real number > 0 (a learning rate, a clipping norm), else a ValueError naming
    ``name``: one rule for every trainer's settings."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < math.inf:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_size(what: str, numbers_: int, limit: int = 10**8) -> None:
    """Refuse, before allocating, a tensor of ``numbers_`` elements beyond ``limit`` (10^8 numbers, 400 MB of
    float32): a ValueError naming ``what`` was asked for, instead of a machine brought down by its memory."""
    if numbers_ > limit:
        raise ValueError(
            f"{what} would hold {numbers_:,} numbers, more than the {limit:,} this book allows in one tensor"
        )


def check_dropout(value: object) -> float:
    """``value`` if it is a probability in [0, 1), else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"dropout must be a probability in [0, 1), got {value!r}")
    return float(value)


# ---------------------------------------------------------------------------------------------------- tensors


def shape_of(t: torch.Tensor) -> tuple[int, ...]:
    """A tensor's shape as a plain tuple, for messages."""
    return tuple(t.shape)


def describe(x: object) -> object:
    """A tensor's shape, or the type of anything else (for error messages)."""
    return shape_of(x) if isinstance(x, torch.Tensor) else type(x).__name__


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


def check_dtype_of(name: str, x: torch.Tensor, module: torch.nn.Module, what: str = "layer") -> None:
    """``x`` has the dtype of ``module``'s weights (outside autocast), else a ValueError that says how to convert:
    one rule for every module that multiplies an input by its weights."""
    weight = next(module.parameters(), None)
    if weight is not None and x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
        raise ValueError(
            f"{name} has dtype {x.dtype} but the {what}'s weights are {weight.dtype}: convert one to the other "
            f"(e.g. {name}.to({weight.dtype}) or {what}.to({x.dtype}))"
        )
