"""The blocks of a Transformer layer: LayerNorm, the position-wise feed-forward network, encoder and decoder layers.

Each sub-layer sits in a residual connection. Post-LN (the paper, §3.1): ``x = LayerNorm(x + Sublayer(x))``.
Pre-LN (Xiong et al. 2020; GPT-2): ``x = x + Sublayer(LayerNorm(x))``, easier to train when deep.
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F
from torch import nn

from attn._checks import check_dropout, check_nonnegative_int, check_positive_int
from attn.functional import _shape
from attn.transformer.attention import KeyValue, MultiHeadAttention

__all__ = ["layer_norm", "LayerNorm", "FeedForward", "EncoderLayer", "DecoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """``γ (x - μ) / √(σ² + ε) + β`` with μ, σ² the mean and (biased) variance over features (Ba et al. 2016, eq. 4)."""
    var, mu = torch.var_mean(x, dim=-1, correction=0, keepdim=True)  # σ², μ: (..., 1) each
    return (x - mu) * torch.rsqrt(var + eps) * gamma + beta


class LayerNorm(nn.Module):
    """Layer normalization over the last dimension, with a learned gain γ (ones) and bias β (zeros)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps > 0:
            raise ValueError(f"eps must be a positive number, got {eps!r}")
        self.eps = float(eps)
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., d_model) -> (..., d_model)``, every feature vector normalized on its own."""
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != self.d_model:
            got = _shape(x) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (..., d_model={self.d_model}), got {got}")
        return layer_norm(x, self.gamma, self.beta, self.eps)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"


class FeedForward(nn.Module):
    """``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2`` (§3.3, eq. 2), the same at every position; GELU optional."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        self.W_1 = nn.Linear(check_positive_int("d_model", d_model), check_positive_int("d_ff", d_ff))
        self.W_2 = nn.Linear(d_ff, d_model)
        self.activation = activation
        self.dropout = nn.Dropout(check_dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, d_model) -> (B, T, d_model)``."""
        return self.W_2(self.dropout(_ACTIVATIONS[self.activation](self.W_1(x))))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each in a residual connection with LayerNorm (§3.1).

    ``d_ff=0`` leaves the feed-forward sub-layer out: an attention-only layer (Elhage et al. 2021).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "relu",
        eps: float = 1e-5,
    ):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout)
        d_ff = check_nonnegative_int("d_ff", d_ff)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation) if d_ff else None
        self.norm1 = LayerNorm(d_model, eps)
        self.norm2 = LayerNorm(d_model, eps) if d_ff else None
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.norm_first = bool(norm_first)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x ``(B, T, d_model)``, mask bool ``(B, 1, T, T)``-broadcastable (True = may attend) ->
        ``(B, T, d_model)`` and the self-attention weights ``(B, H, T, T)`` (None without ``need_weights``)."""
        if self.norm_first:
            h = self.norm1(x)
            attended, weights = self.self_attention(h, h, h, mask, need_weights)
            x = x + self.dropout(attended)
            if self.feed_forward is None:
                return x, weights
            return x + self.dropout(self.feed_forward(self.norm2(x))), weights
        attended, weights = self.self_attention(x, x, x, mask, need_weights)
        x = self.norm1(x + self.dropout(attended))
        if self.feed_forward is None:
            return x, weights
        return self.norm2(x + self.dropout(self.feed_forward(x))), weights

    def extend(
        self, x: torch.Tensor, past: KeyValue | None = None, mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None, KeyValue]:
        """:meth:`forward` for Tn new positions x ``(B, Tn, d_model)`` after the tokens whose keys and values
        ``past`` holds (:meth:`MultiHeadAttention.extend`); mask ``(B, 1, Tn, T)``-broadcastable, T = len(past) + Tn
        -> ``(B, Tn, d_model)``, the new rows of the self-attention ``(B, H, Tn, T)`` and the extended cache."""
        h = self.norm1(x) if self.norm_first else x
        attended, weights, cache = self.self_attention.extend(h, past, mask, need_weights)
        x = x + self.dropout(attended)  # the same residual wiring as forward, pre-LN or post-LN
        if not self.norm_first:
            x = self.norm1(x)
        if self.feed_forward is not None and self.norm_first:
            x = x + self.dropout(self.feed_forward(self.norm2(x)))
        elif self.feed_forward is not None:
            x = self.norm2(x + self.dropout(self.feed_forward(x)))
        return x, weights, cache


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder's output, feed-forward; each residual + LayerNorm."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "relu",
    ):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attention = MultiHeadAttention(d_model, num_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.norm_first = bool(norm_first)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """x ``(B, T, d_model)``, memory ``(B, S, d_model)`` -> ``(B, T, d_model)``, the self-attention
        weights ``(B, H, T, T)`` and the cross-attention weights ``(B, H, T, S)``."""
        if self.norm_first:
            h = self.norm1(x)
            attended, self_weights = self.self_attention(h, h, h, self_mask, need_weights)
            x = x + self.dropout(attended)
            attended, cross_weights = self.cross_attention(self.norm2(x), memory, memory, memory_mask, need_weights)
            x = x + self.dropout(attended)
            return x + self.dropout(self.feed_forward(self.norm3(x))), self_weights, cross_weights
        attended, self_weights = self.self_attention(x, x, x, self_mask, need_weights)
        x = self.norm1(x + self.dropout(attended))
        attended, cross_weights = self.cross_attention(x, memory, memory, memory_mask, need_weights)
        x = self.norm2(x + self.dropout(attended))
        return self.norm3(x + self.dropout(self.feed_forward(x))), self_weights, cross_weights
