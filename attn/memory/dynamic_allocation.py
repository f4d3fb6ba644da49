"""Dynamic memory allocation (Graves et al. 2016, Methods): retention ψ, usage u, allocation a, write weighting w^w."""

from __future__ import annotations

import torch

from attn._checks import check_shapes, checked, per_row, require_tensor

__all__ = ["retention", "usage", "allocation", "write_weighting"]


def _retention_args(free_gates: torch.Tensor, read_weights: torch.Tensor) -> None:
    check_shapes(free_gates=(free_gates, "... R"), read_weights=(read_weights, "... R N"))


def _usage_args(previous: torch.Tensor, write_weights: torch.Tensor, retention: torch.Tensor) -> None:
    check_shapes(previous=(previous, "... N"), write_weights=(write_weights, "... N"), retention=(retention, "... N"))


def _allocation_args(usage: torch.Tensor) -> None:
    require_tensor("usage", usage)


def _write_weighting_args(allocation: torch.Tensor, content: torch.Tensor, allocation_gate: torch.Tensor | float,
                          write_gate: torch.Tensor | float) -> None:  # fmt: skip
    check_shapes(allocation=(allocation, "... N"), content=(content, "... N"))
    per_row("allocation_gate", allocation_gate, allocation, content)
    per_row("write_gate", write_gate, allocation, content)


@checked(_retention_args)
def retention(free_gates: torch.Tensor, read_weights: torch.Tensor) -> torch.Tensor:
    """``ψ_t = Π_i (1 - f^i_t w^{r,i}_{t-1})``: how much of each row no read head frees.

    free_gates ``(..., R)`` in [0, 1], read_weights ``(..., R, N)`` (the previous step's) -> ψ ``(..., N)``.
    """
    return torch.prod(1 - free_gates.unsqueeze(-1) * read_weights, dim=-2)  # (..., N)


@checked(_usage_args)
def usage(previous: torch.Tensor, write_weights: torch.Tensor, retention: torch.Tensor) -> torch.Tensor:
    """``u_t = (u_{t-1} + w^w_{t-1} - u_{t-1} ∘ w^w_{t-1}) ∘ ψ_t``: written rows get used, freed rows get free.

    previous usage, the previous step's write_weights, retention: each ``(..., N)`` -> usage ``(..., N)`` in [0, 1].
    """
    return (previous + write_weights - previous * write_weights) * retention


@checked(_allocation_args)
def allocation(usage: torch.Tensor) -> torch.Tensor:
    """``a_t[φ_j] = (1 - u_t[φ_j]) Π_{i<j} u_t[φ_i]``, φ the rows sorted by usage, least used first.

    usage ``(..., N)`` in [0, 1] -> allocation weighting ``(..., N)``: nearly all on the least used row when
    it is free, spread over the next rows as it fills up; all zero when every row is fully used.
    """
    sorted_usage, order = torch.sort(usage, dim=-1, stable=True)  # φ: ascending usage (ties: the lower index first)
    ones = torch.ones_like(sorted_usage[..., :1])
    used_before = torch.cumprod(torch.cat([ones, sorted_usage[..., :-1]], dim=-1), dim=-1)  # Π_{i<j} u[φ_i]
    sorted_allocation = (1 - sorted_usage) * used_before
    return torch.zeros_like(usage).scatter(-1, order, sorted_allocation)  # back to the rows' own order


@checked(_write_weighting_args)
def write_weighting(
    allocation: torch.Tensor,
    content: torch.Tensor,
    allocation_gate: torch.Tensor | float,
    write_gate: torch.Tensor | float,
) -> torch.Tensor:
    """``w^w_t = g^w_t [g^a_t a_t + (1 - g^a_t) c^w_t]``: write to free rows (g^a = 1) or by content (g^a = 0),
    or not at all (g^w = 0). allocation, content ``(..., N)``, gates ``(...)`` or numbers -> ``(..., N)``."""
    g_a = torch.as_tensor(allocation_gate, dtype=content.dtype, device=content.device).unsqueeze(-1)  # (..., 1)
    g_w = torch.as_tensor(write_gate, dtype=content.dtype, device=content.device).unsqueeze(-1)
    return g_w * (g_a * allocation + (1 - g_a) * content)
