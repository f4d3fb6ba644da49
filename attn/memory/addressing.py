"""Neural Turing Machine addressing (Graves et al. 2014, §3.3): content, interpolation, shift, sharpening.

A head produces a weighting ``w (..., N)`` over the N memory rows in four steps, each a plain function:
:func:`content_addressing` (eq. 5) finds rows like a key, :func:`interpolate` (eq. 7) mixes that with the
head's previous weighting, :func:`shift` (eq. 8) rotates it by a soft shift, and :func:`sharpen` (eq. 9) undoes the
blur the shift causes. :func:`address` chains the four, as every NTM head does at every step. The first lives in
:mod:`attn.functional`, since chapters 1 and 3 read with it too.
"""

from __future__ import annotations

from typing import cast

import torch

from attn._checks import check, check_distribution, check_shapes, checked, per_row, require_tensor
from attn.functional import content_addressing, softmax

__all__ = ["content_addressing", "interpolate", "shift", "sharpen", "address"]


def _interpolate_args(content: torch.Tensor, previous: torch.Tensor, gate: torch.Tensor | float) -> None:
    check_shapes(content=(content, "... N"), previous=(previous, "... N"))
    per_row("gate", gate, content, previous, low=0.0, high=1.0)


def _shift_args(weights: torch.Tensor, shifts: torch.Tensor) -> None:
    dims = check_shapes(weights=(weights, "... N"), shifts=(shifts, "... S"))
    S, N = dims["S"], dims["N"]
    check(
        S % 2 == 1 and S <= N,
        f"shifts must cover an odd number S <= N={N} of offsets, got shifts {tuple(shifts.shape)}",
    )
    check_distribution("shifts", shifts)


def _sharpen_args(weights: torch.Tensor, gamma: torch.Tensor | float) -> None:
    require_tensor("weights", weights)
    per_row("gamma", gamma, weights, low=1.0)  # finite and >= 1


@checked(_interpolate_args)
def interpolate(content: torch.Tensor, previous: torch.Tensor, gate: torch.Tensor | float) -> torch.Tensor:
    """``w^g = g w^c + (1 - g) w_{t-1}`` (NTM eq. 7): gate g in [0, 1], 1 = address by content alone.

    content, previous ``(..., N)``, gate ``(...)`` or a number -> ``(..., N)``.
    """
    gate = torch.as_tensor(gate, dtype=content.dtype, device=content.device).unsqueeze(-1)  # (..., 1)
    return gate * content + (1 - gate) * previous


@checked(_shift_args)
def shift(weights: torch.Tensor, shifts: torch.Tensor) -> torch.Tensor:
    """Circular convolution ``w̃_i = Σ_j w_j s_{i-j}`` (NTM eq. 8), indices modulo N.

    weights ``(..., N)``; shifts ``(..., S)`` a distribution over the S (odd) offsets ``-(S//2) .. S//2``, so
    that ``shifts = [0, 0, 1]`` moves every weight one row down (row i to row i+1) and ``[0, 1, 0]`` keeps it.
    """
    S = shifts.shape[-1]
    offsets = range(-(S // 2), S // 2 + 1)
    # torch.roll(w, k)[i] = w[i - k]: the weight that offset k brings to row i
    terms = (shifts[..., j : j + 1] * torch.roll(weights, k, dims=-1) for j, k in enumerate(offsets))
    return cast(torch.Tensor, sum(terms))  # S >= 1 terms: a tensor, never sum's start 0


@checked(_sharpen_args)
def sharpen(weights: torch.Tensor, gamma: torch.Tensor | float) -> torch.Tensor:
    """``w_i = w̃_i^γ / Σ_j w̃_j^γ`` (NTM eq. 9), γ >= 1: repeated shifting would otherwise blur the weighting.

    weights ``(..., N)`` non-negative, gamma ``(...)`` or a number -> ``(..., N)``, summing to 1.
    """
    gamma = torch.as_tensor(gamma, dtype=weights.dtype, device=weights.device).unsqueeze(-1)  # (..., 1)
    # w^γ / Σ w^γ = softmax(γ log w): no overflow or 0/0 for a large γ. A weight that underflowed to 0 is read
    # as the smallest normal float, so that log stays finite and the gradient stays a number.
    tiny = torch.finfo(weights.dtype).tiny
    return softmax(gamma * torch.log(weights.clamp_min(tiny)), dim=-1)


def _address_args(memory: torch.Tensor, previous: torch.Tensor, key: torch.Tensor, strength: torch.Tensor | float,
                  gate: torch.Tensor | float, shifts: torch.Tensor, gamma: torch.Tensor | float) -> None:  # fmt: skip
    content_addressing.check(key, memory, strength)
    check_shapes(memory=(memory, "... N W"), previous=(previous, "... N"))
    heads = (previous, key, memory[..., 0])  # the gates broadcast to the heads of all three
    per_row("gate", gate, *heads, low=0.0, high=1.0)
    _shift_args(previous, shifts)
    per_row("gamma", gamma, *heads, low=1.0)


@checked(_address_args)
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
    _, content = content_addressing(key, memory, strength)
    return sharpen(shift(interpolate(content, previous, gate), shifts), gamma)
