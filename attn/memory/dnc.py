"""The Differentiable Neural Computer's memory bookkeeping (Graves et al. 2016, Methods), one function each.

Dynamic memory allocation: :func:`retention` (ψ, from the free gates), :func:`usage` (u), :func:`allocation`
(a: the least used rows first) and :func:`write_weighting` (allocation or content, by the gates). Temporal
memory linkage: :func:`precedence` (p), :func:`link_matrix` (L), :func:`directional_weightings` (forward and
backward) and :func:`read_weighting` (the read modes). Shapes: N memory rows, R read heads, any leading
batch dimensions ``...``.
"""

from __future__ import annotations

import torch

from attn.memory._checks import per_row, require, same_lead

__all__ = [
    "retention",
    "usage",
    "allocation",
    "write_weighting",
    "precedence",
    "link_matrix",
    "directional_weightings",
    "read_weighting",
]


def _rows(what: str, N: int, **tensors: torch.Tensor) -> None:
    bad = {name: t for name, t in tensors.items() if t.shape[-1] != N}
    if bad:
        got = ", ".join(f"{name} {tuple(t.shape)}" for name, t in tensors.items())
        raise ValueError(f"{what}: every weighting must cover the same N={N} rows, got {got}")


def retention(free_gates: torch.Tensor, read_weights: torch.Tensor) -> torch.Tensor:
    """``ψ_t = Π_i (1 - f^i_t w^{r,i}_{t-1})``: how much of each row no read head frees.

    free_gates ``(..., R)`` in [0, 1], read_weights ``(..., R, N)`` (the previous step's) -> ψ ``(..., N)``.
    """
    require("free_gates", free_gates)
    require("read_weights", read_weights, min_dim=2)
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
        require(name, t)
    _rows("usage", previous.shape[-1], previous=previous, write_weights=write_weights, retention=retention)
    same_lead("usage", previous=(previous, 1), write_weights=(write_weights, 1), retention=(retention, 1))
    return (previous + write_weights - previous * write_weights) * retention


def allocation(usage: torch.Tensor) -> torch.Tensor:
    """``a_t[φ_j] = (1 - u_t[φ_j]) Π_{i<j} u_t[φ_i]``, φ the rows sorted by usage, least used first.

    usage ``(..., N)`` in [0, 1] -> allocation weighting ``(..., N)``: nearly all on the least used row when
    it is free, spread over the next rows as it fills up; all zero when every row is fully used.
    """
    require("usage", usage)
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
    require("allocation", allocation)
    require("content", content)
    _rows("write_weighting", allocation.shape[-1], allocation=allocation, content=content)
    same_lead("write_weighting", allocation=(allocation, 1), content=(content, 1))
    g_a = per_row("allocation_gate", allocation_gate, allocation, content)  # (..., 1)
    g_w = per_row("write_gate", write_gate, allocation, content)
    return g_w * (g_a * allocation + (1 - g_a) * content)


def precedence(previous: torch.Tensor, write_weights: torch.Tensor) -> torch.Tensor:
    """``p_t = (1 - Σ_i w^w_t[i]) p_{t-1} + w^w_t``: where the last write went (``p_0 = 0``), ``(..., N)``."""
    require("previous", previous)
    require("write_weights", write_weights)
    _rows("precedence", previous.shape[-1], previous=previous, write_weights=write_weights)
    same_lead("precedence", previous=(previous, 1), write_weights=(write_weights, 1))
    return (1 - write_weights.sum(-1, keepdim=True)) * previous + write_weights


def link_matrix(previous: torch.Tensor, write_weights: torch.Tensor, precedence: torch.Tensor) -> torch.Tensor:
    """``L_t[i, j] = (1 - w_t[i] - w_t[j]) L_{t-1}[i, j] + w_t[i] p_{t-1}[j]``, ``L_t[i, i] = 0``.

    L[i, j] is how much row i was written right after row j. previous L ``(..., N, N)``, write_weights
    ``(..., N)`` (this step's), precedence ``(..., N)`` (the previous step's, p_{t-1}) -> L ``(..., N, N)``.
    """
    require("previous", previous, min_dim=2)
    require("write_weights", write_weights)
    require("precedence", precedence)
    N = write_weights.shape[-1]
    if previous.shape[-2:] != (N, N):
        raise ValueError(f"previous must be a (..., N, N) link matrix with N={N}, got {tuple(previous.shape)}")
    _rows("link_matrix", N, write_weights=write_weights, precedence=precedence)
    same_lead("link_matrix", previous=(previous, 2), write_weights=(write_weights, 1), precedence=(precedence, 1))
    w_i, w_j = write_weights.unsqueeze(-1), write_weights.unsqueeze(-2)  # (..., N, 1), (..., 1, N)
    links = (1 - w_i - w_j) * previous + w_i * precedence.unsqueeze(-2)
    return links * (1 - torch.eye(N, dtype=links.dtype, device=links.device))  # zero diagonal


def directional_weightings(links: torch.Tensor, read_weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward ``f^i_t = L_t w^{r,i}_{t-1}`` and backward ``b^i_t = L_tᵀ w^{r,i}_{t-1}`` weightings.

    links ``(..., N, N)``, read_weights ``(..., R, N)`` (the previous step's) -> ``(forward, backward)``, each
    ``(..., R, N)``: forward moves each head to what was written after where it read, backward to before.
    """
    require("links", links, min_dim=2)
    require("read_weights", read_weights, min_dim=2)
    N = links.shape[-1]
    if links.shape[-2] != N or read_weights.shape[-1] != N:
        raise ValueError(
            f"need links (..., N, N) and read_weights (..., R, N), got links {tuple(links.shape)} and "
            f"read_weights {tuple(read_weights.shape)}"
        )
    same_lead("directional_weightings", links=(links, 2), read_weights=(read_weights, 2))
    forward = read_weights @ links.transpose(-2, -1)  # (..., R, N): f[r, i] = Σ_j L[i, j] w[r, j]
    backward = read_weights @ links  # (..., R, N): b[r, j] = Σ_i L[i, j] w[r, i]
    return forward, backward


def read_weighting(
    backward: torch.Tensor, content: torch.Tensor, forward: torch.Tensor, modes: torch.Tensor
) -> torch.Tensor:
    """``w^{r,i}_t = π^i[1] b^i_t + π^i[2] c^{r,i}_t + π^i[3] f^i_t``: each read head's mix of its three modes.

    backward, content, forward ``(..., R, N)``, modes π ``(..., R, 3)`` (backward, content, forward; each row
    a distribution) -> read weights ``(..., R, N)``.
    """
    for name, t in (("backward", backward), ("content", content), ("forward", forward)):
        require(name, t, min_dim=2)
    require("modes", modes, min_dim=2)
    _rows("read_weighting", content.shape[-1], backward=backward, content=content, forward=forward)
    if modes.shape[-1] != 3:
        raise ValueError(f"modes must give 3 weights (backward, content, forward) per head, got {tuple(modes.shape)}")
    same_lead("read_weighting", backward=(backward, 1), content=(content, 1), forward=(forward, 1), modes=(modes, 1))
    return modes[..., 0:1] * backward + modes[..., 1:2] * content + modes[..., 2:3] * forward
