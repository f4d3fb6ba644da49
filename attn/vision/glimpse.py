"""Hard attention's sensor: a retina-like glimpse, sharp at its centre and coarse around it (Mnih et al. 2014, §3).

A glimpse at a location reads ``scales`` square crops centred there, of ``size``, ``2 size``, ``4 size``, ...
pixels, each shrunk to ``size x size`` by averaging: the sensor hands on ``scales * size²`` values per channel,
made from ``size² (1 + 4 + ... + 4^(scales - 1))`` pixels, wherever it looks, so neither grows with the image.
Locations are ``(row, column)`` in [-1, 1], ``(0, 0)`` the image's centre; each sample takes the nearest pixel, and
parts of a crop outside the image read zeros.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attn._checks import check, check_images, check_positive_int, check_size, checked, require_tensor, shape_of

__all__ = ["glimpse", "glimpse_boxes"]


def _glimpse_args(images: torch.Tensor, locations: torch.Tensor, size: int, scales: int) -> None:
    B, C, _, _ = check_images(images)
    require_tensor("locations", locations, 2)
    check(locations.shape == (B, 2),
          f"locations must be ({B}, 2): a (row, column) in [-1, 1] per image, got {shape_of(locations)}")  # fmt: skip
    size, scales = check_positive_int("size", size), check_positive_int("scales", scales)
    widest = size * 2 ** (scales - 1)  # pixels on a side of the coarsest crop, read before averaging
    check_size(f"a glimpse of {scales} scales from {size} pixels", B * C * widest * widest)


@checked(_glimpse_args)
def glimpse(images: torch.Tensor, locations: torch.Tensor, size: int, scales: int) -> torch.Tensor:
    """``ρ(x, l)`` (Mnih et al. 2014): images ``(B, C, H, W)``, locations ``(B, 2)`` -> ``(B, scales, C, size,
    size)``; scale k is a ``size 2^k``-pixel crop averaged down by ``2^k``."""
    B, C, H, W = images.shape
    if B == 0:  # no image: no glimpse (torch's sampler refuses an empty grid)
        return images.new_zeros(0, scales, C, size, size)
    crops = []
    for k in range(scales):
        width = size * 2**k  # pixels on a side at this scale
        theta = torch.zeros(B, 2, 3, dtype=images.dtype, device=images.device)
        theta[:, 0, 0], theta[:, 1, 1] = width / W, width / H  # the crop's half-extent, in [-1, 1] units
        theta[:, 0, 2], theta[:, 1, 2] = locations[:, 1], locations[:, 0]  # its centre: x = column, y = row
        grid = F.affine_grid(theta, [B, C, width, width], align_corners=False)  # (B, width, width, 2)
        # the nearest pixel to each sample: a crop reads its own pixels and no others (bilinear sampling would give
        # the pixels around a crop weights of 1e-6 from float rounding, and read them too)
        crop = F.grid_sample(images, grid, mode="nearest", padding_mode="zeros", align_corners=False)
        crops.append(F.avg_pool2d(crop, 2**k) if k else crop)  # (B, C, size, size)
    return torch.stack(crops, dim=1)  # (B, scales, C, size, size)


def _glimpse_boxes_args(locations: torch.Tensor, image_size: int, size: int, scales: int) -> None:
    require_tensor("locations", locations, 1)
    check(locations.shape[-1] == 2, f"locations must end in 2 (row, column), got {shape_of(locations)}")
    check_positive_int("image_size", image_size)
    check_positive_int("size", size)
    check_positive_int("scales", scales)


@checked(_glimpse_boxes_args)
def glimpse_boxes(locations: torch.Tensor, image_size: int, size: int, scales: int) -> torch.Tensor:
    """The pixel boxes a glimpse covers, for drawing: locations ``(..., 2)`` -> ``(..., scales, 4)`` as ``(top,
    left, height, width)`` in pixels (they may reach past the image's edges)."""
    centre = (locations + 1) * image_size / 2  # (..., 2) in pixels
    widths = torch.tensor([size * 2**k for k in range(scales)], dtype=locations.dtype, device=locations.device)
    corner = centre[..., None, :] - widths[:, None] / 2  # (..., scales, 2)
    side = widths[:, None].expand(scales, 2).expand(*corner.shape)
    return torch.cat([corner, side], dim=-1)  # (..., scales, 4)
