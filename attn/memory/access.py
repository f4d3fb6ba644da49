"""Reading, and writing by erase then add (Graves et al. 2014, §3.1-3.2, eqs. 2-4; Graves et al. 2016, Methods)."""

from __future__ import annotations

import torch

from attn._checks import check_shapes, checked

__all__ = ["read", "write"]


def _read_args(memory: torch.Tensor, weights: torch.Tensor) -> None:
    check_shapes(memory=(memory, "... N W"), weights=(weights, "... R N"))


def _write_args(memory: torch.Tensor, weights: torch.Tensor, erase: torch.Tensor, add: torch.Tensor) -> None:
    check_shapes(memory=(memory, "... N W"), weights=(weights, "... N"), erase=(erase, "... W"), add=(add, "... W"))


@checked(_read_args)
def read(memory: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``r = Σ_i w_i M_i`` (NTM eq. 2): memory ``(..., N, W)``, weights ``(..., R, N)`` for R read heads ->
    ``(reads (..., R, W), weights)``."""
    return weights @ memory, weights  # (..., R, W)


@checked(_write_args)
def write(memory: torch.Tensor, weights: torch.Tensor, erase: torch.Tensor, add: torch.Tensor) -> torch.Tensor:
    """Erase, then add (NTM eqs. 3-4; the DNC's ``M_t = M_{t-1} ∘ (E - w eᵀ) + w vᵀ``).

    memory ``(..., N, W)``, weights ``(..., N)``, erase ``(..., W)`` in [0, 1], add ``(..., W)`` -> the new
    memory ``(..., N, W)``: row i keeps ``1 - w_i e`` of what it held and gains ``w_i a``.
    """
    w = weights.unsqueeze(-1)  # (..., N, 1)
    return memory * (1 - w * erase.unsqueeze(-2)) + w * add.unsqueeze(-2)  # (..., N, W)
