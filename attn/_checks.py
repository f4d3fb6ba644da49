"""Every argument check of the library: one rule, one message style (the argument's name, what it must be, what it
was: ``ValueError("key has length 5 but value has length 4")``). Hand-written rather than annotation-driven, so
that a student reads one sentence about the argument they passed (see ARCHITECTURE.md)."""

from __future__ import annotations

import numbers

import torch

__all__ = [
    "check_positive_int",
    "check_nonnegative_int",
    "check_dropout",
    "shape_of",
    "require_tensor",
    "broadcast_shapes",
    "same_lead",
    "per_row",
    "check_tokens",
    "check_images",
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


def check_dropout(value: object) -> float:
    """``value`` if it is a probability in [0, 1), else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"dropout must be a probability in [0, 1), got {value!r}")
    return float(value)


# ---------------------------------------------------------------------------------------------------- tensors


def shape_of(t: torch.Tensor) -> tuple[int, ...]:
    """A tensor's shape as a plain tuple, for messages."""
    return tuple(t.shape)


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


def per_row(name: str, value: torch.Tensor | float, *weights: torch.Tensor) -> torch.Tensor:
    """A number, or a tensor of one value per weighting (its shape broadcasts *to* the weightings' leading shape),
    as a tensor with a trailing axis ``(..., 1)`` ready to multiply the ``(..., N)`` weightings."""
    value = torch.as_tensor(value, dtype=weights[0].dtype, device=weights[0].device)
    lead: tuple[int, ...] = ()
    for w in weights:
        lead = broadcast_shapes(lead, tuple(w.shape[:-1])) or lead
    if broadcast_shapes(tuple(value.shape), lead) != lead:
        raise ValueError(
            f"{name} must be a number or have one value per weighting, shape {lead} (or broadcastable to it), "
            f"got shape {tuple(value.shape)}"
        )
    return value.unsqueeze(-1)


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


def check_images(images: object, channels: int | None = None, size: int | None = None) -> tuple[int, int, int, int]:
    """``B, C, H, W`` of a float ``(B, C, H, W)`` image batch, else a ValueError naming ``images``."""
    require_tensor("images", images, 4)
    if images.dim() != 4 or not images.is_floating_point():
        raise ValueError(f"images must be a float (B, C, H, W) tensor, got {images.dtype} {shape_of(images)}")
    B, C, H, W = images.shape
    if channels is not None and C != channels:
        raise ValueError(f"images must have {channels} channels (B, {channels}, H, W), got {shape_of(images)}")
    if size is not None and (H, W) != (size, size):
        raise ValueError(f"images must be {size} x {size} pixels, got {shape_of(images)}")
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
