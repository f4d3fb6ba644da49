"""Neural Turing Machine addressing (Graves et al. 2014, §3.3): content, interpolation, shift, sharpening.

A head produces a weighting ``w (..., N)`` over the N memory rows in four steps, each a plain function:
:func:`content_weighting` (eq. 5) finds rows like a key, :func:`interpolate` (eq. 7) mixes that with the head's
previous weighting, :func:`shift` (eq. 8) rotates it by a soft shift, and :func:`sharpen` (eq. 9) undoes the blur
the shift causes. :func:`address` chains the four, as every NTM head does at every step. The first lives in
:mod:`attn.functional`, since chapter 3's memory network reads with it too.
"""

from __future__ import annotations

import torch

from attn._checks import check_distribution, per_row, require_tensor, same_lead
from attn.functional import content_weighting, softmax

__all__ = ["content_weighting", "interpolate", "shift", "sharpen", "address"]


def interpolate(content: torch.Tensor, previous: torch.Tensor, gate: torch.Tensor | float) -> torch.Tensor:
    """``w^g = g w^c + (1 - g) w_{t-1}`` (NTM eq. 7): gate g in [0, 1], 1 = address by content alone.

    content, previous ``(..., N)``, gate ``(...)`` or a number -> ``(..., N)``.
    """
    require_tensor("content", content)
    require_tensor("previous", previous)
    if content.shape[-1] != previous.shape[-1]:
        raise ValueError(
            f"content and previous must weight the same N rows, got content {tuple(content.shape)} and "
            f"previous {tuple(previous.shape)}"
        )
    same_lead("interpolate", content=(content, 1), previous=(previous, 1))
    gate = per_row("gate", gate, content, previous, low=0.0, high=1.0)  # (..., 1)
    return gate * content + (1 - gate) * previous


def shift(weights: torch.Tensor, shifts: torch.Tensor) -> torch.Tensor:
    """Circular convolution ``w̃_i = Σ_j w_j s_{i-j}`` (NTM eq. 8), indices modulo N.

    weights ``(..., N)``; shifts ``(..., S)`` a distribution over the S (odd) offsets ``-(S//2) .. S//2``, so
    that ``shifts = [0, 0, 1]`` moves every weight one row down (row i to row i+1) and ``[0, 1, 0]`` keeps it.
    """
    require_tensor("weights", weights)
    require_tensor("shifts", shifts)
    S, N = shifts.shape[-1], weights.shape[-1]
    if S % 2 == 0 or S > N:
        raise ValueError(f"shifts must cover an odd number S <= N={N} of offsets, got shifts {tuple(shifts.shape)}")
    same_lead("shift", weights=(weights, 1), shifts=(shifts, 1))
    check_distribution("shifts", shifts)
    offsets = range(-(S // 2), S // 2 + 1)
    # torch.roll(w, k)[i] = w[i - k]: the weight that offset k brings to row i
    return sum(shifts[..., j : j + 1] * torch.roll(weights, k, dims=-1) for j, k in enumerate(offsets))


def sharpen(weights: torch.Tensor, gamma: torch.Tensor | float) -> torch.Tensor:
    """``w_i = w̃_i^γ / Σ_j w̃_j^γ`` (NTM eq. 9), γ >= 1: repeated shifting would otherwise blur the weighting.

    weights ``(..., N)`` non-negative, gamma ``(...)`` or a number -> ``(..., N)``, summing to 1.
    """
    require_tensor("weights", weights)
    gamma = per_row("gamma", gamma, weights, low=1.0)  # (..., 1), finite and >= 1
    # w^γ / Σ w^γ = softmax(γ log w): no overflow or 0/0 for a large γ. A weight that underflowed to 0 is read
    # as the smallest normal float, so that log stays finite and the gradient stays a number.
    tiny = torch.finfo(weights.dtype).tiny
    return softmax(gamma * torch.log(weights.clamp_min(tiny)), dim=-1)


def address(
    memory: torch.Tensor,
    previous: torch.Tensor,
    key: torch.Tensor,
    strength: torch.Tensor | float,
    gate: torch.Tensor | float,
    shifts: torch.Tensor,
    gamma: torch.Tensor | float,
) -> torch.Tensor:
    """One NTM head's weighting (§3.3, Figure 2): content -> interpolation -> shift -> sharpening, ``(..., N)``."""
    content = content_weighting(memory, key, strength)
    return sharpen(shift(interpolate(content, previous, gate), shifts), gamma)
