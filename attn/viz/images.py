"""Pictures of attention over images: maps drawn over the picture, glimpse boxes, patches. Tensors in, no models."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

__all__ = ["image_attention", "scene_grid", "patch_grid"]

BOX_COLOURS = ("white", "orange", "deepskyblue", "lime")


def _image(name: str, image: torch.Tensor) -> torch.Tensor:
    """``(C, H, W)`` floats in [0, 1] to draw: a uint8 image (0-255) is scaled; any other range is refused, never
    clipped to white or black without a word."""
    image = torch.as_tensor(image).detach().cpu()
    if image.dim() != 3 or image.shape[0] not in (1, 3):
        raise ValueError(f"{name} must be (C, H, W) with 1 or 3 channels, got {tuple(image.shape)}")
    if image.dtype == torch.uint8:
        return image.float() / 255
    image = image.float()
    if image.numel() and not bool(((image >= -1e-6) & (image <= 1 + 1e-6)).all()):  # rounding passes; NaN fails
        raise ValueError(
            f"{name} must hold values in [0, 1] (or be uint8, 0-255), got {image.dtype} values from "
            f"{float(image.min()):.4g} to {float(image.max()):.4g}"
        )
    return image


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
    image = _image("image", image)
    ax = ax if ax is not None else plt.gca()
    C, H, W = image.shape
    picture = image.permute(1, 2, 0).clamp(0, 1)  # (H, W, C)
    if weights is not None:
        weights = torch.as_tensor(weights).detach().float().cpu()
        if weights.dim() != 2 or H % weights.shape[0] or W % weights.shape[1]:
            raise ValueError(f"weights must be (G_h, G_w) dividing the image {H} x {W}, got {tuple(weights.shape)}")
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
    if images.dim() != 4 or len(images) == 0:
        raise ValueError(f"images must be (N, C, H, W) with N >= 1, got {tuple(images.shape)}")
    N = len(images)
    if isinstance(cols, bool) or not isinstance(cols, numbers.Integral) or cols < 1:
        raise ValueError(f"cols must be a positive int, got {cols!r}")
    for name, values in (("weights", weights), ("titles", titles), ("boxes", boxes)):
        if values is not None and len(values) != N:
            raise ValueError(f"{name} has {len(values)} entries but there are {N} images")
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


def patch_grid(image: torch.Tensor, patch: int, *, size: float = 4.2) -> Figure:
    """The image ``(C, H, W)`` with its ``patch x patch`` grid drawn on it (left), and its tiles drawn apart and
    numbered in reading order (right): the tokens a Vision Transformer reads. ``size`` is each half's width in
    inches."""
    image = _image("image", image)
    C, H, W = image.shape
    if isinstance(patch, bool) or not isinstance(patch, numbers.Integral) or patch < 1 or H % patch or W % patch:
        raise ValueError(f"patch={patch!r} must be a positive int dividing the image's {H} x {W} pixels")
    gh, gw = H // patch, W // patch
    fig = plt.figure(figsize=(2 * size + 0.3, size * gh / gw + 0.3), layout="constrained")
    whole, tiles = fig.subfigures(1, 2, wspace=0.05)
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
