"""Pictures of attention over images: maps drawn over the picture, glimpse boxes, patches. Tensors in, no models."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import cast

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from attn._checks import check, check_positive_int, checked

__all__ = ["image_attention", "scene_grid", "patch_grid"]

BOX_COLOURS = ("white", "orange", "deepskyblue", "lime")


def _check_image(name: str, image: object) -> tuple[int, int, int]:
    """``C, H, W`` of an image to draw: ``(C, H, W)`` with 1 or 3 channels, uint8 (0-255) or values in [0, 1]; any
    other range is refused, never clipped to white or black without a word."""
    image = torch.as_tensor(image).detach()
    check(image.dim() == 3 and image.shape[0] in (1, 3),
          lambda: f"{name} must be (C, H, W) with 1 or 3 channels, got {tuple(image.shape)}")  # fmt: skip
    values = image.float()  # rounding passes; NaN fails
    inside = image.dtype == torch.uint8 or not values.numel() or bool(((values >= -1e-6) & (values <= 1 + 1e-6)).all())
    check(inside, lambda: f"{name} must hold values in [0, 1] (or be uint8, 0-255), got {values.dtype} values from "
          f"{float(values.min()):.4g} to {float(values.max()):.4g}")  # fmt: skip
    C, H, W = image.shape
    return C, H, W


def _check_map(name: str, weights: object, H: int, W: int) -> None:
    shape = tuple(torch.as_tensor(weights).shape)
    check(len(shape) == 2 and 0 not in shape and not H % shape[0] and not W % shape[1],
          lambda: f"{name} must be (G_h, G_w) dividing the image {H} x {W}, got {shape}")  # fmt: skip


def _picture(image: torch.Tensor) -> torch.Tensor:
    """``(C, H, W)`` floats to draw; a uint8 image (0-255) is scaled to [0, 1]."""
    image = torch.as_tensor(image).detach().cpu()
    return image.float() / 255 if image.dtype == torch.uint8 else image.float()


def _image_attention_args(
    image: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    ax: Axes | None = None,
    title: str = "",
    boxes: torch.Tensor | None = None,
    alpha: float = 0.45,
) -> None:
    C, H, W = _check_image("image", image)
    if weights is not None:
        _check_map("weights", weights, H, W)


@checked(_image_attention_args)
def image_attention(
    image: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    ax: Axes | None = None,
    title: str = "",
    boxes: torch.Tensor | None = None,
    alpha: float = 0.45,
) -> Axes:
    """The image ``(C, H, W)`` with an attention map ``(G, G)`` over it (each cell covers ``H/G`` pixels): cells with
    more weight are lit up, the rest of the image is dimmed; optionally, glimpse ``boxes (k, 4)`` as ``(top, left,
    height, width)`` in pixels."""
    image = _picture(image)
    ax = ax if ax is not None else plt.gca()
    C, H, W = image.shape
    picture = image.permute(1, 2, 0).clamp(0, 1)  # (H, W, C)
    if weights is not None:
        weights = torch.as_tensor(weights).detach().float().cpu()  # (G_h, G_w)
        up = F.interpolate(weights[None, None], size=(H, W), mode="nearest")[0, 0]  # (H, W)
        light = (up / max(float(weights.max()), 1e-9))[..., None]  # (H, W, 1) in [0, 1]
        picture = picture * (0.3 + 0.7 * light) + alpha * light * (1 - picture)  # dim the rest, light the weight
    ax.imshow(picture.numpy(), interpolation="nearest")
    if boxes is not None:
        boxes = torch.as_tensor(boxes).detach().float().cpu().reshape(-1, 4)
        for k, (top, left, h, w) in enumerate(boxes.tolist()):
            colour = BOX_COLOURS[k % len(BOX_COLOURS)]
            ax.add_patch(Rectangle((left - 0.5, top - 0.5), w, h, fill=False, edgecolor=colour, linewidth=1.5))
    ax.set_xlim(-0.5, W - 0.5)
    ax.set_ylim(H - 0.5, -0.5)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    return ax


def _scene_grid_args(
    images: torch.Tensor,
    weights: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    titles: Sequence[str] | None = None,
    *,
    boxes: torch.Tensor | Sequence[torch.Tensor] | None = None,
    cols: int = 6,
    size: float = 1.55,
) -> None:
    images = torch.as_tensor(images)
    check(images.dim() == 4 and len(images) > 0,
          lambda: f"images must be (N, C, H, W) with N >= 1, got {tuple(images.shape)}")  # fmt: skip
    N = len(images)
    check_positive_int("cols", cols)
    for name, values in (("weights", weights), ("titles", titles), ("boxes", boxes)):
        check(values is None or len(values) == N,
              f"{name} has {0 if values is None else len(values)} entries but there are {N} images")  # fmt: skip
    for i in range(N):  # what image_attention checks, for each image
        C, H, W = _check_image(f"images[{i}]", images[i])
        if weights is not None and weights[i] is not None:
            _check_map(f"weights[{i}]", weights[i], H, W)


@checked(_scene_grid_args)
def scene_grid(
    images: torch.Tensor,
    weights: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    titles: Sequence[str] | None = None,
    *,
    boxes: torch.Tensor | Sequence[torch.Tensor] | None = None,
    cols: int = 6,
    size: float = 1.55,
) -> Figure:
    """A figure of ``N`` images ``(N, C, H, W)``, each with its map ``weights[i] (G, G)``, title and glimpse boxes."""
    images = torch.as_tensor(images)
    N = len(images)
    rows = -(-N // cols)
    fig, axes = plt.subplots(rows, min(cols, N), figsize=(size * min(cols, N), (size + 0.35) * rows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= N:
            ax.axis("off")
            continue
        w = None if weights is None else weights[i]
        title = "" if titles is None else titles[i]
        image_attention(images[i], w, ax=ax, title=title, boxes=None if boxes is None else boxes[i])
    fig.tight_layout()
    return fig


def _patch_grid_args(image: torch.Tensor, patch: int, *, size: float = 4.2) -> None:
    C, H, W = _check_image("image", image)
    integer = not isinstance(patch, bool) and isinstance(patch, numbers.Integral) and patch >= 1
    check(integer and not H % patch and not W % patch,
          f"patch={patch!r} must be a positive int dividing the image's {H} x {W} pixels")  # fmt: skip


@checked(_patch_grid_args)
def patch_grid(image: torch.Tensor, patch: int, *, size: float = 4.2) -> Figure:
    """The image ``(C, H, W)`` with its ``patch x patch`` grid drawn on it (left), and its tiles drawn apart and
    numbered in reading order (right): the tokens a Vision Transformer reads. ``size`` is each half's width in
    inches."""
    image = _picture(image)
    C, H, W = image.shape
    gh, gw = H // patch, W // patch
    fig = plt.figure(figsize=(2 * size + 0.3, size * gh / gw + 0.3), layout="constrained")
    whole, tiles = cast(np.ndarray, fig.subfigures(1, 2, wspace=0.05))  # two subfigures: an array, not one SubFigure
    ax = whole.subplots()
    ax.imshow(image.permute(1, 2, 0).clamp(0, 1).numpy(), interpolation="nearest")
    for k in range(1, gh):
        ax.axhline(k * patch - 0.5, color="white", linewidth=1)
    for k in range(1, gw):
        ax.axvline(k * patch - 0.5, color="white", linewidth=1)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"the image, {H} x {W} pixels", fontsize=10)
    axes = tiles.subplots(gh, gw, squeeze=False, gridspec_kw={"wspace": 0.12, "hspace": 0.35})
    tiles.suptitle(f"{gh * gw} patches of {patch} x {patch}, in reading order", fontsize=10)
    for r in range(gh):
        for c in range(gw):
            ax = axes[r, c]
            tile = image[:, r * patch : (r + 1) * patch, c * patch : (c + 1) * patch]
            ax.imshow(tile.permute(1, 2, 0).clamp(0, 1).numpy(), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(str(r * gw + c + 1), fontsize=8, pad=1.5)
    return fig
