"""What a trained memory model does with its heads, measured from the weightings its ``forward`` returns.

A head's weighting is soft, but a trained head mostly puts nearly all its weight on one row: these measures follow
that row (the argmax) from step to step.
"""

from __future__ import annotations

import torch

from attn._checks import check_positive_int, require_tensor, shape_of

__all__ = ["head_rows", "head_moves", "rows_reused", "linear_probe"]


def head_rows(weights: torch.Tensor) -> torch.Tensor:
    """The row each step's weighting ``(B, T, N)`` puts the most weight on: ``(B, T)``."""
    require_tensor("weights", weights, 3)
    if weights.dim() != 3:
        raise ValueError(f"weights must be one head's weightings (B, T, N), got {shape_of(weights)}")
    return weights.argmax(-1)


def head_moves(weights: torch.Tensor) -> torch.Tensor:
    """How many rows a head's most weighted row moves from each step to the next, ``(B, T - 1)``, counted around
    the circle of N rows (the NTM's shifts wrap around): in ``-(N // 2) .. (N - 1) // 2``, so ``+1`` and ``-1``
    are one row on."""
    rows = head_rows(weights)
    N = weights.shape[-1]
    return (rows.diff(dim=1) + N // 2) % N - N // 2


def rows_reused(write_weights: torch.Tensor, stored: torch.Tensor, block: int) -> torch.Tensor:
    """For tasks made of segments of ``block`` steps (:func:`attn.data.memory_tasks.copy_task` with
    ``segments``): at each step that stores a vector (``stored (B, T)`` True), whether the row written most
    was already written most by a storing step of an earlier segment; False at the other steps. ``(B, T)``."""
    rows = head_rows(write_weights)
    block = check_positive_int("block", block)
    if not isinstance(stored, torch.Tensor) or stored.dtype != torch.bool or stored.shape != rows.shape:
        got = f"{stored.dtype} {shape_of(stored)}" if isinstance(stored, torch.Tensor) else type(stored).__name__
        raise ValueError(f"stored must be a bool tensor {shape_of(rows)} like the weightings' (B, T), got {got}")
    B, T, N = write_weights.shape
    segment = torch.arange(T, device=rows.device) // block  # (T,)
    written = torch.nn.functional.one_hot(rows, N).bool() & stored[..., None]  # (B, T, N): rows stored to
    reused = torch.zeros_like(stored)
    for k in range(1, int(segment.max()) + 1 if T else 0):
        before = written[:, segment < k].any(1)  # (B, N): rows an earlier segment stored to
        now = stored & (segment == k)  # (B, T)
        reused |= now & before.gather(1, rows)
    return reused


def linear_probe(features: torch.Tensor, targets: torch.Tensor, train: torch.Tensor) -> float:
    """Can ``targets (M, K)`` (bits, 0 or 1) be read linearly from ``features (M, F)``? Fit a least-squares linear
    map with a bias to ±1 on the rows where ``train (M,)`` is True, and return the share of target bits it gets
    right (sign of the read-out) on the other rows: 1/2 is chance for random bits."""
    require_tensor("features", features, 2)
    require_tensor("targets", targets, 2)
    if features.dim() != 2 or targets.dim() != 2 or len(features) != len(targets):
        raise ValueError(
            f"features must be (M, F) and targets (M, K) with the same M, "
            f"got {shape_of(features)} and {shape_of(targets)}"
        )
    if not ((targets == 0) | (targets == 1)).all():
        raise ValueError("targets must be bits: every entry 0 or 1")
    if not isinstance(train, torch.Tensor) or train.dtype != torch.bool or train.shape != (len(features),):
        got = f"{train.dtype} {shape_of(train)}" if isinstance(train, torch.Tensor) else type(train).__name__
        raise ValueError(f"train must be a ({len(features)},) bool mask of the rows to fit on, got {got}")
    if not train.any() or train.all():
        raise ValueError("train must mark some rows to fit on and leave some to test on")
    x = torch.cat([features, features.new_ones(len(features), 1)], dim=1)  # (M, F + 1): a bias column
    # (F + 1, K), by SVD on the CPU (gelsd): features may be linearly dependent, which the QR driver can get wrong
    driver = "gelsd" if x.device.type == "cpu" else None  # CUDA has one driver
    W = torch.linalg.lstsq(x[train], 2 * targets[train] - 1, driver=driver).solution
    guess = (x[~train] @ W > 0).to(targets.dtype)
    return (guess == targets[~train]).float().mean().item()
