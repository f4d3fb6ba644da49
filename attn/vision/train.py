"""Training and scoring on generated scenes: one loop for every model of the chapter (soft, hard, ViT, hybrid)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attn._checks import check, check_positive_int, checked, require_tensor, shape_of
from attn.data.scenes import Scenes
from attn.training import History, build_seeded, fit, seeded
from attn.vision.glimpse import glimpse_boxes
from attn.vision.ram import RAMOutput, RecurrentAttention, ram_loss, reinforce
from attn.vision.rollout import attention_rollout, class_token_map
from attn.vision.vit import ViTOutput

__all__ = [
    "Look",
    "attention_map",
    "look",
    "scene_loss",
    "train_on_scenes",
    "accuracy",
    "mass_on_object",
    "policy_gradient_variance",
]


def scene_loss(model: nn.Module, scenes: Scenes) -> torch.Tensor:
    """Cross-entropy of the answer; for the recurrent attention model, its hybrid loss with REINFORCE."""
    output = model(scenes.images, scenes.question)
    if isinstance(output, RAMOutput):
        return ram_loss(output, scenes.answer)
    return F.cross_entropy(output.logits, scenes.answer)


@torch.no_grad()
def accuracy(model: nn.Module, scenes: Scenes, batch_size: int = 500) -> float:
    """The share of ``scenes`` answered right (eval mode: the hard model looks at its policy's most likely place)."""
    check_positive_int("batch_size", batch_size)
    training = model.training
    model.eval()
    right = 0
    for start in range(0, len(scenes), batch_size):
        part = scenes[start : start + batch_size]
        right += int((model(part.images, part.question).logits.argmax(-1) == part.answer).sum())
    model.train(training)
    return right / max(len(scenes), 1)


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
    classes = getattr(getattr(model, "config", None), "num_classes", None)
    check(classes is None or scenes is None or not len(scenes) or int(scenes.answer.max()) < classes,
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
) -> History | tuple[nn.Module, History]:
    """Adam on random batches of ``train`` (drawn from ``seed``); with ``held_out``, its accuracy at every
    checkpoint, and with ``goal`` training stops at the first checkpoint whose held-out accuracy reaches it. With
    ``budget``, it also stops at the first checkpoint after ``budget`` seconds of training. With ``patience``, it
    stops once ``patience`` checkpoints in a row have not beaten the best held-out accuracy so far by more than
    ``min_gain`` (early stopping: trained to convergence, ``steps`` a cap); ``held_out`` should then be a
    validation set, not the test set.

    As in :func:`attn.transformer.train_tagger`, ``model`` is a module trained in place (the history is returned) or a
    function that builds one under ``seeded(seed)`` (``(model, history)`` is returned; that form can run in another
    process, e.g. ``functools.partial(ViT, config)``)."""
    _train_on_scenes_args(batch_size, held_out, goal, patience, min_gain)
    built = not isinstance(model, nn.Module)
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
    return (model, history) if built else history


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
        reached = self.goal is not None and accuracy >= self.goal
        spent = self.budget is not None and record["seconds"] >= self.budget
        return reached or spent or (self.patience is not None and self.since_best >= self.patience)


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
    training = model.training
    model.train()  # sample locations, as in training
    with seeded(seed):
        for _ in range(batches):
            batch = scenes[torch.from_numpy(rng.integers(0, len(scenes), batch_size))]
            out = model(batch.images, batch.question)
            reward = (out.logits.argmax(-1) == batch.answer).to(out.logits.dtype)
            b = out.baselines if baseline else torch.zeros_like(out.baselines)
            grads = torch.autograd.grad(reinforce(out.log_probs, reward, b), params)
            estimates.append(torch.cat([g.flatten() for g in grads]))
    model.train(training)
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
    training = model.training
    model.eval()
    out = model(image[None], torch.tensor([question], device=image.device))
    model.train(training)
    answer = int(out.logits.argmax(-1))
    boxes = None
    if isinstance(out, RAMOutput):
        c = model.config
        boxes = glimpse_boxes(out.locations[0], c.image_size, c.glimpse, c.scales)
    return Look(answer, attention_map(model, out)[0], boxes)


def attention_map(model: nn.Module, out: object) -> torch.Tensor:
    """``(B, G, G)``: where a model's output says it looked. The soft map; the hard model's policy at its last
    glimpse; a ViT's rollout from the class token."""
    if isinstance(out, RAMOutput):
        return out.policy[:, -1]
    if isinstance(out, ViTOutput):
        return class_token_map(attention_rollout(out.attention), model.grid)
    return out.attention
