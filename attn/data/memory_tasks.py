"""Tasks for memory that is written: the NTM's copy task and two DNC tasks, generated from a seed.

Every task is a batch of bit-vector sequences: ``inputs (B, T, I)``, ``targets (B, T, O)`` in {0, 1} and
``mask (B, T)``, True where the model's output is scored (the answer steps). Sequences of different lengths
share a batch, padded with zeros after their end.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from attn._checks import check, check_nonnegative_int, check_positive_int, check_size, checked

__all__ = ["BitTask", "copy_task", "recall_task", "bit_errors"]


@dataclass
class BitTask:
    """``inputs (B, T, I)``, ``targets (B, T, O)``, ``mask (B, T)`` (True = an answer step) and ``lengths``; for
    :func:`recall_task` also ``cues (B,)``: the position of the item given as the cue."""

    inputs: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    lengths: torch.Tensor
    cues: torch.Tensor | None = None


def _check_lengths(what: str, batch_size: int, low: int, high: int, names: tuple[str, str]) -> None:
    check_positive_int("batch_size", batch_size)
    check_positive_int(names[0], low)
    check_positive_int(names[1], high)
    check(low <= high, lambda: f"{what}: {names[0]} ({low}) must be at most {names[1]} ({high})")


def _copy_task_args(
    batch_size: int, min_len: int, max_len: int, bits: int = 8, seed: int = 0, segments: int = 1
) -> None:
    check_positive_int("bits", bits)
    check_positive_int("segments", segments)
    check_nonnegative_int("seed", seed)
    _check_lengths("copy_task", batch_size * segments, min_len, max_len, ("min_len", "max_len"))
    T = segments * (2 * max_len + 1)
    check_size(f"copy_task({batch_size}, {min_len}, {max_len})'s inputs", batch_size * T * (bits + 1))


@checked(_copy_task_args)
def copy_task(batch_size: int, min_len: int, max_len: int, bits: int = 8, seed: int = 0, segments: int = 1) -> BitTask:
    """The NTM copy task (Graves et al. 2014, §4.1): ``l`` random ``bits``-bit vectors, a delimiter, then the same
    vectors back with no input. Inputs have ``bits + 1`` channels (the last is the delimiter); a sequence of
    length l takes ``2 l + 1`` steps, scored on its last l. Lengths are uniform in ``min_len..max_len``.

    With ``segments`` > 1, that many copy tasks follow each other, each in a block of ``2 max_len + 1`` steps
    (padded with blank steps): more vectors pass through than any one segment holds, so a memory with fewer
    rows than the total must free and reuse its rows. ``lengths (B, segments)`` then.
    """
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, max_len + 1, (batch_size * segments,), generator=g).view(batch_size, segments)
    block = 2 * max_len + 1
    T = segments * block
    inputs, targets = torch.zeros(batch_size, T, bits + 1), torch.zeros(batch_size, T, bits)
    mask = torch.zeros(batch_size, T, dtype=torch.bool)
    patterns = torch.randint(0, 2, (batch_size, segments, max_len, bits), generator=g).float()
    for b, k in itertools.product(range(batch_size), range(segments)):
        n, start = int(lengths[b, k]), k * block
        inputs[b, start : start + n, :bits] = patterns[b, k, :n]
        inputs[b, start + n, bits] = 1.0  # the delimiter
        targets[b, start + n + 1 : start + 2 * n + 1] = patterns[b, k, :n]
        mask[b, start + n + 1 : start + 2 * n + 1] = True
    return BitTask(inputs, targets, mask, lengths.squeeze(1) if segments == 1 else lengths)


def _recall_task_args(
    batch_size: int, min_items: int, max_items: int, bits: int = 6, answers: int = 2, seed: int = 0
) -> None:
    check_positive_int("bits", bits)
    check_positive_int("answers", answers)
    check_nonnegative_int("seed", seed)
    check(min_items > answers, lambda: f"recall_task: min_items ({min_items}) must exceed answers ({answers}): the "
          "cue needs successors")  # fmt: skip
    _check_lengths("recall_task", batch_size, min_items, max_items, ("min_items", "max_items"))
    check(max_items <= 2**bits, lambda: f"recall_task: {max_items} distinct items need more than bits={bits} bits")
    T = max_items + 1 + answers
    check_size(f"recall_task({batch_size}, ..., bits={bits})'s inputs", batch_size * T * (bits + 1))
    check_size(f"recall_task's {2**bits:,} item codes per sequence", batch_size * 2**bits)  # drawn without repeats


@checked(_recall_task_args)
def recall_task(
    batch_size: int, min_items: int, max_items: int, bits: int = 6, answers: int = 2, seed: int = 0
) -> BitTask:
    """What came next: ``n`` distinct random ``bits``-bit items, one per step (distinct, so that the cue names one
    place); then one of them again as a cue (the last
    input channel flags it); then, with no input, the ``answers`` items that followed the cue, in order.

    The cue is never among the last ``answers`` items, so it always has that many successors. A sequence of n
    items takes ``n + 1 + answers`` steps. Recalling *what followed* is what the DNC's temporal links are for:
    find the cue by content, then step forward.
    """
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_items, max_items + 1, (batch_size,), generator=g)
    T = max_items + 1 + answers
    inputs, targets = torch.zeros(batch_size, T, bits + 1), torch.zeros(batch_size, T, bits)
    mask = torch.zeros(batch_size, T, dtype=torch.bool)
    codes = torch.stack([torch.randperm(2**bits, generator=g)[:max_items] for _ in range(batch_size)])  # distinct
    items = ((codes.unsqueeze(-1) >> torch.arange(bits)) & 1).float()  # (B, max_items, bits): no item repeats
    cues = torch.zeros(batch_size, dtype=torch.long)
    for b, n in enumerate(lengths.tolist()):
        cues[b] = cue = int(torch.randint(0, n - answers, (1,), generator=g))
        inputs[b, :n, :bits] = items[b, :n]
        inputs[b, n, :bits], inputs[b, n, bits] = items[b, cue], 1.0
        targets[b, n + 1 : n + 1 + answers] = items[b, cue + 1 : cue + 1 + answers]
        mask[b, n + 1 : n + 1 + answers] = True
    return BitTask(inputs, targets, mask, lengths, cues)


def _bit_errors_args(logits: torch.Tensor, task: BitTask) -> None:
    check(logits.shape == task.targets.shape, lambda: f"logits must have the targets' shape "
          f"{tuple(task.targets.shape)}, got {tuple(logits.shape)}")  # fmt: skip


@checked(_bit_errors_args)
def bit_errors(logits: torch.Tensor, task: BitTask) -> torch.Tensor:
    """Per sequence, the number of answer bits wrong when the outputs are thresholded at 1/2: ``(B,)`` ints."""
    wrong = ((logits > 0).float() != task.targets) & task.mask.unsqueeze(-1)
    return wrong.sum(dim=(1, 2))
