"""Temporal memory linkage (Graves et al. 2016, Methods): precedence p, links L, directions f and b, read weighting."""

from __future__ import annotations

import torch

from attn._checks import check_shapes, checked

__all__ = ["precedence", "link_matrix", "directional_weightings", "read_weighting"]


def _precedence_args(previous: torch.Tensor, write_weights: torch.Tensor) -> None:
    check_shapes(previous=(previous, "... N"), write_weights=(write_weights, "... N"))


def _link_matrix_args(previous: torch.Tensor, write_weights: torch.Tensor, precedence: torch.Tensor) -> None:
    check_shapes(write_weights=(write_weights, "... N"), previous=(previous, "... N N"),
                 precedence=(precedence, "... N"))  # fmt: skip


def _directional_args(links: torch.Tensor, read_weights: torch.Tensor) -> None:
    check_shapes(links=(links, "... N N"), read_weights=(read_weights, "... R N"))


def _read_weighting_args(backward: torch.Tensor, content: torch.Tensor, forward: torch.Tensor,
                         modes: torch.Tensor) -> None:  # fmt: skip
    check_shapes(backward=(backward, "... R N"), content=(content, "... R N"), forward=(forward, "... R N"),
                 modes=(modes, "... R 3"))  # fmt: skip


@checked(_precedence_args)
def precedence(previous: torch.Tensor, write_weights: torch.Tensor) -> torch.Tensor:
    """``p_t = (1 - Σ_i w^w_t[i]) p_{t-1} + w^w_t``: where the last write went (``p_0 = 0``), ``(..., N)``."""
    return (1 - write_weights.sum(-1, keepdim=True)) * previous + write_weights


@checked(_link_matrix_args)
def link_matrix(previous: torch.Tensor, write_weights: torch.Tensor, precedence: torch.Tensor) -> torch.Tensor:
    """``L_t[i, j] = (1 - w_t[i] - w_t[j]) L_{t-1}[i, j] + w_t[i] p_{t-1}[j]``, ``L_t[i, i] = 0``.

    L[i, j] is how much row i was written right after row j. previous L ``(..., N, N)``, write_weights
    ``(..., N)`` (this step's), precedence ``(..., N)`` (the previous step's, p_{t-1}) -> L ``(..., N, N)``.
    """
    N = write_weights.shape[-1]
    w_i, w_j = write_weights.unsqueeze(-1), write_weights.unsqueeze(-2)  # (..., N, 1), (..., 1, N)
    links = (1 - w_i - w_j) * previous + w_i * precedence.unsqueeze(-2)
    return links * (1 - torch.eye(N, dtype=links.dtype, device=links.device))  # zero diagonal


@checked(_directional_args)
def directional_weightings(links: torch.Tensor, read_weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward ``f^i_t = L_t w^{r,i}_{t-1}`` and backward ``b^i_t = L_tᵀ w^{r,i}_{t-1}`` weightings.

    links ``(..., N, N)``, read_weights ``(..., R, N)`` (the previous step's) -> ``(forward, backward)``, each
    ``(..., R, N)``: forward moves each head to what was written after where it read, backward to before.
    """
    forward = read_weights @ links.transpose(-2, -1)  # (..., R, N): f[r, i] = Σ_j L[i, j] w[r, j]
    backward = read_weights @ links  # (..., R, N): b[r, j] = Σ_i L[i, j] w[r, i]
    return forward, backward


@checked(_read_weighting_args)
def read_weighting(
    backward: torch.Tensor, content: torch.Tensor, forward: torch.Tensor, modes: torch.Tensor
) -> torch.Tensor:
    """``w^{r,i}_t = π^i[1] b^i_t + π^i[2] c^{r,i}_t + π^i[3] f^i_t``: each read head's mix of its three modes.

    backward, content, forward ``(..., R, N)``, modes π ``(..., R, 3)`` (backward, content, forward; each row
    a distribution) -> read weights ``(..., R, N)``.
    """
    return modes[..., 0:1] * backward + modes[..., 1:2] * content + modes[..., 2:3] * forward
