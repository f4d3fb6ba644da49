"""The Vision Transformer (Dosovitskiy et al. 2021): an image as a sequence of patches, read by the book's encoder.

``z_0 = [x_class; x_p^1 E; ...; x_p^N E] + E_pos`` (eq. 1), then the encoder of chapter 8 (pre-LN, eqs. 2-3, with
the book's ReLU feed-forward where the paper uses GELU), and
the class token's final vector is classified (eq. 4). Here the class token also carries the question (its
embedding is added to it), so one token both asks and answers. With ``stem="conv"`` a small convolutional stem
replaces the linear patch embedding: the hybrid of convolution and attention (the CoAtNet idea, Dai et al. 2021).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attn._checks import check, check_choice, check_images, check_positive_ints, check_question, checked
from attn.blocks import Encoder, LearnedPositions
from attn.vision.patches import ConvStem, PatchEmbedding

__all__ = ["ViTConfig", "ViTOutput", "ViT"]

STEMS = ("patch", "conv")


@dataclass
class ViTConfig:
    """A small ViT: ``patch``-pixel patches (the conv stem's grid has the same cells), learned positions unless
    ``positions=False``, and a pre-LN encoder of ``num_layers`` layers. The positions start as N(0, 0.5²) noise,
    not ViT's 0.02: a model this small, trained this briefly, learned positions far more reliably so."""

    image_size: int = 24
    patch: int = 4
    channels: int = 3
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 128
    num_questions: int = 6
    num_classes: int = 4
    positions: bool = True
    stem: str = "patch"

    def __post_init__(self) -> None:
        check_positive_ints(self, "image_size", "patch", "channels", "d_model", "num_heads", "num_layers", "d_ff",
                            "num_questions", "num_classes")  # fmt: skip
        check_choice("stem", self.stem, STEMS)
        check(self.image_size % self.patch == 0 and (self.stem != "conv" or self.patch == 4),
              f"patch={self.patch} must divide image_size={self.image_size} (and be 4 with stem='conv')")  # fmt: skip


@dataclass
class ViTOutput:
    """``logits (B, classes)`` and each layer's attention ``(B, H, 1 + N, 1 + N)``; token 0 is the class token."""

    logits: torch.Tensor
    attention: tuple[torch.Tensor, ...] | None


class ViT(nn.Module):
    """Patches (or conv-stem cells) as tokens, a class token carrying the question, positions, encoder, classifier."""

    def __init__(self, config: ViTConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.grid = config.image_size // config.patch
        self.stem = (
            ConvStem(config.channels, d) if config.stem == "conv" else PatchEmbedding(config.channels, config.patch, d)
        )
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.question = nn.Embedding(config.num_questions, d)
        self.positions = LearnedPositions(d, 1 + self.grid**2) if config.positions else None
        self.encoder = Encoder(config.num_layers, d, config.num_heads, config.d_ff, dropout=0.0, norm_first=True)
        self.head = nn.Linear(d, config.num_classes)

    def tokens(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, C, S, S)`` -> the patch tokens ``(B, N, d_model)``, row by row."""
        x = self.stem(images)
        return x.flatten(2).transpose(1, 2) if self.config.stem == "conv" else x  # (B, N, d_model)

    def _forward_args(self, images: torch.Tensor, question: torch.Tensor, need_weights: bool = True) -> None:
        c = self.config
        B, *_ = check_images(images, c.channels, c.image_size, model=self)
        check_question(question, B, c.num_questions)

    @checked(_forward_args)
    def forward(self, images: torch.Tensor, question: torch.Tensor, need_weights: bool = True) -> ViTOutput:
        """images ``(B, C, S, S)``, question ``(B,)`` -> logits and, with ``need_weights``, every layer's attention."""
        cls = self.cls + self.question(question)[:, None]  # (B, 1, d_model)
        x = torch.cat([cls, self.tokens(images)], dim=1)  # (B, 1 + N, d_model)
        if self.positions is not None:
            x = self.positions(x)
        x, attention = self.encoder(x, need_weights=need_weights)
        return ViTOutput(self.head(x[:, 0]), attention)
