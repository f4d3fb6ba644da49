"""Temporal memory linkage (Graves et al. 2016, Methods): precedence p, links L, directions f and b, read weighting."""

from __future__ import annotations

import torch

from attn._checks import require_tensor, same_lead
from attn.memory.dynamic_allocation import _rows

__all__ = ["precedence", "link_matrix", "directional_weightings", "read_weighting"]


def precedence(previous: torch.Tensor, write_weights: torch.Tensor) -> torch.Tensor:
    """``p_t = (1 - Σ_i w^w_t[i]) p_{t-1} + w^w_t``: where the last write went (``p_0 = 0``), ``(..., N)``."""
    require_tensor("previous", previous)
    require_tensor("write_weights", write_weights)
    _rows("precedence", previous.shape[-1], previous=previous, write_weights=write_weights)
    same_lead("precedence", previous=(previous, 1), write_weights=(write_weights, 1))
    return (1 - write_weights.sum(-1, keepdim=True)) * previous + write_weights


def link_matrix(previous: torch.Tensor, write_weights: torch.Tensor, precedence: torch.Tensor) -> torch.Tensor:
    """``L_t[i, j] = (1 - w_t[i] - w_t[j]) L_{t-1}[i, j] + w_t[i] p_{t-1}[j]``, ``L_t[i, i] = 0``.

    L[i, j] is how much row i was written right after row j. previous L ``(..., N, N)``, write_weights
    ``(..., N)`` (this step's), precedence ``(..., N)`` (the previous step's, p_{t-1}) -> L ``(..., N, N)``.
    """
    require_tensor("previous", previous, min_dim=2)
    require_tensor("write_weights", write_weights)
    require_tensor("precedence", precedence)
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
    require_tensor("links", links, min_dim=2)
    require_tensor("read_weights", read_weights, min_dim=2)
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
        require_tensor(name, t, min_dim=2)
    require_tensor("modes", modes, min_dim=2)
    _rows("read_weighting", content.shape[-1], backward=backward, content=content, forward=forward)
    if modes.shape[-1] != 3:
        raise ValueError(f"modes must give 3 weights (backward, content, forward) per head, got {tuple(modes.shape)}")
    same_lead("read_weighting", backward=(backward, 1), content=(content, 1), forward=(forward, 1), modes=(modes, 1))
    return modes[..., 0:1] * backward + modes[..., 1:2] * content + modes[..., 2:3] * forward
