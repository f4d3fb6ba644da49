"""The blocks of a Transformer layer: LayerNorm, the position-wise feed-forward network, encoder and decoder layers.

Each sub-layer sits in a residual connection. Post-LN (the paper, §3.1): ``x = LayerNorm(x + Sublayer(x))``.
Pre-LN (Xiong et al. 2020; GPT-2): ``x = x + Sublayer(LayerNorm(x))``, easier to train when deep.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from typing import cast, overload

import torch
import torch.nn.functional as F
from torch import nn

from attn._checks import (
    check,
    check_choice,
    check_dropout,
    check_nonnegative_int,
    check_positive_int,
    checked,
    describe,
)
from attn.blocks.attention import KeyValue, MultiHeadAttention

__all__ = ["layer_norm", "LayerNorm", "FeedForward", "EncoderLayer", "DecoderLayer", "Encoder", "Decoder"]

_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"relu": F.relu, "gelu": F.gelu}


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """``γ (x - μ) / √(σ² + ε) + β`` with μ, σ² the mean and (biased) variance over features (Ba et al. 2016, eq. 4)."""
    var, mu = torch.var_mean(x, dim=-1, correction=0, keepdim=True)  # σ², μ: (..., 1) each
    return (x - mu) * torch.rsqrt(var + eps) * gamma + beta


class LayerNorm(nn.Module):
    """Layer normalization over the last dimension, with a learned gain γ (ones) and bias β (zeros): the equation of
    :func:`layer_norm`, computed by torch's fused kernel (``F.layer_norm``; 4-9 times faster on a CPU than the
    equation's tensor passes, ``benchmarks/transformer.py``; tests check it against :func:`layer_norm`)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        check(not isinstance(eps, bool) and isinstance(eps, numbers.Real) and eps > 0,
              f"eps must be a positive number, got {eps!r}")  # fmt: skip
        self.eps = float(eps)
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def _forward_args(self, x: torch.Tensor) -> None:
        check(isinstance(x, torch.Tensor) and x.dim() >= 1 and x.shape[-1] == self.d_model,
              lambda: f"x must have shape (..., d_model={self.d_model}), got {describe(x)}")  # fmt: skip

    @checked(_forward_args)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., d_model) -> (..., d_model)``, every feature vector normalized on its own."""
        return F.layer_norm(x, (self.d_model,), self.gamma, self.beta, self.eps)  # = layer_norm(x, γ, β, ε)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"


class FeedForward(nn.Module):
    """``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2`` (§3.3, eq. 2), the same at every position; GELU optional."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        check_choice("activation", activation, sorted(_ACTIVATIONS))
        self.W_1 = nn.Linear(check_positive_int("d_model", d_model), check_positive_int("d_ff", d_ff))
        self.W_2 = nn.Linear(d_ff, d_model)
        self.activation = activation
        self.dropout = nn.Dropout(check_dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, d_model) -> (B, T, d_model)``."""
        return self.W_2(self.dropout(_ACTIVATIONS[self.activation](self.W_1(x))))


class _Residual(nn.Module):
    """What every Transformer layer shares: the residual connection around each of its sub-layers."""

    dropout: nn.Dropout
    norm_first: bool

    # A sublayer that returns a tensor gives a tensor, one that returns a tuple a tuple (x, *rest).
    @overload
    def residual(self, x: torch.Tensor, norm: LayerNorm, sublayer: Callable[..., torch.Tensor]) -> torch.Tensor: ...
    @overload
    def residual(self, x: torch.Tensor, norm: LayerNorm, sublayer: Callable[..., tuple]) -> tuple: ...
    def residual(
        self,
        x: torch.Tensor,
        norm: LayerNorm,
        sublayer: Callable,
    ) -> torch.Tensor | tuple:
        """Post-LN ``norm(x + dropout(sublayer(x)))`` (§3.1, §5.4);
        pre-LN ``x + dropout(sublayer(norm(x)))``.

        A sublayer may return a tuple led by its output (attention: the
        weights, a cache); the rest follows x."""
        out = sublayer(norm(x) if self.norm_first else x)
        y, rest = (out[0], out[1:]) if isinstance(out, tuple) else (out, None)
        x = x + self.dropout(y)  # (B, T, d_model)
        if not self.norm_first:
            x = norm(x)
        return x if rest is None else (x, *rest)


class EncoderLayer(_Residual):
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
        num_kv_heads: int | None = None,
    ):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout, num_kv_heads=num_kv_heads)
        d_ff = check_nonnegative_int("d_ff", d_ff)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation) if d_ff else None
        self.norm1 = LayerNorm(d_model, eps)
        self.norm2 = LayerNorm(d_model, eps) if d_ff else None
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.norm_first = bool(norm_first)

    def _forward_args(self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True) -> None:
        MultiHeadAttention.forward.check(self.self_attention, x, x, x, mask)

    @checked(_forward_args)
    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x ``(B, T, d_model)``, mask bool ``(B, 1, T, T)``-broadcastable (True = may attend) ->
        ``(B, T, d_model)`` and the self-attention weights ``(B, H, T, T)`` (None without ``need_weights``)."""
        x, weights = self.residual(
            x,
            self.norm1,
            lambda h: self.self_attention(h, h, h, mask, need_weights),
        )
        if self.feed_forward is not None and self.norm2 is not None:  # d_ff=0: neither (attention only, chapter 11)
            x = self.residual(x, self.norm2, self.feed_forward)  # (B, T, D)
        return x, weights

    def extend(
        self, x: torch.Tensor, past: KeyValue | None = None, mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None, KeyValue]:
        """:meth:`forward` for Tn new positions x ``(B, Tn, d_model)`` after the tokens whose keys and values
        ``past`` holds (:meth:`MultiHeadAttention.extend`); mask ``(B, 1, Tn, T)``-broadcastable, T = len(past) + Tn
        -> ``(B, Tn, d_model)``, the new rows of the self-attention ``(B, H, Tn, T)`` and the extended cache."""
        x, weights, cache = self.residual(
            x, self.norm1, lambda h: self.self_attention.extend(h, past, mask, need_weights)
        )
        if self.feed_forward is not None and self.norm2 is not None:
            x = self.residual(x, self.norm2, self.feed_forward)  # (B, Tn, d_model)
        return x, weights, cache


class DecoderLayer(_Residual):
    """Masked self-attention, cross-attention to the encoder's output, feed-forward; each residual + LayerNorm."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "relu",
        eps: float = 1e-5,
        num_kv_heads: int | None = None,
    ):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout, num_kv_heads=num_kv_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads, dropout, num_kv_heads=num_kv_heads)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1, self.norm2, self.norm3 = (LayerNorm(d_model, eps) for _ in range(3))
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.norm_first = bool(norm_first)

    def _forward_args(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> None:
        MultiHeadAttention.forward.check(self.self_attention, x, x, x, self_mask)
        MultiHeadAttention.forward.check(self.cross_attention, x, memory, memory, memory_mask)

    @checked(_forward_args)
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
        x, self_weights = self.residual(x, self.norm1, lambda h: self.self_attention(h, h, h, self_mask, need_weights))
        x, cross_weights = self.residual(
            x, self.norm2, lambda h: self.cross_attention(h, memory, memory, memory_mask, need_weights)
        )
        x = self.residual(x, self.norm3, self.feed_forward)  # (B, T, d_model)
        return x, self_weights, cross_weights


class _Stack(nn.Module):
    """``num_layers`` copies of one layer (§3.1); a pre-LN stack ends with a LayerNorm (its residual stream is
    never normalized otherwise)."""

    layer: type[nn.Module]

    def __init__(
        self,
        num_layers,
        d_model,
        num_heads,
        d_ff,
        dropout=0.1,
        norm_first=False,
        activation="relu",
        eps=1e-5,
        num_kv_heads=None,
    ):
        super().__init__()
        layer_args = (d_model, num_heads, d_ff, dropout, norm_first, activation, eps, num_kv_heads)
        self.layers = nn.ModuleList(
            self.layer(*layer_args) for _ in range(check_positive_int("num_layers", num_layers))
        )
        self.norm = LayerNorm(d_model, eps) if norm_first else None


class Encoder(_Stack):
    """A stack of ``num_layers`` :class:`EncoderLayer` (§3.1); a pre-LN stack ends with a LayerNorm."""

    layer = EncoderLayer

    def _forward_args(self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True) -> None:
        EncoderLayer.forward.check(self.layers[0], x, mask, need_weights)

    def _extend_args(
        self,
        x: torch.Tensor,
        past: tuple[KeyValue, ...] | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> None:
        if past is not None:
            self._check_layers(past)
        for i, layer in enumerate(self.layers):
            MultiHeadAttention.extend.check(layer.self_attention, x, None if past is None else past[i], mask)

    def check_past(self, past: object, B: int) -> None:
        """``past`` is a cache for this stack and a batch of B: a tuple of one :class:`KeyValue` per layer."""
        self._check_layers(past)
        for layer, kv in zip(cast(Iterable[EncoderLayer], self.layers), cast(tuple, past), strict=True):
            layer.self_attention.check_past(kv, B)

    def _check_layers(self, past: object) -> None:
        check(isinstance(past, tuple) and len(past) == len(self.layers),
              lambda: f"past must be a tuple of one KeyValue per layer ({len(self.layers)}), got "
              f"{f'{len(past)} entries' if isinstance(past, tuple) else type(past).__name__}")  # fmt: skip

    @checked(_forward_args)
    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """``(B, T, d_model)`` -> ``(B, T, d_model)`` and each layer's self-attention ``(B, H, T, T)``."""
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask, need_weights)
            weights.append(w)
        if self.norm is not None:
            x = self.norm(x)
        return x, tuple(weights) if need_weights else None

    @checked(_extend_args)
    def extend(
        self,
        x: torch.Tensor,
        past: tuple[KeyValue, ...] | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None, tuple[KeyValue, ...]]:
        """:meth:`forward` for Tn new positions ``(B, Tn, d_model)`` after the tokens cached in ``past`` (one
        :class:`KeyValue` per layer) -> ``(B, Tn, d_model)``, each layer's ``(B, H, Tn, T)`` and the new cache."""
        weights, cache = [], []
        for i, layer in enumerate(cast(Iterable[EncoderLayer], self.layers)):
            x, w, kv = layer.extend(x, None if past is None else past[i], mask, need_weights)
            weights.append(w)
            cache.append(kv)
        if self.norm is not None:
            x = self.norm(x)
        return x, tuple(cast(list[torch.Tensor], weights)) if need_weights else None, tuple(cache)


class Decoder(_Stack):
    """A stack of ``num_layers`` :class:`DecoderLayer` (§3.1); a pre-LN stack ends with a LayerNorm."""

    layer = DecoderLayer

    def _forward_args(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> None:
        DecoderLayer.forward.check(self.layers[0], x, memory, self_mask, memory_mask)

    @checked(_forward_args)
    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None, tuple[torch.Tensor, ...] | None]:
        """``(B, T, d_model)``, memory ``(B, S, d_model)`` -> ``(B, T, d_model)``, each layer's self-attention
        ``(B, H, T, T)`` and cross-attention ``(B, H, T, S)``."""
        self_weights, cross_weights = [], []
        for layer in self.layers:
            x, s, c = layer(x, memory, self_mask, memory_mask, need_weights)
            self_weights.append(s)
            cross_weights.append(c)
        if self.norm is not None:
            x = self.norm(x)
        if not need_weights:
            return x, None, None
        return x, tuple(self_weights), tuple(cross_weights)
