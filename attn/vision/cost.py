"""What a vision model reads and computes for one image: measured on the model itself, not counted by hand.

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

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils.flop_counter import FlopCounterMode

from attn._checks import check, check_images, describe

__all__ = ["values_read", "multiply_adds"]


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
    training = model.training
    model.eval()
    try:
        with _Recorder() as recorder:
            model(x, question)
    finally:
        model.train(training)
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
    training = model.training
    model.eval()
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(images, question)
    finally:
        model.train(training)
    return counter.get_total_flops() // (2 * B)
