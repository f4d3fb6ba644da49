"""An image as tokens: cut into patches (the Vision Transformer) or read by a small convolutional stem (a hybrid)."""

from __future__ import annotations

import torch
from torch import nn

from attn._checks import check, check_images, check_positive_int, checked, shape_of

__all__ = ["patchify", "PatchEmbedding", "ConvStem"]


def _patchify_args(images: torch.Tensor, patch: int) -> None:
    check_positive_int("patch", patch)
    _, _, H, W = check_images(images)
    check(H % patch == 0 and W % patch == 0,
          f"patch={patch} must divide the image's height and width, got images {shape_of(images)}")  # fmt: skip


@checked(_patchify_args)
def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """``(B, C, H, W)`` -> ``(B, N, C P²)``: non-overlapping patches, row by row (ViT §3.1), N = HW / P²."""
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // patch, patch, W // patch, patch)  # (B, C, H/P, P, W/P, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, H/P, W/P, C, P, P)
    return x.reshape(B, (H // patch) * (W // patch), C * patch * patch)  # (B, N, C P²)


class PatchEmbedding(nn.Module):
    """Patches, each flattened and mapped by one linear layer ``E``: ``x_p E`` (ViT eq. 1) -> ``(B, N, d_model)``."""

    def __init__(self, channels: int, patch: int, d_model: int):
        super().__init__()
        self.channels, self.patch = check_positive_int("channels", channels), check_positive_int("patch", patch)
        self.E = nn.Linear(channels * patch * patch, check_positive_int("d_model", d_model))

    def _forward_args(self, images: torch.Tensor) -> None:
        check_images(images, self.channels, model=self)
        patchify.check(images, self.patch)

    @checked(_forward_args)
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` -> ``(B, N, d_model)``."""
        return self.E(patchify(images, self.patch))


class ConvStem(nn.Module):
    """Three 3 x 3 convolutions, two with stride 2: ``(B, C, H, W)`` -> a feature grid ``(B, d_model, H/4, W/4)``.

    Each cell sees a 9 x 9 pixel neighbourhood: the locality that convolution builds in (CoAtNet's argument for a
    convolutional stem when data is small; Dai et al. 2021). As tokens, ``grid.flatten(2).transpose(1, 2)``.
    """

    def __init__(self, channels: int, d_model: int, width: int = 16):
        super().__init__()
        self.channels = check_positive_int("channels", channels)
        d_model, width = check_positive_int("d_model", d_model), check_positive_int("width", width)
        self.layers = nn.Sequential(
            nn.Conv2d(channels, width, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(2 * width, d_model, 3, stride=2, padding=1),
        )

    def _forward_args(self, images: torch.Tensor) -> None:
        _, _, H, W = check_images(images, self.channels, model=self)
        check(H % 4 == 0 and W % 4 == 0,
              f"the convolutional stem needs H and W divisible by 4, got images {shape_of(images)}")  # fmt: skip

    @checked(_forward_args)
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` with H and W divisible by 4 -> ``(B, d_model, H/4, W/4)``."""
        return self.layers(images)
