"""Where a token is: sinusoidal (Vaswani et al. 2017, §3.5) and learned (Gehring et al. 2017) positional encodings.

Attention alone treats its input as a set; adding a vector that depends on the position is what lets a
Transformer tell "dog bites man" from "man bites dog". Both modules map ``(B, T, d_model)`` to the same
shape with the position vectors added, and refuse sequences longer than their table.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attn._checks import check_nonnegative_int, check_positive_int, shape_of

__all__ = ["sinusoidal_positions", "SinusoidalPositions", "LearnedPositions"]


def sinusoidal_positions(T: int, d_model: int) -> torch.Tensor:
    """``PE(pos, 2i) = sin(pos / 10000^{2i/d_model})``, ``PE(pos, 2i+1) = cos(...)`` (§3.5): shape ``(T, d_model)``."""
    T, d_model = check_positive_int("T", T), check_positive_int("d_model", d_model)
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

    def _check(self, x: torch.Tensor, start: int = 0) -> int:
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d_model:
            got = shape_of(x) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (B, T, d_model={self.d_model}), got {got}")
        T = x.shape[1]
        if T > self.max_len:
            raise ValueError(f"x has length T={T} but the positional table holds max_len={self.max_len} positions")
        if check_nonnegative_int("start", start) and start + T > self.max_len:
            raise ValueError(
                f"positions start={start} to {start + T - 1} are past the positional table "
                f"(max_len={self.max_len} positions)"
            )
        return T

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


class SinusoidalPositions(_Positions):
    """``x + PE[:T]`` with the fixed sinusoidal table (§3.5); no parameters."""

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__(d_model, max_len)
        self.register_buffer("table", sinusoidal_positions(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """``(B, T, d_model) -> (B, T, d_model)``; the T vectors are of positions ``start``, ..., ``start + T - 1``."""
        T = self._check(x, start)
        return x + self.table[start : start + T].to(x.dtype)


class LearnedPositions(_Positions):
    """``x + P[:T]`` with a learned table ``P`` of ``max_len`` vectors (Gehring et al. 2017; BERT, GPT)."""

    def __init__(self, d_model: int, max_len: int = 512, std: float = 0.5):
        super().__init__(d_model, max_len)
        self.table = nn.Parameter(torch.randn(max_len, d_model) * std)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """``(B, T, d_model) -> (B, T, d_model)``; the T vectors are of positions ``start``, ..., ``start + T - 1``."""
        T = self._check(x, start)
        return x + self.table[start : start + T]
