"""Random numbers for tensors on any device, drawn where the generator lives: with a CPU generator (or torch's global
one), a run on an accelerator draws the same numbers as a run on the CPU."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["uniform", "normal", "integers", "sample"]


def _source(generator: torch.Generator | None) -> torch.device:
    """The device the numbers are drawn on: the generator's own, or the CPU for torch's global generator."""
    return torch.device("cpu") if generator is None else generator.device


def uniform(shape: Sequence[int], generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """``U[0, 1)`` numbers of ``shape`` drawn by ``generator``, on ``device``."""
    return torch.rand(tuple(shape), generator=generator, device=_source(generator)).to(device)


def normal(shape: Sequence[int], generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """``N(0, 1)`` numbers of ``shape`` drawn by ``generator``, on ``device``."""
    return torch.randn(tuple(shape), generator=generator, device=_source(generator)).to(device)


def integers(low: int, high: int, shape: Sequence[int], generator: torch.Generator | None, device: torch.device):
    """Integers in ``[low, high)`` of ``shape`` drawn by ``generator``, on ``device``."""
    return torch.randint(low, high, tuple(shape), generator=generator, device=_source(generator)).to(device)


def sample(p: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One index per row of the probabilities ``p (B, V)`` -> ``(B, 1)`` on ``p``'s device, drawn by ``generator``."""
    return torch.multinomial(p.to(_source(generator)), 1, generator=generator).to(p.device)
