"""Shape checks shared by the memory functions: every error names the argument and the shapes it got."""

from __future__ import annotations

import torch

from attn.functional import _broadcast_shapes, _require_tensor

__all__ = ["require", "same_lead", "per_row"]


def require(name: str, x: object, min_dim: int = 1) -> None:
    """``x`` is a floating-point tensor with at least ``min_dim`` dimensions (the check of :mod:`attn.functional`)."""
    _require_tensor(name, x, min_dim)


def same_lead(what: str, **tensors: tuple[torch.Tensor, int]) -> None:
    """The leading dimensions (all but the last ``k`` of each tensor) must broadcast together."""
    shape: tuple[int, ...] | None = ()
    for t, k in tensors.values():
        shape = _broadcast_shapes(shape, tuple(t.shape[: t.dim() - k])) if shape is not None else None
    if shape is None:
        got = ", ".join(f"{name} {tuple(t.shape)}" for name, (t, _) in tensors.items())
        raise ValueError(f"{what}: the leading (batch) dimensions do not broadcast, got {got}")


def per_row(name: str, value: torch.Tensor | float, *weights: torch.Tensor) -> torch.Tensor:
    """A number, or a tensor of one value per weighting (its shape broadcasts *to* the weightings' leading shape),
    as a tensor with a trailing axis ``(..., 1)`` ready to multiply the ``(..., N)`` weightings."""
    value = torch.as_tensor(value, dtype=weights[0].dtype, device=weights[0].device)
    lead: tuple[int, ...] = ()
    for w in weights:
        lead = _broadcast_shapes(lead, tuple(w.shape[:-1])) or lead
    if _broadcast_shapes(tuple(value.shape), lead) != lead:
        raise ValueError(
            f"{name} must be a number or have one value per weighting, shape {lead} (or broadcastable to it), "
            f"got shape {tuple(value.shape)}"
        )
    return value.unsqueeze(-1)
