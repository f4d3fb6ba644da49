"""The translator's choice of one target word as a function of the source words and of the attention that chose
it, for attributions (:mod:`attn.analysis`)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from contextlib import contextmanager
from typing import cast

import numpy as np
import torch

from attn._checks import check, check_choice, check_dtype_of, check_float_tensor, check_nonnegative_int, checked
from attn.data.translation import ADJECTIVES, NOUNS, TEENS, TENS, UNITS, Batch, Pair
from attn.seq2seq.model import Seq2Seq
from attn.seq2seq.scores import Attention

__all__ = ["word_probability", "word_attention", "aligned_words", "dependencies", "ERASES", "WORD_KINDS"]

ERASES = ("zero", "mean")
WORD_KINDS = ("agreeing", "other")  # an article or an adjective (its form agrees with its noun), or another word


@contextmanager
def _scaled_source(model: Seq2Seq, scale: torch.Tensor | None, erase: str = "zero"):
    """Inside the block, source word i's embedding ``x_i`` becomes ``s_i x_i`` (``erase="zero"``) or
    ``s_i x_i + (1 - s_i) x̄`` with ``x̄`` the mean embedding of the source vocabulary (``erase="mean"``): a hook on the
    embedding."""
    if scale is None:
        yield
        return
    s = scale[..., None]  # (B, S, 1)
    if erase == "zero":
        hook = lambda module, args, kwargs, out: out * s  # noqa: E731
    else:
        mean = model.source_embedding.weight[1:].mean(0).detach()  # (E,): row 0 is padding
        hook = lambda module, args, kwargs, out: out * s + (1 - s) * mean  # noqa: E731
    handle = model.source_embedding.register_forward_hook(hook, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


def _step_args(batch: Batch, step: torch.Tensor) -> None:
    B, T = batch.target_out.shape
    check(isinstance(step, torch.Tensor) and step.shape == (B,) and not step.is_floating_point(),
          lambda: f"step must be (B,) = ({B},) target positions, got {getattr(step, 'shape', step)!r}")  # fmt: skip
    check(bool(((step >= 0) & (step < T)).all()),
          lambda: f"step must be target positions in [0, {T}), got {step.tolist()}")  # fmt: skip


def _word_probability_args(
    model: Seq2Seq, batch: Batch, step: torch.Tensor, scale: torch.Tensor | None = None, erase: str = "zero"
) -> None:
    _step_args(batch, step)
    if scale is not None:
        check_float_tensor("scale", scale, tuple(batch.source.shape), "B, S", "one per source word")
        check_dtype_of("scale", scale, model, "model")
    check_choice("erase", erase, ERASES)


def word_probability(
    model: Seq2Seq, batch: Batch, step: torch.Tensor, scale: torch.Tensor | None = None, erase: str = "zero"
):
    """``p(y_t | y_<t, x)`` ``(B,)`` of each row's reference word at ``step (B,)`` (teacher forcing), with source
    word i's embedding scaled by ``scale[:, i]`` (0 = erased: a zero vector, or with ``erase="mean"`` the mean
    embedding; the GRU reads every position either way)."""
    _word_probability_args(model, batch, step, scale, erase)
    with _scaled_source(model, scale, erase):
        logits = model(batch.source, batch.source_lengths, batch.target_in).logits  # (B, T, V)
    rows = torch.arange(len(step), device=step.device)
    return logits[rows, step].softmax(-1)[rows, batch.target_out[rows, step]]


def word_attention(model: Seq2Seq, batch: Batch, step: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Every decoding step's weights ``[(B, S)] * T`` on the gradient's path, and ``p(y_t | y_<t, x)`` ``(B,)`` at
    ``step``: the inputs of :func:`attn.analysis.attention_x_gradient`.

    A hook hands the decoder the context read again from the annotations with the very weights it returns
    (``c = Σ_j α_j h_j``, the same numbers), so that the probability depends on them through the tensor returned."""
    _step_args(batch, step)
    steps: list[torch.Tensor] = []

    def reread(module, args, kwargs, out):
        # the annotations by name, however the decoder passed them (Attention.forward's keys)
        annotations = inspect.signature(module.forward).bind(*args, **kwargs).arguments["keys"]
        weights = out[1] * 1.0  # (B, S): a tensor of our own, on the path to the logits
        steps.append(weights)
        return (weights[:, :, None] * annotations).sum(1), weights  # (B, D): c_i = Σ_j α_ij h_j

    attention = cast(Attention, model.attention)  # a model with attention: its weights are what is explained
    handle = attention.register_forward_hook(reread, with_kwargs=True)
    try:
        logits = model(batch.source, batch.source_lengths, batch.target_in).logits  # (B, T, V)
    finally:
        handle.remove()
    rows = torch.arange(len(step), device=step.device)
    return steps, logits[rows, step].softmax(-1)[rows, batch.target_out[rows, step]]


def _aligned_words_args(pairs: Sequence[Pair], batch: Batch, seed: int) -> None:
    check(len(pairs) == len(batch.source), f"pairs has {len(pairs)} sentence pairs but the batch has "
          f"{len(batch.source)} rows")  # fmt: skip
    check_nonnegative_int("seed", seed)  # None would draw fresh entropy, silently: the words drawn repeat with it
    for b, pair in enumerate(pairs):
        check(any(j is not None for j in pair.alignment), f"pairs[{b}] has no target word with a true source word")


@checked(_aligned_words_args)
def aligned_words(pairs: Sequence[Pair], batch: Batch, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One target word per pair, drawn among those with a true source word: ``step (B,)`` and ``truth (B, S)``
    marking that source word (the batch is ``encode_batch(pairs, ...)``)."""
    B, S = batch.source.shape
    rng = np.random.default_rng(seed)
    step = torch.zeros(B, dtype=torch.long, device=batch.source.device)
    truth = torch.zeros(B, S, dtype=torch.bool, device=batch.source.device)
    for b, pair in enumerate(pairs):
        aligned = [t for t, j in enumerate(pair.alignment) if j is not None]
        step[b] = int(rng.choice(aligned))
        truth[b, pair.alignment[int(step[b])]] = True
    return step, truth


_ADJECTIVES = {en for en, _ in ADJECTIVES}
_NOUNS = {form for forms in NOUNS for form in forms[:2]}
_NUMBERS = {en for en, _ in (*UNITS, *TEENS, *TENS)}


def _dependencies_args(pairs: Sequence[Pair], step: torch.Tensor, S: int) -> None:
    check(isinstance(step, torch.Tensor) and step.shape == (len(pairs),) and not step.is_floating_point(),
          lambda: f"step must be ({len(pairs)},) target positions, one per pair, got "
          f"{getattr(step, 'shape', step)}")  # fmt: skip
    for b, pair in enumerate(pairs):
        check(pair.alignment[int(step[b])] is not None, f"pairs[{b}]'s word {int(step[b])} has no true source word")
        check(len(pair.source) <= S, f"pairs[{b}] has {len(pair.source)} source words, more than S = {S}")


@checked(_dependencies_args)
def dependencies(pairs: Sequence[Pair], step: torch.Tensor, S: int) -> tuple[torch.Tensor, list[str]]:
    """What the generator makes each chosen target word depend on: ``(B, S)`` bool marking its aligned source word
    and, for an article or an adjective (whose German form agrees with the noun's gender and number and, for an
    adjective, with the determiner: ``der große hund``, ``zwei große hunde``), its noun phrase's noun and determiner
    ("the" or the number's words); and each word's kind (:data:`WORD_KINDS`). The case (subject or object) that
    also sets the form is a matter of the words' order, which no source word marks."""
    marks = torch.zeros(len(pairs), S, dtype=torch.bool, device=step.device)
    kinds = []
    for b, pair in enumerate(pairs):
        j = cast(int, pair.alignment[int(step[b])])  # a true source word: checked at the door
        words = pair.source
        marks[b, j] = True
        if words[j] != "the" and words[j] not in _ADJECTIVES:
            kinds.append("other")
            continue
        kinds.append("agreeing")
        noun = next(k for k in range(j, len(words)) if words[k] in _NOUNS)  # the phrase's noun
        start = j
        while start > 0 and words[start] != "the" and (words[start - 1] in _ADJECTIVES | _NUMBERS | {"the"}):
            start -= 1  # back over the adjectives to the determiner ("the", or one or two number words)
        marks[b, start : noun + 1] = False
        for k in range(start, noun + 1):  # the determiner, the noun and the word itself
            if k in (j, noun) or words[k] == "the" or words[k] in _NUMBERS:
                marks[b, k] = True
    return marks, kinds
