"""The Vision Transformer's answer as a function of its patches, for attributions (:mod:`attn.analysis`)."""

from __future__ import annotations

import torch

from attn._checks import check_float_tensor
from attn.data.scenes import Scenes
from attn.vision.vit import ViT, ViTOutput

__all__ = ["answer_probability", "answer_output"]


def answer_output(model: ViT, scenes: Scenes, scale: torch.Tensor | None = None) -> tuple[ViTOutput, torch.Tensor]:
    """The model's output on ``scenes`` with patch i's token scaled by ``scale[:, i]`` (0 = erased; a hook on the
    stem), and ``p(right answer)`` ``(B,)``."""
    B, N = len(scenes), model.grid**2
    handle = None
    if scale is not None:
        check_float_tensor("scale", scale, (B, N), "B, N", "one per patch")
        shaped = scale.view(B, 1, model.grid, model.grid) if model.config.stem == "conv" else scale[..., None]
        handle = model.stem.register_forward_hook(lambda module, args, out: out * shaped)
    try:
        out = model(scenes.images, scenes.question)
    finally:
        if handle is not None:
            handle.remove()
    return out, out.logits.softmax(-1).gather(1, scenes.answer[:, None]).squeeze(1)


def answer_probability(model: ViT, scenes: Scenes, scale: torch.Tensor | None = None) -> torch.Tensor:
    """``p(right answer | image)`` ``(B,)`` with patch i's token scaled by ``scale[:, i]`` (0 = erased)."""
    return answer_output(model, scenes, scale)[1]
