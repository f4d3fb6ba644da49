"""Soft attention over the cells of a CNN's feature grid, asked a question (Xu et al. 2015, Show, Attend and Tell).

The grid's ``G x G`` cells are the keys and values; the question is the query. The weights are the same softmax
as everywhere in the book, reshaped back onto the image so they can be drawn over it and scored against the
object the question is about.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attn._checks import (
    check,
    check_images,
    check_positive_ints,
    check_question,
    check_same_dtype,
    check_shapes,
    checked,
)
from attn.functional import additive_scores, attend
from attn.vision.patches import ConvStem

__all__ = ["spatial_attention", "SpatialConfig", "SpatialOutput", "SoftAttentionNet", "PooledNet"]


def _spatial_attention_args(
    query: torch.Tensor,
    features: torch.Tensor,
    W_q: torch.Tensor,
    W_k: torch.Tensor,
    v: torch.Tensor,
    keys: torch.Tensor | None = None,
) -> None:
    keys = features if keys is None else keys
    check_shapes(query=(query, "B d_q"), features=(features, "B d G_h G_w"), keys=(keys, "B d_k G_h G_w"))
    check_same_dtype(features=features, keys=keys)
    additive_scores.check(query[:, None], keys.flatten(2).transpose(1, 2), W_q, W_k, v)


@checked(_spatial_attention_args)
def spatial_attention(
    query: torch.Tensor,
    features: torch.Tensor,
    W_q: torch.Tensor,
    W_k: torch.Tensor,
    v: torch.Tensor,
    keys: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``α = softmax(vᵀ tanh(W_q q + W_k k_i))`` over the cells, ``z = Σ_i α_i a_i`` (Xu et al. 2015, eqs. 4-6, with
    Bahdanau's score): query ``(B, d_q)``, features ``a`` ``(B, d, G_h, G_w)`` -> ``z (B, d)``, ``α (B, G_h, G_w)``.
    The keys ``k_i`` are the features themselves unless ``keys (B, d_k, G_h, G_w)`` are given."""
    keys = features if keys is None else keys
    B, d, G_h, G_w = features.shape
    a = features.flatten(2).transpose(1, 2)  # (B, G_h G_w, d): one value per cell
    k = keys.flatten(2).transpose(1, 2)  # (B, G_h G_w, d_k): one key per cell
    scores = additive_scores(query[:, None], k, W_q, W_k, v)  # (B, 1, G_h G_w)
    z, alpha = attend(scores, a)  # (B, 1, d), (B, 1, G_h G_w)
    return z[:, 0], alpha.view(B, G_h, G_w)


@dataclass
class SpatialConfig:
    """The CNN-with-attention model and its no-attention baseline: ``d_model`` channels in the grid, ``d_attention``
    in the additive score, one question per colour, one class per shape."""

    image_size: int = 24
    channels: int = 3
    d_model: int = 32
    d_attention: int = 32
    num_questions: int = 6
    num_classes: int = 4

    def __post_init__(self) -> None:
        check_positive_ints(self, "image_size", "channels", "d_model", "d_attention", "num_questions", "num_classes")
        check(self.image_size % 4 == 0,
              f"image_size must be divisible by 4 (the convolutional stem's grid), got {self.image_size}")  # fmt: skip


@dataclass
class SpatialOutput:
    """``logits (B, num_classes)`` and the attention over the grid ``(B, G, G)`` (uniform for :class:`PooledNet`)."""

    logits: torch.Tensor
    attention: torch.Tensor


class _GridModel(nn.Module):
    def __init__(self, config: SpatialConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.stem = ConvStem(config.channels, d)
        self.question = nn.Embedding(config.num_questions, d)
        self.classifier = nn.Sequential(nn.Linear(2 * d, d), nn.ReLU(), nn.Linear(d, config.num_classes))

    def _forward_args(self, images: torch.Tensor, question: torch.Tensor) -> None:
        B, *_ = check_images(images, self.config.channels, self.config.image_size, model=self)
        check_question(question, B, self.config.num_questions)

    def _features(self, images: torch.Tensor, question: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(self.stem(images)), self.question(question)  # (B, d, G, G), (B, d)


class SoftAttentionNet(_GridModel):
    """CNN grid -> the question attends over its cells -> the read vector and the question -> an MLP -> a shape.

    Each cell's key is made from its own 4 x 4 pixels only (a linear patch embedding), its value by the CNN, which
    sees 9 x 9 pixels around it (reaching 4 pixels up and left of the cell, 1 down and right): where to look is
    decided by what is in the cell, what is read there by its neighbourhood."""

    def __init__(self, config: SpatialConfig):
        super().__init__(config)
        d, d_a = config.d_model, config.d_attention
        self.keys = nn.Conv2d(config.channels, d, kernel_size=4, stride=4)  # (B, d, S/4, S/4)
        self.W_q = nn.Parameter(torch.randn(d_a, d) * d**-0.5)
        self.W_k = nn.Parameter(torch.randn(d_a, d) * d**-0.5)
        self.v = nn.Parameter(torch.randn(d_a) * d_a**-0.5)

    @checked(_GridModel._forward_args)
    def forward(self, images: torch.Tensor, question: torch.Tensor) -> SpatialOutput:
        """images ``(B, C, S, S)``, question ``(B,)`` -> logits ``(B, classes)``, attention ``(B, S/4, S/4)``."""
        grid, q = self._features(images, question)
        z, alpha = spatial_attention(q, grid, self.W_q, self.W_k, self.v, keys=self.keys(images))  # (B, d), (B, G, G)
        return SpatialOutput(self.classifier(torch.cat([z, q], dim=-1)), alpha)


class PooledNet(_GridModel):
    """The baseline without attention: the same CNN grid averaged over all cells (uniform weights), then the MLP."""

    @checked(_GridModel._forward_args)
    def forward(self, images: torch.Tensor, question: torch.Tensor) -> SpatialOutput:
        """images ``(B, C, S, S)``, question ``(B,)`` -> logits ``(B, classes)``, uniform weights ``(B, S/4, S/4)``."""
        grid, q = self._features(images, question)
        B, d, G_h, G_w = grid.shape
        uniform = grid.new_full((B, G_h, G_w), 1.0 / (G_h * G_w))
        z = grid.mean(dim=(2, 3))  # (B, d)
        return SpatialOutput(self.classifier(torch.cat([z, q], dim=-1)), uniform)
