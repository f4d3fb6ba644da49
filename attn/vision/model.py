"""The models of chapter 9: soft attention over a CNN's grid, hard attention that chooses where to look, and the
Vision Transformer.

Soft attention over the cells of a CNN's feature grid, asked a question (Xu et al. 2015, Show, Attend and Tell).
The grid's ``G x G`` cells are the keys and values; the question is the query. The weights are the same softmax
as everywhere in the book, reshaped back onto the image so they can be drawn over it and scored against the
object the question is about.

The recurrent attention model (Mnih et al. 2014): hard attention that chooses where to look, trained by REINFORCE. At
each step the model chooses a place, takes a glimpse there and folds it into a recurrent state. Mnih et al. sample a
continuous location from a Gaussian; here the policy is a softmax over a ``grid x grid`` lattice of places, each scored
by Bahdanau's additive score of the state against what the periphery (the image averaged down to ``grid x grid``, Ba et
al. 2015's "context network"; Mnih et al. had none: ``RAMConfig(context=False)``) shows there: the scores of soft
attention, sampled instead of averaged (Xu et al. 2015's "hard" attention). Sampling is not differentiable, so the
policy is trained by REINFORCE (Williams 1992): raise the log-probability of the places it chose in proportion to how
much better the reward (1 for a right answer) was than a learned baseline. The classifier, the core and the glimpse
network are trained by backpropagation, and the REINFORCE term reaches them too, through the state the policy reads (eq.
2 of Mnih et al. covers all parameters); only the baseline reads a detached state, so that its squared error trains it
alone (:mod:`attn.vision.ram`: the hybrid loss).

The Vision Transformer (Dosovitskiy et al. 2021): an image as a sequence of patches, read by the book's encoder.
``z_0 = [x_class; x_p^1 E; ...; x_p^N E] + E_pos`` (eq. 1), then the encoder of chapter 8 (pre-LN, eqs. 2-3, with
the book's ReLU feed-forward where the paper uses GELU), and
the class token's final vector is classified (eq. 4). Here the class token also carries the question (its
embedding is added to it), so one token both asks and answers. With ``stem="conv"`` a small convolutional stem
replaces the linear patch embedding: the hybrid of convolution and attention (the CoAtNet idea, Dai et al. 2021).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attn._checks import (
    check,
    check_choice,
    check_images,
    check_positive_ints,
    check_question,
    check_same_dtype,
    check_shapes,
    checked,
)
from attn._random import sample
from attn.blocks import Encoder, LearnedPositions
from attn.functional import additive_scores, attend
from attn.vision.glimpse import glimpse
from attn.vision.patches import ConvStem, PatchEmbedding

__all__ = [
    "spatial_attention",
    "SpatialConfig",
    "SpatialOutput",
    "SoftAttentionNet",
    "PooledNet",
    "RAMConfig",
    "RAMOutput",
    "RecurrentAttention",
    "ViTConfig",
    "ViTOutput",
    "ViT",
]


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


@dataclass
class RAMConfig:
    """``glimpses`` glimpses of ``scales`` crops of ``glimpse x glimpse`` pixels; a GRU core of ``hidden`` units; a
    location policy over the centres of a ``grid x grid`` partition of the image, with additive scores of size
    ``d_attention``. With ``context`` (Ba et al. 2015's context network) the policy scores each place against a
    coarse view of the whole image, the image averaged down to ``grid x grid``; without it (Mnih et al. 2014) the
    model sees nothing but its glimpses, and each place's key is a learned vector."""

    image_size: int = 24
    channels: int = 3
    glimpse: int = 6
    scales: int = 2
    glimpses: int = 2
    hidden: int = 128
    num_questions: int = 6
    num_classes: int = 4
    grid: int = 6
    d_attention: int = 32
    context: bool = True

    def __post_init__(self) -> None:
        check_positive_ints(self, "image_size", "channels", "glimpse", "scales", "glimpses", "hidden", "num_questions",
                            "num_classes", "grid", "d_attention")  # fmt: skip
        check(isinstance(self.context, bool), f"context must be True or False, got {self.context!r}")
        check(self.image_size % self.grid == 0,
              f"grid={self.grid} must divide image_size={self.image_size}: one place per cell")  # fmt: skip


@dataclass
class RAMOutput:
    """``logits (B, classes)``; ``locations (B, glimpses, 2)`` where it looked, ``(row, column)`` in [-1, 1];
    ``policy (B, glimpses, grid, grid)``, the distribution each location was drawn from; ``log_probs (B,
    glimpses)`` of the locations drawn and ``baselines (B, glimpses)``, the reward expected when each was chosen."""

    logits: torch.Tensor
    locations: torch.Tensor
    policy: torch.Tensor
    log_probs: torch.Tensor
    baselines: torch.Tensor


class RecurrentAttention(nn.Module):
    """Glimpse network, GRU core, location policy, baseline and classifier (Mnih et al. 2014, Fig. 1). The question
    sets the initial state, so the model knows what to look for. In training the locations are sampled; in eval
    mode the most likely place is taken."""

    places: torch.Tensor  # a buffer: the centres of the grid's cells

    def __init__(self, config: RAMConfig):
        super().__init__()
        self.config = config
        n, sensed = config.hidden, config.scales * config.channels * config.glimpse**2
        self.what = nn.Linear(sensed, n)  # h_g: the glimpse's content
        self.where = nn.Linear(2, n)  # h_l: where it was taken
        self.glimpse_net = nn.Linear(2 * n, n)  # g = f_g(ρ(x, l), l)
        self.core = nn.GRUCell(n, n)
        self.question = nn.Embedding(config.num_questions, n)
        d_a = config.d_attention  # the policy: additive scores of the state against each place's periphery
        self.W_h = nn.Parameter(torch.randn(d_a, n) * n**-0.5)
        self.W_p = nn.Parameter(torch.randn(d_a, config.channels) * config.channels**-0.5)
        self.v = nn.Parameter(torch.randn(d_a) * d_a**-0.5)
        if not config.context:  # no coarse view: a learned key per place, (grid², C)
            self.place_keys = nn.Parameter(torch.randn(config.grid**2, config.channels))
        centres = (torch.arange(config.grid) + 0.5) / config.grid * 2 - 1  # (grid,) cell centres in [-1, 1]
        rows, cols = torch.meshgrid(centres, centres, indexing="ij")
        self.register_buffer("places", torch.stack([rows, cols], -1).view(-1, 2), persistent=False)  # (grid², 2)
        self.baseline = nn.Linear(n, 1)
        self.classifier = nn.Linear(n, config.num_classes)

    def _glimpse_features(self, images: torch.Tensor, location: torch.Tensor) -> torch.Tensor:
        c = self.config
        seen = glimpse(images, location, c.glimpse, c.scales).flatten(1)  # (B, scales C size²)
        return F.relu(self.glimpse_net(torch.cat([F.relu(self.what(seen)), F.relu(self.where(location))], -1)))

    def _forward_args(self, images: torch.Tensor, question: torch.Tensor) -> None:
        c = self.config
        B, *_ = check_images(images, c.channels, c.image_size, model=self)
        check_question(question, B, c.num_questions)

    @checked(_forward_args)
    def forward(self, images: torch.Tensor, question: torch.Tensor) -> RAMOutput:
        """images ``(B, C, S, S)``, question ``(B,)`` -> :class:`RAMOutput`."""
        c = self.config
        B = len(images)
        h = torch.tanh(self.question(question))  # (B, hidden): what to look for
        if c.context:  # the coarse view: every pixel averaged into its cell, (B, grid², C)
            periphery = F.adaptive_avg_pool2d(images, c.grid).flatten(2).transpose(1, 2)
        else:  # nothing seen yet: each place's learned key, (B, grid², C)
            periphery = self.place_keys.expand(B, -1, -1)
        locations, policies, log_probs, baselines = [], [], [], []
        for _ in range(c.glimpses):
            scores = additive_scores(h[:, None], periphery, self.W_h, self.W_p, self.v)[:, 0]  # (B, grid²)
            log_pi = torch.log_softmax(scores, dim=-1)  # (B, grid²)
            # (B,): sampled in training (hard attention, by torch's CPU generator on any device), the most likely
            # place in eval mode
            place = sample(log_pi.exp(), None)[:, 0] if self.training else log_pi.argmax(-1)
            location = self.places[place]  # (B, 2)
            log_probs.append(log_pi.gather(1, place[:, None])[:, 0])  # (B,)
            baselines.append(self.baseline(h.detach())[:, 0])  # (B,): the reward expected from here
            policies.append(log_pi.exp().view(B, c.grid, c.grid))
            locations.append(location)
            h = self.core(self._glimpse_features(images, location), h)
        stack = lambda xs: torch.stack(xs, dim=1)  # noqa: E731
        return RAMOutput(self.classifier(h), stack(locations), stack(policies), stack(log_probs), stack(baselines))


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
