"""Tasks for memory that is written: the NTM's copy task and two DNC tasks, generated from a seed.

Every task is a batch of bit-vector sequences: ``inputs (B, T, I)``, ``targets (B, T, O)`` in {0, 1} and
``mask (B, T)``, True where the model's output is scored (the answer steps). Sequences of different lengths
share a batch, padded with zeros after their end.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn._checks import check_nonnegative_int, check_positive_int

__all__ = ["BitTask", "copy_task", "bit_errors"]


@dataclass
class BitTask:
    """``inputs (B, T, I)``, ``targets (B, T, O)``, ``mask (B, T)`` (True = an answer step) and ``lengths (B,)``."""

    inputs: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    lengths: torch.Tensor


def _lengths(name: str, batch_size: int, min_len: int, max_len: int, g: torch.Generator) -> torch.Tensor:
    check_positive_int("batch_size", batch_size)
    check_positive_int("min_len", min_len)
    check_positive_int("max_len", max_len)
    if min_len > max_len:
        raise ValueError(f"{name}: min_len ({min_len}) must be at most max_len ({max_len})")
    return torch.randint(min_len, max_len + 1, (batch_size,), generator=g)


def copy_task(batch_size: int, min_len: int, max_len: int, bits: int = 8, seed: int = 0) -> BitTask:
    """The NTM copy task (Graves et al. 2014, §4.1): ``l`` random ``bits``-bit vectors, a delimiter, then the same
    vectors back with no input. Inputs have ``bits + 1`` channels (the last is the delimiter); a sequence of
    length l takes ``2 l + 1`` steps, scored on its last l. Lengths are uniform in ``min_len..max_len``."""
    check_positive_int("bits", bits)
    check_nonnegative_int("seed", seed)
    g = torch.Generator().manual_seed(seed)
    lengths = _lengths("copy_task", batch_size, min_len, max_len, g)
    T = 2 * max_len + 1
    inputs, targets = torch.zeros(batch_size, T, bits + 1), torch.zeros(batch_size, T, bits)
    mask = torch.zeros(batch_size, T, dtype=torch.bool)
    patterns = torch.randint(0, 2, (batch_size, max_len, bits), generator=g).float()
    for b, n in enumerate(lengths.tolist()):
        inputs[b, :n, :bits] = patterns[b, :n]
        inputs[b, n, bits] = 1.0  # the delimiter
        targets[b, n + 1 : 2 * n + 1] = patterns[b, :n]
        mask[b, n + 1 : 2 * n + 1] = True
    return BitTask(inputs, targets, mask, lengths)


def bit_errors(logits: torch.Tensor, task: BitTask) -> torch.Tensor:
    """Per sequence, the number of answer bits wrong when the outputs are thresholded at 1/2: ``(B,)`` ints."""
    if logits.shape != task.targets.shape:
        raise ValueError(f"logits must have the targets' shape {tuple(task.targets.shape)}, got {tuple(logits.shape)}")
    wrong = ((logits > 0).float() != task.targets) & task.mask.unsqueeze(-1)
    return wrong.sum(dim=(1, 2))
