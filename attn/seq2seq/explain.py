"""The translator's choice of one target word as a function of the source words and of the attention that chose
it, for attributions (:mod:`attn.analysis`)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np
import torch

from attn._checks import check_float_tensor
from attn.data.translation import Batch, Pair
from attn.seq2seq.model import Seq2Seq

__all__ = ["word_probability", "word_attention", "aligned_words"]


@contextmanager
def _scaled_source(model: Seq2Seq, scale: torch.Tensor | None):
    """Inside the block, source word i's embedding is multiplied by ``scale[:, i]`` (a hook on the embedding)."""
    if scale is None:
        yield
        return
    handle = model.source_embedding.register_forward_hook(lambda module, args, out: out * scale[..., None])
    try:
        yield
    finally:
        handle.remove()


def _check_step(batch: Batch, step: torch.Tensor) -> None:
    B, T = batch.target_out.shape
    if not isinstance(step, torch.Tensor) or step.shape != (B,) or step.is_floating_point():
        raise ValueError(f"step must be (B,) = ({B},) target positions, got {getattr(step, 'shape', step)!r}")
    if (step < 0).any() or (step >= T).any():
        raise ValueError(f"step must be target positions in [0, {T}), got {step.tolist()}")


def word_probability(model: Seq2Seq, batch: Batch, step: torch.Tensor, scale: torch.Tensor | None = None):
    """``p(y_t | y_<t, x)`` ``(B,)`` of each row's reference word at ``step (B,)`` (teacher forcing), with source
    word i's embedding scaled by ``scale[:, i]`` (0 = erased)."""
    _check_step(batch, step)
    B, S = batch.source.shape
    if scale is not None:
        check_float_tensor("scale", scale, (B, S), "B, S", "one per source word")
    with _scaled_source(model, scale):
        logits = model(batch.source, batch.source_lengths, batch.target_in).logits  # (B, T, V)
    rows = torch.arange(len(step), device=step.device)
    return logits[rows, step].softmax(-1)[rows, batch.target_out[rows, step]]


def word_attention(model: Seq2Seq, batch: Batch, step: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Every decoding step's weights ``[(B, S)] * T`` on the gradient's path, and ``p(y_t | y_<t, x)`` ``(B,)`` at
    ``step``: the inputs of :func:`attn.analysis.attention_x_gradient`.

    A hook hands the decoder the context read again from the annotations with the very weights it returns
    (``c = Σ_j α_j h_j``, the same numbers), so that the probability depends on them through the tensor returned."""
    _check_step(batch, step)
    steps: list[torch.Tensor] = []

    def reread(module, args, out):
        state, annotations, *_ = args
        weights = out[1] * 1.0  # (B, S): a tensor of our own, on the path to the logits
        steps.append(weights)
        return (weights[:, :, None] * annotations).sum(1), weights  # (B, D): c_i = Σ_j α_ij h_j

    handle = model.attention.register_forward_hook(reread)
    try:
        logits = model(batch.source, batch.source_lengths, batch.target_in).logits  # (B, T, V)
    finally:
        handle.remove()
    rows = torch.arange(len(step), device=step.device)
    return steps, logits[rows, step].softmax(-1)[rows, batch.target_out[rows, step]]


def aligned_words(pairs: Sequence[Pair], batch: Batch, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One target word per pair, drawn among those with a true source word: ``step (B,)`` and ``truth (B, S)``
    marking that source word (the batch is ``encode_batch(pairs, ...)``)."""
    B, S = batch.source.shape
    if len(pairs) != B:
        raise ValueError(f"pairs has {len(pairs)} sentence pairs but the batch has {B} rows")
    rng = np.random.default_rng(seed)
    step = torch.zeros(B, dtype=torch.long, device=batch.source.device)
    truth = torch.zeros(B, S, dtype=torch.bool, device=batch.source.device)
    for b, pair in enumerate(pairs):
        aligned = [t for t, j in enumerate(pair.alignment) if j is not None]
        if not aligned:
            raise ValueError(f"pairs[{b}] has no target word with a true source word")
        step[b] = int(rng.choice(aligned))
        truth[b, pair.alignment[int(step[b])]] = True
    return step, truth
