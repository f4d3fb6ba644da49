"""Training on generated scenes: one loop for every model of the chapter (soft, hard, ViT, hybrid)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attn._checks import check, check_positive_int
from attn.data.scenes import Scenes
from attn.training import Trained, build_seeded, evaluating, fit, seeded
from attn.vision.model import RAMOutput
from attn.vision.ram import ram_loss

__all__ = ["accuracy", "scene_loss", "train_on_scenes"]


def accuracy(model: nn.Module, scenes: Scenes, batch_size: int = 500) -> float:
    """The share of ``scenes`` answered right (eval mode: the hard model looks at its policy's most likely place):
    the score :func:`train_on_scenes` checks on held-out scenes."""
    check_positive_int("batch_size", batch_size)
    right = 0
    with evaluating(model):
        for start in range(0, len(scenes), batch_size):
            part = scenes[start : start + batch_size]
            right += int((model(part.images, part.question).logits.argmax(-1) == part.answer).sum())
    return right / max(len(scenes), 1)


def scene_loss(model: nn.Module, scenes: Scenes) -> torch.Tensor:
    """Cross-entropy of the answer; for the recurrent attention model, its hybrid loss with REINFORCE."""
    output = model(scenes.images, scenes.question)
    if isinstance(output, RAMOutput):
        return ram_loss(output, scenes.answer)
    return F.cross_entropy(output.logits, scenes.answer)


def _train_on_scenes_args(
    batch_size: int, held_out: Scenes | None, goal: float | None, patience: int | None, min_gain: float
) -> None:
    check_positive_int("batch_size", batch_size)
    if patience is not None:
        check_positive_int("patience", patience)
    check(not isinstance(min_gain, bool) and isinstance(min_gain, numbers.Real) and 0 <= min_gain < 1,
          f"min_gain must be an accuracy gain in [0, 1), got {min_gain!r}")  # fmt: skip
    check(held_out is not None or (goal is None and patience is None),
          "goal and patience need held_out scenes to measure the accuracy on")  # fmt: skip


def _answers_args(model: nn.Module, name: str, scenes: Scenes | None) -> None:
    """The answers of ``scenes`` are classes of ``model`` (where its config says how many it has)."""
    if scenes is None:
        return
    classes = getattr(getattr(model, "config", None), "num_classes", None)
    check(classes is None or not len(scenes) or int(scenes.answer.max()) < classes,
          lambda: f"{name} has answers up to {int(scenes.answer.max())}, but the model has {classes} classes "
          f"(ask={scenes.ask!r} scenes need a model with num_classes for them)")  # fmt: skip


def train_on_scenes(
    model: nn.Module | Callable[[], nn.Module],
    train: Scenes,
    steps: int,
    *,
    seed: int,
    batch_size: int = 64,
    lr: float = 3e-3,
    held_out: Scenes | None = None,
    goal: float | None = None,
    budget: float | None = None,
    patience: int | None = None,
    min_gain: float = 0.0,
    every: int = 100,
    progress: bool = True,
) -> Trained:
    """Adam on random batches of ``train`` (drawn from ``seed``); with ``held_out``, its accuracy at every
    checkpoint, and with ``goal`` training stops at the first checkpoint whose held-out accuracy reaches it. With
    ``budget``, it also stops at the first checkpoint after ``budget`` seconds of training. With ``patience``, it
    stops once ``patience`` checkpoints in a row have not beaten the best held-out accuracy so far by more than
    ``min_gain`` (early stopping: trained to convergence, ``steps`` a cap); ``held_out`` should then be a
    validation set, not the test set.

    As in :func:`attn.transformer.train_tagger`, ``model`` is a module trained in place or a function that builds one
    under ``seeded(seed)`` (that form can run in another process, e.g. ``functools.partial(ViT, config)``); the model
    and its history are returned (:class:`attn.training.Trained`)."""
    _train_on_scenes_args(batch_size, held_out, goal, patience, min_gain)
    model = build_seeded(model, seed)
    _answers_args(model, "train", train)
    _answers_args(model, "held_out", held_out)
    rng = np.random.default_rng(seed)

    def loss_fn(m: nn.Module, step: int) -> torch.Tensor:
        return scene_loss(m, train[torch.from_numpy(rng.integers(0, len(train), batch_size))])

    def checkpoint(m: nn.Module, step: int) -> dict:
        return {"accuracy": accuracy(m, held_out)} if held_out is not None else {}

    stop = None if goal is None and budget is None and patience is None else _Stop(goal, budget, patience, min_gain)
    with seeded(seed):  # the hard model's sampled locations
        history = fit(
            model, loss_fn, steps, lr=lr, checkpoint=checkpoint, every=every, progress=progress, stop_when=stop
        )
    return Trained(model, history)


class _Stop:
    """``fit``'s ``stop_when``: the goal reached, the budget spent, or for ``patience`` checkpoints in a row no
    accuracy above the best so far by more than ``min_gain``."""

    def __init__(self, goal: float | None, budget: float | None, patience: int | None, min_gain: float = 0.0):
        self.goal, self.budget, self.patience, self.min_gain = goal, budget, patience, min_gain
        self.best, self.since_best = -1.0, 0

    def __call__(self, record: dict) -> bool:
        accuracy = record.get("accuracy")
        if accuracy is not None:
            better = accuracy > self.best + self.min_gain
            self.best, self.since_best = (accuracy, 0) if better else (self.best, self.since_best + 1)
        reached = self.goal is not None and cast(float, accuracy) >= self.goal  # a goal needs held_out: an accuracy
        spent = self.budget is not None and record["seconds"] >= self.budget
        return reached or spent or (self.patience is not None and self.since_best >= self.patience)
