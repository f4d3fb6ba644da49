"""Dynamic memory allocation (Graves et al. 2016, Methods): retention ψ, usage u, allocation a, write weighting w^w."""

from __future__ import annotations

import torch

from attn._checks import per_row, require_tensor, same_lead

__all__ = ["retention", "usage", "allocation", "write_weighting"]


def _rows(what: str, N: int, **tensors: torch.Tensor) -> None:
    bad = {name: t for name, t in tensors.items() if t.shape[-1] != N}
    if bad:
        got = ", ".join(f"{name} {tuple(t.shape)}" for name, t in tensors.items())
        raise ValueError(f"{what}: every weighting must cover the same N={N} rows, got {got}")


def retention(free_gates: torch.Tensor, read_weights: torch.Tensor) -> torch.Tensor:
    """``ψ_t = Π_i (1 - f^i_t w^{r,i}_{t-1})``: how much of each row no read head frees.

    free_gates ``(..., R)`` in [0, 1], read_weights ``(..., R, N)`` (the previous step's) -> ψ ``(..., N)``.
    """
    require_tensor("free_gates", free_gates)
    require_tensor("read_weights", read_weights, min_dim=2)
    if free_gates.shape[-1] != read_weights.shape[-2]:
        raise ValueError(
            f"need one free gate per read head: free_gates {tuple(free_gates.shape)} but read_weights "
            f"{tuple(read_weights.shape)} has R={read_weights.shape[-2]} heads"
        )
    same_lead("retention", free_gates=(free_gates, 1), read_weights=(read_weights, 2))
    return torch.prod(1 - free_gates.unsqueeze(-1) * read_weights, dim=-2)  # (..., N)


def usage(previous: torch.Tensor, write_weights: torch.Tensor, retention: torch.Tensor) -> torch.Tensor:
    """``u_t = (u_{t-1} + w^w_{t-1} - u_{t-1} ∘ w^w_{t-1}) ∘ ψ_t``: written rows get used, freed rows get free.

    previous usage, the previous step's write_weights, retention: each ``(..., N)`` -> usage ``(..., N)`` in [0, 1].
    """
    for name, t in (("previous", previous), ("write_weights", write_weights), ("retention", retention)):
        require_tensor(name, t)
    _rows("usage", previous.shape[-1], previous=previous, write_weights=write_weights, retention=retention)
    same_lead("usage", previous=(previous, 1), write_weights=(write_weights, 1), retention=(retention, 1))
    return (previous + write_weights - previous * write_weights) * retention


def allocation(usage: torch.Tensor) -> torch.Tensor:
    """``a_t[φ_j] = (1 - u_t[φ_j]) Π_{i<j} u_t[φ_i]``, φ the rows sorted by usage, least used first.

    usage ``(..., N)`` in [0, 1] -> allocation weighting ``(..., N)``: nearly all on the least used row when
    it is free, spread over the next rows as it fills up; all zero when every row is fully used.
    """
    require_tensor("usage", usage)
    sorted_usage, order = torch.sort(usage, dim=-1, stable=True)  # φ: ascending usage (ties: the lower index first)
    ones = torch.ones_like(sorted_usage[..., :1])
    used_before = torch.cumprod(torch.cat([ones, sorted_usage[..., :-1]], dim=-1), dim=-1)  # Π_{i<j} u[φ_i]
    sorted_allocation = (1 - sorted_usage) * used_before
    return torch.zeros_like(usage).scatter(-1, order, sorted_allocation)  # back to the rows' own order


def write_weighting(
    allocation: torch.Tensor,
    content: torch.Tensor,
    allocation_gate: torch.Tensor | float,
    write_gate: torch.Tensor | float,
) -> torch.Tensor:
    """``w^w_t = g^w_t [g^a_t a_t + (1 - g^a_t) c^w_t]``: write to free rows (g^a = 1) or by content (g^a = 0),
    or not at all (g^w = 0). allocation, content ``(..., N)``, gates ``(...)`` or numbers -> ``(..., N)``."""
    require_tensor("allocation", allocation)
    require_tensor("content", content)
    _rows("write_weighting", allocation.shape[-1], allocation=allocation, content=content)
    same_lead("write_weighting", allocation=(allocation, 1), content=(content, 1))
    g_a = per_row("allocation_gate", allocation_gate, allocation, content)  # (..., 1)
    g_w = per_row("write_gate", write_gate, allocation, content)
    return g_w * (g_a * allocation + (1 - g_a) * content)
