"""Four ways to mix information across positions (chapter 5; Vaswani et al. 2017, Table 1).

- ``"attention"``: ``y = W (x W_v) W_o`` with ``W = softmax(Q Kᵀ / √d_k)`` computed from the input itself, a new W
  for every sequence ("fast weights", Schmidhuber 1992; Ba et al. 2016).
- ``"linear"``: ``y = W (x W_v) W_o`` with one learned ``(T, T)`` W for every input (an MLP over positions, as in
  MLP-Mixer).
- ``"conv"``: a convolution over positions with ``d_model`` input and output channels, ``y_i = Σ_m x_{i+m} W_m``
  for ``|m| <= kernel_size // 2``, zero-padded; by default ``kernel_size = 2 max_len - 1``, so every position
  reaches every other in one layer. Its cost is the table's ``O(k · T · d²)``.
- ``"recurrent"``: a bidirectional GRU (Cho et al. 2014), the forward and backward states concatenated and
  projected by ``W_o``: position i has read the whole string, one step at a time.

Only the first two mix with one ``(T, T)`` matrix per sequence; :meth:`TokenMixer.mixing` returns it. Used by
:class:`MixerTagger`, which predicts a label at every position, to compare the four.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from attn._checks import check, check_choice, check_positive_int, check_tokens, checked, describe
from attn.blocks.layers import FeedForward, LayerNorm
from attn.functional import scaled_dot_product_attention

__all__ = ["MIXERS", "TokenMixer", "TaggerOutput", "MixerTagger"]

MIXERS = ("attention", "linear", "conv", "recurrent")


class TokenMixer(nn.Module):
    """Mix positions: ``(B, T, d_model) -> (B, T, d_model)`` and the mixing matrix W ``(B, T, T)`` (``None`` for
    ``"conv"`` and ``"recurrent"``, which have none).

    For ``"attention"``, queries and keys have ``d_k`` features (``d_model`` by default) and the scores are
    divided by ``√d_k`` unless ``scaled=False`` (to measure what the scale is for). ``match_scaled_start=True``
    (with ``scaled=False`` only) divides the initial ``W_q`` and ``W_k`` (weights and biases) by ``d_k^(1/4)``:
    the unscaled mixer then starts as exactly the function the scaled one starts as, from the same seed.
    ``kernel_size`` (odd) is the convolution's width, ``2 max_len - 1`` by default.
    """

    def __init__(
        self,
        kind: str,
        d_model: int,
        max_len: int,
        kernel_size: int | None = None,
        *,
        d_k: int | None = None,
        scaled: bool = True,
        match_scaled_start: bool = False,
    ):
        super().__init__()
        check_choice("kind", kind, MIXERS)
        self.kind, self.max_len = kind, check_positive_int("max_len", max_len)
        self.d_model = d_model = check_positive_int("d_model", d_model)
        check(kernel_size is None or kind == "conv", f"kernel_size is an option of the conv mixer, not of {kind!r}")
        kernel_size = 2 * max_len - 1 if kernel_size is None else check_positive_int("kernel_size", kernel_size)
        check(kernel_size % 2 == 1, f"kernel_size must be odd (centred on the position), got {kernel_size}")
        for name, flag in (("scaled", scaled), ("match_scaled_start", match_scaled_start)):
            check(isinstance(flag, bool), f"{name} must be True or False, got {flag!r}")
        check(kind == "attention" or (d_k is None and scaled and not match_scaled_start),
              f"d_k, scaled and match_scaled_start are options of the attention mixer, not of {kind!r}")  # fmt: skip
        check(not (scaled and match_scaled_start), "match_scaled_start=True is for the unscaled mixer (scaled=False)")
        d_k = d_model if d_k is None else check_positive_int("d_k", d_k)
        self.scaled = scaled
        if kind in ("attention", "linear"):
            self.W_v = nn.Linear(d_model, d_model)
        if kind == "attention":
            self.W_q, self.W_k = nn.Linear(d_model, d_k), nn.Linear(d_model, d_k)
            if match_scaled_start:
                with torch.no_grad():  # (c q)·(c k) = q·k / √d_k for c = d_k^(-1/4)
                    for p in (*self.W_q.parameters(), *self.W_k.parameters()):
                        p.div_(d_k**0.25)
        elif kind == "linear":
            self.W = nn.Parameter(torch.randn(max_len, max_len) / math.sqrt(max_len))
        elif kind == "conv":
            self.conv = nn.Conv1d(d_model, d_model, kernel_size, padding=kernel_size // 2)
        else:
            self.rnn = nn.GRU(d_model, d_model, batch_first=True, bidirectional=True)
        self.W_o = nn.Linear(2 * d_model if kind == "recurrent" else d_model, d_model)

    def _forward_args(self, x: torch.Tensor) -> None:
        check(isinstance(x, torch.Tensor) and x.dim() == 3 and x.shape[-1] == self.d_model,
              lambda: f"x must have shape (B, T, d_model={self.d_model}), got {describe(x)}")  # fmt: skip
        self._check_length(x.shape[1])

    def _mixing_args(self, x: torch.Tensor) -> None:
        check(self.kind in ("attention", "linear"), lambda: f"the {self.kind!r} mixer has no (T, T) mixing matrix")
        self._forward_args(x)

    def _check_length(self, T: int, name: str = "x") -> None:
        """A sequence of T positions fits the mixer (``max_len``), else a ValueError naming ``name``."""
        check(T <= self.max_len, lambda: f"{name} has length T={T} but this mixer was built for max_len={self.max_len}")

    @checked(_mixing_args)
    def mixing(self, x: torch.Tensor) -> torch.Tensor:
        """The ``(B, T, T)`` matrix that mixes positions for input ``x`` ``(B, T, d_model)``."""
        B, T, _ = x.shape
        if self.kind == "attention":
            scale = None if self.scaled else 1.0  # None: 1/√d_k
            return scaled_dot_product_attention(self.W_q(x), self.W_k(x), x, scale=scale)[1]  # (B, T, T)
        return self.W[:T, :T].expand(B, T, T)  # kind == "linear": _mixing_args refused the kinds without a matrix

    @checked(_forward_args)
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(B, T, d_model)`` -> the mixed ``(B, T, d_model)`` and the mixing matrix ``(B, T, T)`` (or ``None``)."""
        if self.kind in ("attention", "linear"):
            W = self.mixing(x)  # (B, T, T)
            return self.W_o(W @ self.W_v(x)), W
        if self.kind == "conv":
            return self.W_o(self.conv(x.transpose(1, 2)).transpose(1, 2)), None  # (B, d, T) -> (B, T, d)
        states, _ = self.rnn(x)  # (B, T, 2 d_model): forward and backward
        return self.W_o(states), None


@dataclass
class TaggerOutput:
    """``logits (B, T, num_labels)`` and the ``(B, T, T)`` matrix that mixed the positions (attention weights
    for ``"attention"``; a learned, possibly negative, matrix for ``"linear"``; ``None`` for ``"conv"`` and
    ``"recurrent"``)."""

    logits: torch.Tensor
    mixing: torch.Tensor | None


class MixerTagger(nn.Module):
    """Embed tokens (no positions), mix positions once (residual), a feed-forward layer (residual), and
    predict one of ``num_labels`` at every position. ``d_k``, ``scaled`` and ``match_scaled_start`` go to the
    attention mixer, ``kernel_size`` to the convolution (:class:`TokenMixer`)."""

    def __init__(
        self,
        kind: str,
        vocab_size: int,
        num_labels: int,
        max_len: int,
        d_model: int = 32,
        d_ff: int = 64,
        *,
        d_k: int | None = None,
        scaled: bool = True,
        match_scaled_start: bool = False,
        kernel_size: int | None = None,
    ):
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.mixer = TokenMixer(
            kind, d_model, max_len, kernel_size, d_k=d_k, scaled=scaled, match_scaled_start=match_scaled_start
        )
        self.norm1, self.norm2 = LayerNorm(d_model), LayerNorm(d_model)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.out = nn.Linear(d_model, check_positive_int("num_labels", num_labels))

    def _forward_args(self, tokens: torch.Tensor) -> None:
        check_tokens("tokens", tokens, self.vocab_size)
        self.mixer._check_length(tokens.shape[1], "tokens")

    @checked(_forward_args)
    def forward(self, tokens: torch.Tensor) -> TaggerOutput:
        """ids ``(B, T)`` -> logits ``(B, T, num_labels)`` and the mixing matrix ``(B, T, T)`` (or ``None``)."""
        x = self.embedding(tokens)  # (B, T, d_model)
        mixed, W = self.mixer(self.norm1(x))
        x = x + mixed
        x = x + self.feed_forward(self.norm2(x))
        return TaggerOutput(self.out(x), W)
