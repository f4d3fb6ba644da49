"""Training any model that labels every position of a sequence at once (chapters 5-7: the mixers, the
Transformer's encoder as a tagger), and its accuracy."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from attn._checks import check
from attn.training import History, build_seeded, fit, seeded

__all__ = ["tagging_accuracy", "train_tagger"]


def tagging_accuracy(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, ignore: int = -100) -> float:
    """Fraction of positions (labels != ``ignore``) where the model's most likely label is right."""
    model.eval()
    with torch.no_grad():
        predicted = model(inputs).logits.argmax(-1)  # (N, T)
    keep = labels != ignore
    return float((predicted[keep] == labels[keep]).float().mean())


def train_tagger(
    model: nn.Module | Callable[[], nn.Module],
    inputs: torch.Tensor,
    labels: torch.Tensor,
    steps: int = 1000,
    *,
    batch_size: int = 64,
    lr: float = 3e-3,
    warmup: int = 0,
    seed: int = 0,
    every: int = 100,
    valid: tuple[torch.Tensor, torch.Tensor] | None = None,
    goal: float | None = None,
    progress: bool = True,
) -> History | tuple[nn.Module, History]:
    """Train ``model`` (ids ``(B, T)`` -> an output with ``logits (B, T, C)``) to predict ``labels (N, T)`` at
    every position at once (cross-entropy; label -100 is ignored) on random batches of ``inputs (N, T)``.

    ``model`` is a module, trained in place (the :class:`History` is returned), or a function of no arguments
    that builds one: it is called under :func:`seeded` ``(seed)``, so each seed starts from its own weights, and
    ``(model, history)`` is returned, as :func:`train_transformer` does. That form can run in another process:
    ``over_seeds(partial(train_tagger, partial(LanguageModel, config), inputs, labels), seeds)``
    (:func:`attn.training.over_seeds`) trains one model per seed.

    At each checkpoint the history stores the accuracy on ``valid = (inputs, labels)`` (``"accuracy"``). With a
    ``goal``, training stops at the first checkpoint whose accuracy reaches it (its ``"step"`` says when), so
    ``steps`` is the most it may take; a run that ends without reaching the goal has trained all ``steps``.
    """
    check(inputs.shape == labels.shape and inputs.dim() == 2, lambda: "inputs and labels must both be (N, T), got "
          f"{tuple(inputs.shape)} and {tuple(labels.shape)}")  # fmt: skip
    check(goal is None or (valid is not None and not isinstance(goal, bool) and isinstance(goal, numbers.Real)),
          lambda: f"goal must be a number with valid=(inputs, labels) to measure it on, got goal={goal!r}")  # fmt: skip
    built = not isinstance(model, nn.Module)
    model = build_seeded(model, seed)
    rng = np.random.default_rng(seed)
    loss_of = nn.CrossEntropyLoss()

    def loss_fn(model: nn.Module, step: int) -> torch.Tensor:
        chosen = torch.from_numpy(rng.integers(len(inputs), size=batch_size))
        logits = model(inputs[chosen]).logits  # (B, T, C)
        return loss_of(logits.flatten(0, 1), labels[chosen].flatten())

    def checkpoint(model: nn.Module, step: int) -> dict[str, Any]:
        return {"accuracy": tagging_accuracy(model, *valid)} if valid is not None else {}

    def reached(record: dict[str, Any]) -> bool:
        return record["accuracy"] >= goal

    with seeded(seed):
        history = fit(model, loss_fn, steps, lr=lr, warmup=warmup, checkpoint=checkpoint, every=every,
                      progress=progress, stop_when=None if goal is None else reached)  # fmt: skip
    return (model, history) if built else history
