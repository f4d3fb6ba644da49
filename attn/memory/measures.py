"""What a trained memory model gets right (bits wrong per sequence) and does with its heads, measured from the
weightings its ``forward`` returns.

A head's weighting is soft, but a trained head mostly puts nearly all its weight on one row: these measures follow
that row (the argmax) from step to step.
"""

from __future__ import annotations

import torch
from torch import nn

from attn._checks import check, check_positive_int, checked, require_tensor, shape_of
from attn.data.memory_tasks import BitTask, bit_errors
from attn.memory.model import logits_of
from attn.training import evaluating

__all__ = ["errors_per_sequence", "head_rows", "head_moves", "rows_reused", "linear_probe"]


def errors_per_sequence(model: nn.Module, task: BitTask) -> torch.Tensor:
    """Bits wrong in each sequence of ``task``, the model in eval mode without gradients: ``(B,)``."""
    with evaluating(model):
        return bit_errors(logits_of(model(task.inputs)), task)


def _head_rows_args(weights: torch.Tensor) -> None:
    require_tensor("weights", weights, 3)
    check(weights.dim() == 3, f"weights must be one head's weightings (B, T, N), got {shape_of(weights)}")


@checked(_head_rows_args)
def head_rows(weights: torch.Tensor) -> torch.Tensor:
    """The row each step's weighting ``(B, T, N)`` puts the most weight on: ``(B, T)``."""
    return weights.argmax(-1)


@checked(_head_rows_args)
def head_moves(weights: torch.Tensor) -> torch.Tensor:
    """How many rows a head's most weighted row moves from each step to the next, ``(B, T - 1)``, counted around
    the circle of N rows (the NTM's shifts wrap around): in ``-(N // 2) .. (N - 1) // 2``, so ``+1`` and ``-1``
    are one row on."""
    rows = head_rows(weights)
    N = weights.shape[-1]
    return (rows.diff(dim=1) + N // 2) % N - N // 2


def _rows_reused_args(write_weights: torch.Tensor, stored: torch.Tensor, block: int) -> None:
    _head_rows_args(write_weights)
    check_positive_int("block", block)
    check(isinstance(stored, torch.Tensor) and stored.dtype == torch.bool and stored.shape == write_weights.shape[:2],
          lambda: f"stored must be a bool tensor {tuple(write_weights.shape[:2])} like the weightings' (B, T), got "
          f"{_described(stored)}")  # fmt: skip


def _described(x: object) -> str:
    return f"{x.dtype} {shape_of(x)}" if isinstance(x, torch.Tensor) else type(x).__name__


@checked(_rows_reused_args)
def rows_reused(write_weights: torch.Tensor, stored: torch.Tensor, block: int) -> torch.Tensor:
    """For tasks made of segments of ``block`` steps (:func:`attn.data.memory_tasks.copy_task` with
    ``segments``): at each step that stores a vector (``stored (B, T)`` True), whether the row written most
    was already written most by a storing step of an earlier segment; False at the other steps. ``(B, T)``."""
    rows = head_rows(write_weights)
    B, T, N = write_weights.shape
    segment = torch.arange(T, device=rows.device) // block  # (T,)
    written = torch.nn.functional.one_hot(rows, N).bool() & stored[..., None]  # (B, T, N): rows stored to
    reused = torch.zeros_like(stored)
    for k in range(1, int(segment.max()) + 1 if T else 0):
        before = written[:, segment < k].any(1)  # (B, N): rows an earlier segment stored to
        now = stored & (segment == k)  # (B, T)
        reused |= now & before.gather(1, rows)
    return reused


def _linear_probe_args(features: torch.Tensor, targets: torch.Tensor, train: torch.Tensor) -> None:
    require_tensor("features", features, 2)
    require_tensor("targets", targets, 2)
    check(features.dim() == 2 and targets.dim() == 2 and len(features) == len(targets), f"features must be (M, F) "
          f"and targets (M, K) with the same M, got {shape_of(features)} and {shape_of(targets)}")  # fmt: skip
    check(bool(((targets == 0) | (targets == 1)).all()), "targets must be bits: every entry 0 or 1")
    check(isinstance(train, torch.Tensor) and train.dtype == torch.bool and train.shape == (len(features),),
          lambda: f"train must be a ({len(features)},) bool mask of the rows to fit on, got "
          f"{_described(train)}")  # fmt: skip
    check(bool(train.any()) and not bool(train.all()), "train must mark some rows to fit on and leave some to test on")


@checked(_linear_probe_args)
def linear_probe(features: torch.Tensor, targets: torch.Tensor, train: torch.Tensor) -> float:
    """Can ``targets (M, K)`` (bits, 0 or 1) be read linearly from ``features (M, F)``? Fit a least-squares linear
    map with a bias to ±1 on the rows where ``train (M,)`` is True, and return the share of target bits it gets
    right (sign of the read-out) on the other rows: 1/2 is chance for random bits."""
    x = torch.cat([features, features.new_ones(len(features), 1)], dim=1)  # (M, F + 1): a bias column
    # (F + 1, K), by SVD on the CPU (gelsd): features may be linearly dependent, which the QR driver can get wrong
    driver = "gelsd" if x.device.type == "cpu" else None  # CUDA has one driver
    W = torch.linalg.lstsq(x[train], 2 * targets[train] - 1, driver=driver).solution
    guess = (x[~train] @ W > 0).to(targets.dtype)
    return (guess == targets[~train]).float().mean().item()
