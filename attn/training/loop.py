"""One small training loop for every chapter: seeded, Adam, gradient clipping, a progress bar, a history."""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attn._checks import check, check_nonnegative_int, check_positive_int, check_positive_number
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


def _is_step(s: object) -> bool:
    return isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1


def _checkpoint_steps(every: int | Collection[int]) -> Callable[[int], bool]:
    """Whether a step is a checkpoint: every ``every`` steps (a positive int), or the steps listed."""
    if _is_step(every):
        return lambda step: step % every == 0
    listed = frozenset(every)
    return lambda step: step in listed


def _fit_args(steps: object, lr: object, clip: object, every: object, warmup: object, schedule: object) -> None:
    """The settings of :func:`fit` (its model, loss and callbacks are the caller's code, run as they are)."""
    check(_is_step(every) or isinstance(every, Collection) and every and all(map(_is_step, every)),
          lambda: f"every must be a positive int or a collection of positive steps, got {every!r}")  # fmt: skip
    check_positive_int("steps", steps)
    check_positive_number("lr", lr)
    check_positive_number("clip", clip)
    check_nonnegative_int("warmup", warmup)
    got = f"warmup={warmup} as well" if callable(schedule) else repr(schedule)
    check(schedule is None or callable(schedule) and not warmup,
          f"schedule must be a function of the step (from 1) that replaces warmup, got {got}")  # fmt: skip


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
    _fit_args(steps, lr, clip, every, warmup, schedule)
    at, lr, clip = _checkpoint_steps(every), float(lr), float(clip)
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
    check(callable(model), lambda: f"model must be a module or a function that builds one, got {model!r}")
    with seeded(seed):
        built = model()
    check(isinstance(built, nn.Module),
          lambda: f"the function given as model must return a module, got {type(built).__name__}")  # fmt: skip
    return built


@contextmanager
def evaluating(model: nn.Module, *, grad: bool = False) -> Iterator[None]:
    """Eval mode (no dropout) and no gradients inside the block (``grad=True``: gradients as outside it, for a measure
    that differentiates); the model's mode is restored after it, also when the block raises."""
    was_training = model.training
    model.eval()
    try:
        with nullcontext() if grad else torch.no_grad():
            yield
    finally:
        model.train(was_training)
