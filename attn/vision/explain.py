"""The Vision Transformer's answer as a function of its patches, for attributions (:mod:`attn.analysis`), and the
tokens that see an object (the truth an attribution is scored against)."""

from __future__ import annotations

import inspect
from typing import cast

import torch
import torch.nn.functional as F

from attn._checks import check, check_choice, check_dtype_of, check_float_tensor, checked, describe
from attn.data.scenes import Scenes
from attn.vision.model import ViT, ViTOutput
from attn.vision.patches import ConvStem

__all__ = ["answer_probability", "answer_output", "black_tokens", "seen_by_tokens", "object_tokens", "ERASES"]

ERASES = ("zero", "delete", "black")


def _seen_by_tokens_args(model: ViT, pixels: torch.Tensor) -> None:
    S = model.config.image_size
    check(isinstance(pixels, torch.Tensor) and pixels.dim() == 3 and pixels.shape[1:] == (S, S),
          lambda: f"pixels must be a (B, {S}, {S}) bool mask of the image's pixels, got "
          f"{describe(pixels)}")  # fmt: skip


@checked(_seen_by_tokens_args)
def seen_by_tokens(model: ViT, pixels: torch.Tensor) -> torch.Tensor:
    """``pixels (B, S, S)`` bool -> ``(B, grid²)`` bool, row-major: the tokens whose receptive field holds one of the
    pixels marked. With the patch stem a token sees its own patch; with the convolutional stem each convolution
    widens the field by its kernel at its stride (a max-pool of the same geometry), so token ``(i, j)`` sees
    pixels ``4i - 4 … 4i + 4`` by ``4j - 4 … 4j + 4`` (9 × 9, reaching past its own 4 × 4 cell)."""
    seen = pixels.float()[:, None]  # (B, 1, S, S)
    if model.config.stem == "conv":
        for layer in cast(ConvStem, model.stem).layers:
            if isinstance(layer, torch.nn.Conv2d):  # an output cell sees the input cells under its kernel
                padding = cast(tuple[int, int], layer.padding)  # the stem pads by a number of cells, not "same"
                seen = F.max_pool2d(seen, layer.kernel_size, layer.stride, padding)
    else:
        seen = F.max_pool2d(seen, model.config.patch)  # (B, 1, grid, grid): each token its own patch
    return seen.flatten(1) > 0  # (B, grid²)


def object_tokens(model: ViT, scenes: Scenes, which: str = "asked") -> torch.Tensor:
    """``(B, grid²)`` bool: the tokens whose receptive field holds a pixel of the asked object (``which="asked"``,
    the truth) or of any object (``which="any"``: a map made from the image alone, with no model). The pixels are
    checked by :func:`seen_by_tokens`."""
    check(which in ("asked", "any"), f"which must be 'asked' or 'any', got {which!r}")
    # (B, S, S): the asked object's pixels, or any object's (the background is black)
    pixels = scenes.object_pixels() if which == "asked" else scenes.images.amax(1) > 0
    return seen_by_tokens(model, pixels)


def black_tokens(model: ViT) -> torch.Tensor:
    """``(grid², d_model)``: the tokens the stem gives an all-black image, row by row (the scenes' background is
    black, so these are the tokens of patches that show nothing; with the convolutional stem the border tokens
    differ a little from the inner ones, since the convolutions pad with zeros)."""
    c = model.config
    p = next(model.parameters())
    with torch.no_grad():
        return model.tokens(torch.zeros(1, c.channels, c.image_size, c.image_size, dtype=p.dtype, device=p.device))[0]


def _answer_output_args(model: ViT, scenes: Scenes, scale: torch.Tensor | None = None, erase: str = "zero") -> None:
    check_choice("erase", erase, ERASES)
    if scale is not None:
        check_float_tensor("scale", scale, (len(scenes), model.grid**2), "B, N", "one per patch")
        check_dtype_of("scale", scale, model, "model")
        check(erase != "delete" or bool(((scale == 0) | (scale == 1)).all()),
              "erase='delete' needs a scale of 0 (deleted) or 1 (kept) per patch")  # fmt: skip


def answer_output(
    model: ViT, scenes: Scenes, scale: torch.Tensor | None = None, erase: str = "zero"
) -> tuple[ViTOutput, torch.Tensor]:
    """The model's output on ``scenes`` with patch i's token scaled by ``scale[:, i]`` (a hook on the stem), and
    ``p(right answer)`` ``(B,)``. ``erase="zero"``: a scale of 0 leaves a zero token (after the pre-LN it is the
    LayerNorm's β, a token the model never saw in training); ``erase="black"``: patch i's token is
    ``b_i + scale[:, i] (x_i - b_i)``, ``b_i`` the token of a black patch at its place (:func:`black_tokens`), so a
    scale of 0 leaves a patch that shows nothing, and the gradient with respect to the scale is gradient ×
    (input - baseline) (the black-image baseline of integrated gradients, Sundararajan et al. 2017, taken per
    token); ``erase="delete"``: the tokens whose scale is 0 are masked out of every attention instead, which
    deletes them exactly (the ViT has no positions); then the scale must be 0 or 1."""
    _answer_output_args(model, scenes, scale, erase)
    B = len(scenes)
    handles = []
    if scale is not None:
        if erase in ("zero", "black"):
            conv = model.config.stem == "conv"
            shaped = scale.view(B, 1, model.grid, model.grid) if conv else scale[..., None]
            if erase == "zero":
                handles.append(model.stem.register_forward_hook(lambda module, args, out: out * shaped))
            else:
                black = black_tokens(model)  # (N, d_model)
                base = black.T.reshape(1, -1, model.grid, model.grid) if conv else black[None]  # like the stem's out
                handles.append(model.stem.register_forward_hook(lambda module, args, out: base + (out - base) * shaped))
        else:
            keep = torch.cat([scale.new_ones(B, 1), scale], dim=1) > 0  # (B, 1 + N): the class token stays

            def masked(module, args, kwargs):
                call = inspect.signature(module.forward).bind(*args, **kwargs)  # the arguments by name
                call.arguments["mask"] = keep[:, None, None, :]  # (B, 1, 1, 1 + N): keys a query may read
                return call.args, call.kwargs

            handles.append(model.encoder.register_forward_pre_hook(masked, with_kwargs=True))
    try:
        out = model(scenes.images, scenes.question)
    finally:
        for handle in handles:
            handle.remove()
    return out, out.logits.softmax(-1).gather(1, scenes.answer[:, None]).squeeze(1)


def answer_probability(
    model: ViT, scenes: Scenes, scale: torch.Tensor | None = None, erase: str = "zero"
) -> torch.Tensor:
    """``p(right answer | image)`` ``(B,)`` with patch i's token scaled by ``scale[:, i]`` (0 = erased, as
    ``erase`` says: :func:`answer_output`)."""
    return answer_output(model, scenes, scale, erase)[1]
