"""What is measured on a vision model: the share of questions it answers right, the attention it puts on the object
asked about, how noisy the REINFORCE gradient of its policy is, where it looked, and what it reads and computes for
one image, measured on the model itself, not counted by hand.

``values_read`` instruments the forward pass. A pixel value is *read* if some number the forward pass computes
depends on it: every tensor a torch function returns during the pass is recorded, and the gradient of a random
mix of all of them with respect to the image is nonzero exactly at the values they depend on (a random mix
cannot cancel except on a set of probability zero). A crop reads its pixels, a pooled "coarse view" reads every
pixel it averages, and a choice made by sampling or argmax reads the scores it was made from. (A value read only
through a comparison, e.g. ``image > 0``, has no gradient and would not be counted; the book's models read none
that way.)

``multiply_adds`` counts the multiply-adds of the matrix products and convolutions of one forward pass with
:class:`torch.utils.flop_counter.FlopCounterMode` (which counts two FLOPs per multiply-add). Poolings and
elementwise work are not in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils.flop_counter import FlopCounterMode

from attn._checks import check, check_images, check_positive_int, checked, describe, require_tensor, shape_of
from attn.data.scenes import Scenes
from attn.training import evaluating, seeded
from attn.vision.glimpse import glimpse_boxes
from attn.vision.model import RAMOutput, RecurrentAttention, SpatialOutput, ViTOutput
from attn.vision.ram import reinforce
from attn.vision.rollout import attention_rollout, class_token_map

__all__ = [
    "mass_on_object",
    "policy_gradient_variance",
    "Look",
    "look",
    "attention_map",
    "values_read",
    "multiply_adds",
]


def _mass_on_object_args(attention: torch.Tensor, scenes: Scenes) -> None:
    require_tensor("attention", attention, 3)
    check(attention.dim() == 3 and attention.shape[0] == len(scenes) and attention.shape[1] == attention.shape[2],
          f"attention must be (N, G, G) with N = {len(scenes)} scenes, got {shape_of(attention)}")  # fmt: skip
    scenes.target_cells.check(scenes, attention.shape[1])  # the grid must divide the images


@checked(_mass_on_object_args)
def mass_on_object(attention: torch.Tensor, scenes: Scenes) -> torch.Tensor:
    """``(N,)``: the attention weight each scene's map ``(N, G, G)`` puts on the cells of the object asked about."""
    targets = scenes.target_cells(attention.shape[1])  # (N, G²)
    return (attention.flatten(1) * targets).sum(-1)


def _policy_gradient_variance_args(model: RecurrentAttention, batches: int, batch_size: int) -> None:
    check(isinstance(model, RecurrentAttention), f"model must be a RecurrentAttention (the one with a policy), got "
          f"{type(model).__name__}")  # fmt: skip
    check(check_positive_int("batches", batches) >= 2,
          f"batches must be at least 2 to measure a variance, got {batches}")  # fmt: skip
    check_positive_int("batch_size", batch_size)


def policy_gradient_variance(
    model: RecurrentAttention, scenes: Scenes, batches: int, *, seed: int, batch_size: int = 64, baseline: bool = True
) -> float:
    """How noisy REINFORCE is: the total variance (trace of the unbiased covariance) of the REINFORCE gradient for
    the policy's own parameters (``W_h``, ``W_p``, ``v``), estimated on ``batches`` >= 2 random batches of ``scenes``,
    with the learned baseline or with none (b = 0)."""
    _policy_gradient_variance_args(model, batches, batch_size)
    rng = np.random.default_rng(seed)
    params = [model.W_h, model.W_p, model.v]
    estimates = []
    with evaluating(model, grad=True), seeded(seed):  # the model's mode is restored after the block
        model.train()  # sample locations, as in training
        for _ in range(batches):
            batch = scenes[torch.from_numpy(rng.integers(0, len(scenes), batch_size))]
            out = model(batch.images, batch.question)
            reward = (out.logits.argmax(-1) == batch.answer).to(out.logits.dtype)
            b = out.baselines if baseline else torch.zeros_like(out.baselines)
            grads = torch.autograd.grad(reinforce(out.log_probs, reward, b), params)
            estimates.append(torch.cat([g.flatten() for g in grads]))
    g = torch.stack(estimates)  # (batches, parameters)
    return float(((g - g.mean(0)) ** 2).sum() / (batches - 1))


@dataclass
class Look:
    """What a model made of one image and question: ``answer`` (a class id), ``attention (G, G)`` over the image
    (the soft map, the hard model's last policy, or a ViT's rollout from the class token) and, for the hard model,
    its glimpse ``boxes (glimpses, scales, 4)``."""

    answer: int
    attention: torch.Tensor
    boxes: torch.Tensor | None = None


@torch.no_grad()
def look(model: nn.Module, image: torch.Tensor, question: int) -> Look:
    """Ask ``model`` (eval mode) question id ``question`` about one ``image (C, S, S)``."""
    with evaluating(model):
        out = model(image[None], torch.tensor([question], device=image.device))
    answer = int(out.logits.argmax(-1))
    boxes = None
    if isinstance(out, RAMOutput):
        c = cast(RecurrentAttention, model).config
        boxes = glimpse_boxes(out.locations[0], c.image_size, c.glimpse, c.scales)
    return Look(answer, attention_map(model, out)[0], boxes)


def attention_map(model: nn.Module, out: object) -> torch.Tensor:
    """``(B, G, G)``: where a model's output says it looked. The soft map; the hard model's policy at its last
    glimpse; a ViT's rollout from the class token."""
    if isinstance(out, RAMOutput):
        return out.policy[:, -1]
    if isinstance(out, ViTOutput):
        return class_token_map(attention_rollout(out.attention), model.grid)
    return cast(SpatialOutput, out).attention


def _tensors(value: object) -> Iterator[torch.Tensor]:
    """The tensors in a function's result (a tensor, or a tuple or list of them)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _tensors(item)


class _Recorder(TorchFunctionMode):
    """Keeps every floating-point tensor with a gradient history that a torch function returns while active."""

    def __init__(self) -> None:
        super().__init__()
        self.computed: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        self.computed += [t for t in _tensors(result) if t.is_floating_point() and t.grad_fn is not None]
        return result


def _values_read_args(model: nn.Module, images: torch.Tensor, question: torch.Tensor) -> None:
    check(isinstance(model, nn.Module), lambda: f"model must be a torch.nn.Module, got {type(model).__name__}")
    B, *_ = check_images(images)
    check(isinstance(question, torch.Tensor) and question.shape == (B,),
          lambda: f"question must be a ({B},) tensor: one id per image, got {describe(question)}")  # fmt: skip


def values_read(model: nn.Module, images: torch.Tensor, question: torch.Tensor, *, seed: int = 0) -> torch.Tensor:
    """``(B,)``: how many of each image's ``C H W`` values the forward pass of ``model(images, question)`` (in eval
    mode) depends on. ``seed`` draws the random mix (any seed gives the same counts)."""
    _values_read_args(model, images, question)
    x = images.detach().clone().requires_grad_(True)
    with evaluating(model, grad=True), _Recorder() as recorder:
        model(x, question)
    depends = [t for t in recorder.computed if t is not x]
    if not depends:
        return torch.zeros(len(x), dtype=torch.long, device=x.device)
    g = torch.Generator().manual_seed(seed)
    mix = sum(
        (torch.randn(t.shape, generator=g, dtype=t.dtype, device=g.device).to(t.device) * t).sum() for t in depends
    )
    (grad,) = torch.autograd.grad(mix, x, allow_unused=True)
    if grad is None:  # nothing computed depends on the image
        return torch.zeros(len(x), dtype=torch.long, device=x.device)
    return (grad != 0).flatten(1).sum(1)


def _multiply_adds_args(model: nn.Module, images: torch.Tensor, question: torch.Tensor) -> None:
    _values_read_args(model, images, question)
    check(len(images) > 0, "images must hold at least one image to count its cost, got a batch of 0")


def multiply_adds(model: nn.Module, images: torch.Tensor, question: torch.Tensor) -> int:
    """Multiply-adds per image in the matrix products and convolutions of ``model(images, question)`` (eval
    mode, no gradients), counted by torch's ``FlopCounterMode``."""
    _multiply_adds_args(model, images, question)
    B = len(images)
    with evaluating(model), FlopCounterMode(display=False) as counter:
        model(images, question)
    return counter.get_total_flops() // (2 * B)
