"""Reading, and writing by erase then add (Graves et al. 2014, §3.1-3.2, eqs. 2-4; Graves et al. 2016, Methods)."""

from __future__ import annotations

import torch

from attn._checks import require_tensor, same_lead

__all__ = ["read", "write"]


def read(memory: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``r = Σ_i w_i M_i`` (NTM eq. 2): memory ``(..., N, W)``, weights ``(..., R, N)`` for R read heads ->
    ``(reads (..., R, W), weights)``."""
    require_tensor("memory", memory, min_dim=2)
    require_tensor("weights", weights, min_dim=2)
    if weights.shape[-1] != memory.shape[-2]:
        raise ValueError(
            f"weights must cover the memory's N={memory.shape[-2]} rows, got weights {tuple(weights.shape)} "
            f"and memory {tuple(memory.shape)}"
        )
    same_lead("read", memory=(memory, 2), weights=(weights, 2))
    return weights @ memory, weights  # (..., R, W)


def write(memory: torch.Tensor, weights: torch.Tensor, erase: torch.Tensor, add: torch.Tensor) -> torch.Tensor:
    """Erase, then add (NTM eqs. 3-4; the DNC's ``M_t = M_{t-1} ∘ (E - w eᵀ) + w vᵀ``).

    memory ``(..., N, W)``, weights ``(..., N)``, erase ``(..., W)`` in [0, 1], add ``(..., W)`` -> the new
    memory ``(..., N, W)``: row i keeps ``1 - w_i e`` of what it held and gains ``w_i a``.
    """
    require_tensor("memory", memory, min_dim=2)
    require_tensor("weights", weights)
    require_tensor("erase", erase)
    require_tensor("add", add)
    N, W = memory.shape[-2:]
    if weights.shape[-1] != N or erase.shape[-1] != W or add.shape[-1] != W:
        raise ValueError(
            f"need weights (..., N={N}), erase and add (..., W={W}) for memory {tuple(memory.shape)}, got weights "
            f"{tuple(weights.shape)}, erase {tuple(erase.shape)}, add {tuple(add.shape)}"
        )
    same_lead("write", memory=(memory, 2), weights=(weights, 1), erase=(erase, 1), add=(add, 1))
    w = weights.unsqueeze(-1)  # (..., N, 1)
    return memory * (1 - w * erase.unsqueeze(-2)) + w * add.unsqueeze(-2)  # (..., N, W)
