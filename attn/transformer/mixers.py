"""Three ways to mix information across positions, each ``y = W v`` with a ``(T, T)`` matrix W over positions.

- ``"attention"``: ``W = softmax(Q Kᵀ / √d)`` is computed from the input itself, a new W for every sequence
  ("fast weights", Schmidhuber 1992; Ba et al. 2016).
- ``"linear"``: one learned W for every input (an MLP over positions, as in MLP-Mixer).
- ``"conv"``: a learned W that is banded and Toeplitz: ``W[i, j] = w[j - i]`` for ``|j - i| <= k // 2``, a
  convolution over positions with one kernel (shared by all features).

Used by :class:`MixerTagger`, which predicts a label at every position, to compare the three.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from attn._checks import check_positive_int, check_tokens, shape_of
from attn.blocks.layers import FeedForward, LayerNorm
from attn.functional import scaled_dot_product_attention
from attn.training import History
from attn.transformer.tagging import train_tagger

__all__ = ["MIXERS", "TokenMixer", "TaggerOutput", "MixerTagger", "train_mixer_tagger"]

MIXERS = ("attention", "linear", "conv")


class TokenMixer(nn.Module):
    """``y = W(x) (x W_v) W_o``: ``(B, T, d_model) -> (B, T, d_model)`` and the mixing matrix W ``(B, T, T)``.

    For ``"attention"``, queries and keys have ``d_k`` features (``d_model`` by default) and the scores are
    divided by ``√d_k`` unless ``scaled=False`` (to measure what the scale is for).
    """

    def __init__(
        self,
        kind: str,
        d_model: int,
        max_len: int,
        kernel_size: int = 3,
        *,
        d_k: int | None = None,
        scaled: bool = True,
    ):
        super().__init__()
        if kind not in MIXERS:
            raise ValueError(f"kind must be one of {MIXERS}, got {kind!r}")
        self.kind, self.max_len = kind, check_positive_int("max_len", max_len)
        d_model = check_positive_int("d_model", d_model)
        kernel_size = check_positive_int("kernel_size", kernel_size)
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd (centred on the position), got {kernel_size}")
        if not isinstance(scaled, bool):
            raise ValueError(f"scaled must be True or False, got {scaled!r}")
        if kind != "attention" and (d_k is not None or not scaled):
            raise ValueError(f"d_k and scaled are options of the attention mixer, not of {kind!r}")
        d_k = d_model if d_k is None else check_positive_int("d_k", d_k)
        self.scaled = scaled
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        if kind == "attention":
            self.W_q, self.W_k = nn.Linear(d_model, d_k), nn.Linear(d_model, d_k)
        elif kind == "linear":
            self.W = nn.Parameter(torch.randn(max_len, max_len) / math.sqrt(max_len))
        else:
            self.kernel = nn.Parameter(torch.randn(kernel_size) / math.sqrt(kernel_size))

    def mixing(self, x: torch.Tensor) -> torch.Tensor:
        """The ``(B, T, T)`` matrix that mixes positions for input ``x`` ``(B, T, d_model)``."""
        B, T, _ = x.shape
        if T > self.max_len:
            raise ValueError(f"x has length T={T} but this mixer was built for max_len={self.max_len}")
        if self.kind == "attention":
            scale = None if self.scaled else 1.0  # None: 1/√d_k
            return scaled_dot_product_attention(self.W_q(x), self.W_k(x), x, scale=scale)[1]  # (B, T, T)
        if self.kind == "linear":
            return self.W[:T, :T].expand(B, T, T)
        k = self.kernel.shape[0] // 2
        positions = torch.arange(T, device=x.device)
        offset = positions[None, :] - positions[:, None]  # (T, T): j - i
        band = offset.abs() <= k
        W = torch.where(
            band, self.kernel[(offset + k).clamp(0, 2 * k)], torch.zeros((), dtype=x.dtype, device=x.device)
        )
        return W.expand(B, T, T)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, T, d_model)`` -> ``y = W (x W_v) W_o`` ``(B, T, d_model)`` and the mixing matrix W ``(B, T, T)``."""
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.W_v.in_features:
            got = shape_of(x) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (B, T, d_model={self.W_v.in_features}), got {got}")
        W = self.mixing(x)  # (B, T, T)
        return self.W_o(W @ self.W_v(x)), W


@dataclass
class TaggerOutput:
    """``logits (B, T, num_labels)`` and the ``(B, T, T)`` matrix that mixed the positions (attention weights
    for ``"attention"``; a learned, possibly negative, matrix for ``"linear"`` and ``"conv"``)."""

    logits: torch.Tensor
    mixing: torch.Tensor


class MixerTagger(nn.Module):
    """Embed tokens (no positions), mix positions once (residual), a feed-forward layer (residual), and
    predict one of ``num_labels`` at every position. ``d_k`` and ``scaled`` go to the attention mixer
    (:class:`TokenMixer`)."""

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
    ):
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.mixer = TokenMixer(kind, d_model, max_len, d_k=d_k, scaled=scaled)
        self.norm1, self.norm2 = LayerNorm(d_model), LayerNorm(d_model)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.out = nn.Linear(d_model, check_positive_int("num_labels", num_labels))

    def forward(self, tokens: torch.Tensor) -> TaggerOutput:
        """ids ``(B, T)`` -> logits ``(B, T, num_labels)`` and the mixing matrix ``(B, T, T)``."""
        check_tokens("tokens", tokens, self.vocab_size)
        x = self.embedding(tokens)  # (B, T, d_model)
        mixed, W = self.mixer(self.norm1(x))
        x = x + mixed
        x = x + self.feed_forward(self.norm2(x))
        return TaggerOutput(self.out(x), W)


def train_mixer_tagger(
    kind: str,
    data: tuple[torch.Tensor, torch.Tensor],
    vocab_size: int,
    num_labels: int,
    *,
    steps: int = 600,
    seed: int = 0,
    valid: tuple[torch.Tensor, torch.Tensor] | None = None,
    every: int = 100,
    d_k: int | None = None,
    scaled: bool = True,
    progress: bool = False,
) -> tuple[MixerTagger, History]:
    """A :class:`MixerTagger` built from ``seed`` and trained on ``data = (inputs, labels)`` (both ``(N, T)``) with
    :func:`attn.transformer.train_tagger` from the same seed: one run, as :func:`attn.training.over_seeds` repeats it.

    Returns the trained model and its history (accuracy on ``valid`` every ``every`` steps, if given).
    """
    inputs, labels = data
    build = partial(MixerTagger, kind, vocab_size, num_labels, max_len=inputs.shape[1], d_k=d_k, scaled=scaled)
    return train_tagger(build, inputs, labels, steps, seed=seed, every=every, valid=valid, progress=progress)
