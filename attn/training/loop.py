"""One small training loop for every chapter: seeded, Adam, gradient clipping, a progress bar, a history."""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attn._checks import check_nonnegative_int, check_positive_int, check_positive_number
from attn.training.progress import progress_bar

__all__ = ["seeded", "History", "fit", "build_seeded", "evaluating"]


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Inside the block, torch's global random numbers start from ``seed``; outside, they are as they were.

    Use it to build a model with the same initial weights every time, without changing the caller's state.
    """
    seed = check_nonnegative_int("seed", seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@dataclass
class History:
    """What a run of :func:`fit` saw: the loss at every step, what ``checkpoint`` returned (with the step and
    the training seconds so far), and the seconds spent in training steps (checkpoints not counted)."""

    loss: list[float] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def _checkpoint_steps(every: object) -> Callable[[int], bool]:
    """Whether a step is a checkpoint: every ``every`` steps (a positive int), or the steps listed."""
    if isinstance(every, numbers.Integral) and not isinstance(every, bool) and every >= 1:
        return lambda step: step % every == 0
    if (
        isinstance(every, Collection)
        and every
        and all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1 for s in every)
    ):
        listed = frozenset(every)
        return lambda step: step in listed
    raise ValueError(f"every must be a positive int or a collection of positive steps, got {every!r}")


def fit(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, int], torch.Tensor],
    steps: int,
    *,
    lr: float = 3e-3,
    clip: float = 1.0,
    checkpoint: Callable[[nn.Module, int], dict[str, Any]] | None = None,
    every: int | Collection[int] = 100,
    warmup: int = 0,
    progress: bool = True,
    stop_when: Callable[[dict[str, Any]], bool] | None = None,
    schedule: Callable[[int], float] | None = None,
) -> History:
    """Train for ``steps`` Adam steps; ``loss_fn(model, step)`` computes one batch's loss.

    With ``warmup`` > 0 the learning rate rises linearly from ``lr / warmup`` to ``lr`` over the first
    ``warmup`` steps, then stays constant (the Transformer paper warms up the same way, §5.3, and then decays
    the rate as step^-0.5: :func:`noam_schedule`). A ``schedule`` replaces that: the rate of step s (from 1) is
    ``lr · schedule(s)``.

    Every ``every`` steps (and after the last) ``checkpoint(model, step)`` is called in eval mode under
    ``torch.no_grad()`` and its dict (metrics, attention snapshots) is stored in the history; ``every`` may also
    be the steps themselves, e.g. ``(400, 1000)``. With ``stop_when``, training stops early at the first
    checkpoint whose dict it accepts (a goal reached).
    """
    at = _checkpoint_steps(every)
    check_positive_int("steps", steps)
    lr, clip = check_positive_number("lr", lr), check_positive_number("clip", clip)
    check_nonnegative_int("warmup", warmup)
    if schedule is not None and (warmup or not callable(schedule)):
        got = f"warmup={warmup} as well" if callable(schedule) else repr(schedule)
        raise ValueError(f"schedule must be a function of the step (from 1) that replaces warmup, got {got}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def rate(i: int) -> float:  # LambdaLR counts the steps from 0
        if schedule is not None:
            return schedule(i + 1)
        return min(1.0, (i + 1) / warmup) if warmup else 1.0

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    history = History()
    bar = progress_bar(range(1, steps + 1), show=progress, desc="training", leave=False)
    for step in bar:
        start = time.perf_counter()
        model.train()
        loss = loss_fn(model, step)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        scheduler.step()
        history.loss.append(loss.item())
        history.seconds += time.perf_counter() - start
        if checkpoint is not None and (at(step) or step == steps):
            model.eval()
            with torch.no_grad():
                record = {"step": step, "seconds": history.seconds, **checkpoint(model, step)}
            history.checkpoints.append(record)
            bar.set_postfix({k: v for k, v in record.items() if k not in ("step", "seconds") and isinstance(v, float)})
            if stop_when is not None and stop_when(record):
                break
    model.eval()
    return history


def build_seeded(model: nn.Module | Callable[[], nn.Module], seed: int) -> nn.Module:
    """``model`` itself, or the module the function ``model`` builds under :func:`seeded` ``(seed)``."""
    if isinstance(model, nn.Module):
        return model
    if not callable(model):
        raise ValueError(f"model must be a module or a function that builds one, got {model!r}")
    with seeded(seed):
        built = model()
    if not isinstance(built, nn.Module):
        raise ValueError(f"the function given as model must return a module, got {type(built).__name__}")
    return built


@contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """Eval mode (no dropout) and no gradients inside the block; the model's mode is restored after it."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)
