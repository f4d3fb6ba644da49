"""One small training loop for every chapter: seeded, Adam, gradient clipping, a progress bar, a history."""

from __future__ import annotations

import copy
import numbers
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Generic, TypeGuard, TypeVar, cast

import torch
from torch import nn

from attn._checks import check, check_nonnegative_int, check_positive_int, check_positive_number
from attn.training.progress import progress_bar

__all__ = ["seeded", "History", "Trained", "fit", "build_seeded", "evaluating"]

Model = TypeVar("Model", bound=nn.Module)  # the model fit trains: its loss and checkpoint functions take that kind


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
    the training seconds so far), the seconds spent in training steps (checkpoints not counted), the checkpoint
    whose weights the model kept (``kept``: with ``fit(keep=...)``; None: the last step's), and which attempt this
    run was (``attempts``: :func:`attn.memory.train_until` starts again, up to its ``attempts``, until a goal is
    met)."""

    loss: list[float] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    kept: dict[str, Any] | None = None
    attempts: int = 1


@dataclass
class Trained(Generic[Model]):
    """What every trainer returns: the trained model (in eval mode) and the :class:`History` of its training. Like the
    pair ``(model, history)``, it unpacks (``model, history = train_...(...)``) and indexes (``[0]``, ``[1]``)."""

    model: Model
    history: History

    def __iter__(self) -> Iterator[Any]:
        return iter((self.model, self.history))

    def __getitem__(self, index: int) -> Any:
        return (self.model, self.history)[index]

    def __len__(self) -> int:
        return 2


def _is_step(s: object) -> TypeGuard[numbers.Integral]:
    return isinstance(s, numbers.Integral) and not isinstance(s, bool) and int(s) >= 1


def _checkpoint_steps(every: int | Collection[int]) -> Callable[[int], bool]:
    """Whether a step is a checkpoint: every ``every`` steps (a positive int), or the steps listed."""
    if _is_step(every):
        return lambda step: step % every == 0
    listed = frozenset(cast(Collection[int], every))  # not a step: the steps listed (checked by _fit_args)
    return lambda step: step in listed


def _fit_args(
    steps: object,
    lr: object,
    clip: object,
    every: object,
    warmup: object,
    schedule: object,
    optimizer: object,
    keep: object,
) -> None:
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
    check(
        callable(optimizer),
        f"optimizer must build one from (parameters, lr=...), e.g. torch.optim.SGD, got {optimizer!r}",
    )
    check(keep is None or callable(keep), f"keep must be a function of a checkpoint's record, got {keep!r}")


def fit(
    model: Model,
    loss_fn: Callable[[Model, int], torch.Tensor],
    steps: int,
    *,
    lr: float = 3e-3,
    clip: float = 1.0,
    checkpoint: Callable[[Model, int], dict[str, Any]] | None = None,
    every: int | Collection[int] = 100,
    warmup: int = 0,
    progress: bool = True,
    stop_when: Callable[[dict[str, Any]], bool] | None = None,
    schedule: Callable[[int], float] | None = None,
    optimizer: Callable[..., torch.optim.Optimizer] = torch.optim.Adam,
    keep: Callable[[dict[str, Any]], Any] | None = None,
) -> History:
    """Train for ``steps`` steps of ``optimizer`` (Adam; ``torch.optim.SGD`` for plain SGD); ``loss_fn(model,
    step)`` computes one batch's loss, and the gradient's norm is clipped at ``clip``.

    With ``warmup`` > 0 the learning rate rises linearly from ``lr / warmup`` to ``lr`` over the first
    ``warmup`` steps, then stays constant (the Transformer paper warms up the same way, §5.3, and then decays
    the rate as step^-0.5: :func:`noam_schedule`). A ``schedule`` replaces that: the rate of step s (from 1) is
    ``lr · schedule(s)``.

    Every ``every`` steps (and after the last) ``checkpoint(model, step)`` is called in eval mode under
    ``torch.no_grad()`` and its dict (metrics, attention snapshots) is stored in the history; ``every`` may also
    be the steps themselves, e.g. ``(400, 1000)``. With ``stop_when``, training stops early at the first
    checkpoint whose dict it accepts (a goal reached). A ``schedule`` may read what a checkpoint decided: the rate of
    the steps after a checkpoint is asked for once it has run (an epoch is ``every`` steps).

    With ``keep``, the model ends with the weights of the best checkpoint instead of the last step's: ``keep(record)``
    is the record's key (the smallest wins, the later of equal keys; None: the record does not compete), and
    ``history.kept`` is that record.
    """
    _fit_args(steps, lr, clip, every, warmup, schedule, optimizer, keep)
    at, lr, clip = _checkpoint_steps(every), float(lr), float(clip)
    opt = optimizer(model.parameters(), lr=lr)

    def rate(i: int) -> float:  # LambdaLR counts the steps from 0
        if schedule is not None:
            return schedule(i + 1)
        return min(1.0, (i + 1) / warmup) if warmup else 1.0

    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    history, best, best_state = History(), None, None
    bar = progress_bar(range(1, steps + 1), show=progress, desc="training", leave=False)
    for step in bar:
        start = time.perf_counter()
        model.train()
        loss = loss_fn(model, step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        history.loss.append(loss.item())
        history.seconds += time.perf_counter() - start
        if checkpoint is not None and (at(step) or step == steps):
            model.eval()
            with torch.no_grad():
                record = {"step": step, "seconds": history.seconds, **checkpoint(model, step)}
            history.checkpoints.append(record)
            bar.set_postfix({k: v for k, v in record.items() if k not in ("step", "seconds") and isinstance(v, float)})
            key = keep(record) if keep is not None else None
            if key is not None and (best is None or key <= best):
                best, best_state, history.kept = key, copy.deepcopy(model.state_dict()), record
            if stop_when is not None and stop_when(record):
                break
        scheduler.step()  # after the checkpoint, which may have changed what the schedule says
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return history


def build_seeded(model: Model | Callable[[], Model], seed: int) -> Model:
    """``model`` itself, or the module the function ``model`` builds under :func:`seeded` ``(seed)``."""
    if isinstance(model, nn.Module):
        return cast(Model, model)  # the module itself (an nn.Module is callable too: the type checker cannot tell)
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
