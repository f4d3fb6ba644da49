"""Training the memory models on bit-vector tasks: one loss, one loop (:func:`attn.training.fit`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, TypedDict, Unpack, cast

import torch
from torch import nn
from torch.nn import functional as F

from attn._checks import check, check_nonnegative_int, check_positive_int
from attn.data.memory_tasks import BitTask
from attn.memory.measures import errors_per_sequence
from attn.memory.model import logits_of
from attn.training import Trained, fit, seeded

__all__ = ["bit_loss", "train_bits", "train_until"]


class MakeTask(Protocol):
    """What :func:`train_bits` calls for each step's batch: ``make_task(batch_size, seed=...)``."""

    def __call__(self, batch_size: int, /, *, seed: int) -> BitTask: ...


class BitOptions(TypedDict, total=False):
    """The settings of :func:`train_bits` that :func:`train_until` passes on."""

    batch_size: int
    lr: float
    clip: float
    every: int
    progress: bool


def bit_loss(model: nn.Module, task: BitTask) -> torch.Tensor:
    """Binary cross-entropy of the answer steps' bits (the unscored steps do not count)."""
    logits = logits_of(model(task.inputs))
    return F.binary_cross_entropy_with_logits(logits[task.mask], task.targets[task.mask])


def train_bits(
    model: nn.Module,
    make_task: MakeTask,
    steps: int,
    *,
    batch_size: int = 32,
    lr: float = 1e-2,
    clip: float = 1.0,
    seed: int = 0,
    goal: tuple[BitTask, float] | None = None,
    every: int = 25,
    progress: bool = True,
) -> Trained:
    """Adam on fresh batches: ``make_task(batch_size, seed=...)`` makes each step's batch from its own seed, derived
    from ``seed`` and the step, so a run is repeatable and never sees a batch twice. ``model`` is trained in place;
    returns it with its history (:class:`attn.training.Trained`).

    The gradient norm is clipped at ``clip``: at 1, 6 of 6 NTM runs on the copy task learned it within 400 steps
    and kept it; at 10, some runs took much longer, or learned it and then lost it.

    With ``goal = (held_out, share)``, every ``every`` steps the share of ``held_out``'s sequences with no bit wrong
    is recorded (``history.checkpoints``, key ``"exact"``), and training stops once it reaches ``share``:
    ``steps`` is then a cap, and ``history.checkpoints[-1]["step"]`` the steps it took.
    """
    check_positive_int("batch_size", batch_size)
    check_nonnegative_int("seed", seed)  # each step's batch seed is derived from it: a negative one would be named
    _goal_args(goal)
    checkpoint = stop_when = None
    if goal is not None:
        held_out, share = goal
        checkpoint = lambda m, step: {"exact": (errors_per_sequence(m, held_out) == 0).float().mean().item()}  # noqa: E731
        stop_when = lambda record: record["exact"] >= share  # noqa: E731

    def loss_fn(m: nn.Module, step: int) -> torch.Tensor:
        return bit_loss(m, make_task(batch_size, seed=seed * 1_000_003 + step))  # a batch of its own for each step

    history = fit(model, loss_fn, steps, lr=lr, clip=clip, checkpoint=checkpoint, every=every, stop_when=stop_when,
                  progress=progress)  # fmt: skip
    return Trained(model, history)


def _goal_args(goal: object) -> None:
    """None, or ``(held_out, share)``: a :class:`BitTask` and the share of its sequences to get right (a number; one
    above 1 is never reached, one of 0 at once)."""
    check(goal is None or isinstance(goal, tuple) and len(goal) == 2 and isinstance(goal[0], BitTask),
          lambda: f"goal must be None or (held_out BitTask, share), got {type(goal).__name__} "
          f"{goal!r:.80}")  # fmt: skip
    share = None if goal is None else cast(tuple, goal)[1]  # a pair: checked above
    check(goal is None or not isinstance(share, bool) and isinstance(share, int | float) and math.isfinite(share),
          lambda: f"goal's share must be a finite number, got {share!r}")  # fmt: skip


def train_until(
    build: Callable[[], nn.Module],
    make_task: Callable[..., BitTask],
    steps: int,
    *,
    seed: int = 0,
    goal: tuple[BitTask, float] | None = None,
    attempts: int = 1,
    **options: Unpack[BitOptions],
) -> Trained:
    """:func:`train_bits` on a model ``build()`` makes under ``seeded(seed)``; a run that ends short of the
    ``goal`` starts again from new weights and batches (seeds ``seed + 1000``, ``seed + 2000``, ...), at most
    ``attempts`` runs. Returns the last run's model and history (``history.attempts``: the runs it took). Every argument
    can be pickled (a :func:`functools.partial` for ``build`` and ``make_task``), so that it can run in another
    process (:class:`attn.training.Background`)."""
    check_positive_int("attempts", attempts)
    check_nonnegative_int("seed", seed)
    _goal_args(goal)
    for attempt in range(attempts):
        run_seed = seed + 1000 * attempt
        with seeded(run_seed):
            model = build()
        history = train_bits(model, make_task, steps, seed=run_seed, goal=goal, **options).history
        history.attempts = attempt + 1
        if goal is None or history.checkpoints[-1]["exact"] >= goal[1]:
            break
    return Trained(model, history)
