"""Where a token is: sinusoidal (Vaswani et al. 2017, §3.5) and learned (Gehring et al. 2017) positional encodings,
and rotary positions (RoPE, Su et al. 2021).

Attention alone treats its input as a set; adding a vector that depends on the position is what lets a
Transformer tell "dog bites man" from "man bites dog". Both tables map ``(B, T, d_model)`` to the same
shape with the position vectors added, and refuse sequences longer than their table.

Rotary positions add nothing: they turn each head's queries and keys by an angle proportional to the position
(:func:`rotary_positions`), so that a score ``q_m · k_n`` depends on the positions only through ``n - m``
(Su et al. 2021, eq. 16). :class:`RotaryMultiHeadAttention` is multi-head self-attention with the turn applied
after ``W_Q`` and ``W_K``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attn._checks import (
    check,
    check_nonnegative_int,
    check_positive_int,
    check_positive_number,
    checked,
    describe,
    require_tensor,
    shape_of,
)
from attn.blocks.attention import KeyValue, MultiHeadAttention

__all__ = [
    "sinusoidal_positions",
    "SinusoidalPositions",
    "LearnedPositions",
    "rotary_positions",
    "RotaryMultiHeadAttention",
]


def _sinusoidal_positions_args(T: int, d_model: int) -> None:
    check_positive_int("T", T)
    check_positive_int("d_model", d_model)


@checked(_sinusoidal_positions_args)
def sinusoidal_positions(T: int, d_model: int) -> torch.Tensor:
    """``PE(pos, 2i) = sin(pos / 10000^{2i/d_model})``, ``PE(pos, 2i+1) = cos(...)`` (§3.5): shape ``(T, d_model)``."""
    T, d_model = int(T), int(d_model)
    position = torch.arange(T, dtype=torch.float32)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (ceil(d_model / 2),)
    angle = position * torch.exp(-math.log(10000.0) * two_i / d_model)  # (T, ceil(d_model / 2))
    table = torch.empty(T, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


class _Positions(nn.Module):
    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = check_positive_int("max_len", max_len)

    def _forward_args(self, x: torch.Tensor, start: int = 0) -> None:
        check(isinstance(x, torch.Tensor) and x.dim() == 3 and x.shape[-1] == self.d_model,
              lambda: f"x must have shape (B, T, d_model={self.d_model}), got {describe(x)}")  # fmt: skip
        self.check_span(x.shape[1], start)

    def check_span(self, T: int, start: int = 0) -> None:
        """The positions ``start``, ..., ``start + T - 1`` are in the table, else a ValueError."""
        check(T <= self.max_len, lambda: f"x has length T={T} but the positional table holds max_len={self.max_len} "
              "positions")  # fmt: skip
        check(check_nonnegative_int("start", start) + T <= self.max_len, lambda: f"positions start={start} to "
              f"{start + T - 1} are past the positional table (max_len={self.max_len} positions)")  # fmt: skip

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


class SinusoidalPositions(_Positions):
    """``x + PE[:T]`` with the fixed sinusoidal table (§3.5); no parameters."""

    table: torch.Tensor  # a buffer

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__(d_model, max_len)
        self.register_buffer("table", sinusoidal_positions(max_len, d_model), persistent=False)

    @checked(_Positions._forward_args)
    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """``(B, T, d_model) -> (B, T, d_model)``; the T vectors are of positions ``start``, ..., ``start + T - 1``."""
        return x + self.table[start : start + x.shape[1]].to(x.dtype)


class LearnedPositions(_Positions):
    """``x + P[:T]`` with a learned table ``P`` of ``max_len`` vectors (Gehring et al. 2017; BERT, GPT)."""

    def __init__(self, d_model: int, max_len: int = 512, std: float = 0.5):
        super().__init__(d_model, max_len)
        self.table = nn.Parameter(torch.randn(max_len, d_model) * std)

    @checked(_Positions._forward_args)
    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """``(B, T, d_model) -> (B, T, d_model)``; the T vectors are of positions ``start``, ..., ``start + T - 1``."""
        return x + self.table[start : start + x.shape[1]]


def _rotary_positions_args(x: torch.Tensor, start: int = 0, base: float = 10000.0) -> None:
    require_tensor("x", x, min_dim=2)
    check(x.shape[-1] % 2 == 0,
          lambda: f"x must have an even number of features d (RoPE turns pairs), got shape {shape_of(x)}")  # fmt: skip
    check_nonnegative_int("start", start)
    check_positive_number("base", base)


@checked(_rotary_positions_args)
def rotary_positions(x: torch.Tensor, start: int = 0, base: float = 10000.0) -> torch.Tensor:
    """Rotary positions (Su et al. 2021, eq. 34): ``x (..., T, d)``, d even -> the same shape, each pair
    ``(x_2i, x_2i+1)`` of the token at position ``m = start + t`` turned by the angle ``m θ_i``,
    ``θ_i = base^(-2i/d)``: ``(x_2i cos mθ_i - x_2i+1 sin mθ_i, x_2i sin mθ_i + x_2i+1 cos mθ_i)``.

    Applied to queries and keys, ``(R_m q) · (R_n k) = q · R_(n-m) k``: the score depends on the two positions only
    through their offset (eq. 16). The pairs are adjacent features, as in the paper; some implementations (GPT-NeoX,
    LLaMA) pair feature i with feature i + d/2 instead, which is the same map up to a fixed permutation of features."""
    T, d = x.shape[-2:]
    start, base = int(start), float(base)
    dtype = torch.promote_types(x.dtype, torch.float32)  # angles in float32 at least (float64 stays float64)
    position = torch.arange(start, start + T, device=x.device, dtype=dtype)[:, None]  # (T, 1)
    theta = torch.exp(-math.log(base) * torch.arange(0, d, 2, device=x.device, dtype=dtype) / d)  # (d / 2,)
    angle = position * theta  # (T, d / 2): m θ_i
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)  # (T, d / 2) each
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d / 2) each
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., T, d / 2, 2)
    return turned.flatten(-2)  # (..., T, d): pairs back in place


class RotaryMultiHeadAttention(MultiHeadAttention):
    """Multi-head self-attention with rotary positions (Su et al. 2021, eqs. 14-16): each head's queries ``Q W_Q^i``
    and keys ``K W_K^i`` are turned by :func:`rotary_positions` (query t and key t at position t) before the
    scores, so the scores see the offset between two tokens and never their absolute positions; the values are not
    turned. No positional table goes into the input. Arguments as :class:`MultiHeadAttention`, plus the
    frequencies' ``base``; d_k = d_model / num_heads must be even. :meth:`extend` turns the new tokens by their
    positions after the cached ones (the cache holds turned keys). Meant for self-attention: in cross-attention the
    queries' and the keys' positions would count along two different sequences."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        num_kv_heads: int | None = None,
        base: float = 10000.0,
    ):
        super().__init__(d_model, num_heads, dropout, bias, num_kv_heads)
        check(self.d_k % 2 == 0, f"d_k = d_model / num_heads = {self.d_model} / {self.h} = {self.d_k} must be even "
              "(RoPE turns pairs)")  # fmt: skip
        self.base = check_positive_number("base", base)
        self._start = 0  # the position of the first token that _project sees (extend: the cache's length)

    def _project(
        self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v = super()._project(query, key, value)  # (B, H, Tq, d_k), (B, H_kv, Tk, d_k), (B, H_kv, Tk, d_k)
        q = rotary_positions(q, self._start, self.base)  # (B, H, Tq, d_k): query t turned by (start + t) θ
        k = rotary_positions(k, self._start, self.base)  # (B, H_kv, Tk, d_k)
        return q, k, v

    def extend(
        self,
        x: torch.Tensor,
        past: KeyValue | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None, KeyValue]:
        """As :meth:`MultiHeadAttention.extend`, the new tokens at positions ``len(past)``, ``len(past) + 1``, ..."""
        self._start = len(past) if isinstance(past, KeyValue) else 0
        try:
            return super().extend(x, past, mask, need_weights)
        finally:
            self._start = 0

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, rotary base={self.base:g}"
