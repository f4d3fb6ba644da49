"""The Transformer's trainer for translation (chapter 8), and its held-out scores."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from attn._checks import check
from attn.data.translation import (
    Batch,
    Corpus,
    Pair,
    TranslationScores,
    encode_batch,
    random_batches,
    score_translations,
)
from attn.training import History, fit, seeded
from attn.transformer.models import Transformer, TransformerConfig

__all__ = ["evaluate_transformer", "train_transformer"]


def evaluate_transformer(
    model: Transformer, pairs: Sequence[Pair], corpus: Corpus, batch_size: int = 500
) -> TranslationScores:
    """Greedy-decode every pair and score it; the alignments are the last layer's cross-attention, averaged
    over heads, while the model reads the reference (teacher forcing)."""
    bos, eos = corpus.target_vocab.bos, corpus.target_vocab.eos

    def decode(batch: Batch) -> torch.Tensor:
        longest = min(batch.target_out.shape[1] + 5, model.config.max_len)
        return model.greedy_decode(batch.source, bos, eos, longest)

    model.eval()
    with torch.no_grad():
        return score_translations(
            decode,
            lambda batch: model(batch.source, batch.target_in).cross_attention[-1].mean(1),  # (B, T, S)
            pairs,
            corpus,
            batch_size,
        )


def train_transformer(
    corpus: Corpus,
    steps: int = 1500,
    *,
    batch_size: int = 64,
    lr: float = 1e-3,
    warmup: int = 100,
    seed: int = 0,
    every: int = 100,
    watch: Sequence[Pair] = (),
    valid: Sequence[Pair] = (),
    progress: bool = True,
    label_smoothing: float = 0.0,
    schedule: Callable[[int], float] | None = None,
    **sizes: Any,
) -> tuple[Transformer, History]:
    """Train a :class:`~attn.transformer.Transformer` on ``corpus.train`` (cross-entropy at every target
    position at once, teacher forcing), seeded; ``sizes`` go to :class:`~attn.transformer.TransformerConfig`.

    ``label_smoothing`` = ε (the paper's ε_ls = 0.1, §5.4) trains toward ``(1 - ε) · one-hot + ε / V`` over all
    V target words (torch's ``cross_entropy(..., label_smoothing=ε)``), padding ignored. A ``schedule`` (e.g.
    :func:`noam_schedule`, with ``lr=1.0, warmup=0``) sets the rate of each step, as in :func:`fit`.

    At each checkpoint the history stores the ``watch`` pairs' cross-attention per layer (``"cross_attention"``)
    and the exact match on the ``valid`` pairs (``"exact_match"``), if given.
    """
    number = not isinstance(label_smoothing, bool) and isinstance(label_smoothing, numbers.Real)
    check(number and 0 <= label_smoothing < 1,
          lambda: f"label_smoothing must be a number in [0, 1), got {label_smoothing!r}")  # fmt: skip
    config = TransformerConfig(len(corpus.source_vocab), len(corpus.target_vocab), pad=corpus.target_vocab.pad, **sizes)
    with seeded(seed):
        model = Transformer(config)
    next_batch = random_batches(corpus, batch_size, seed)
    loss_of = nn.CrossEntropyLoss(ignore_index=corpus.target_vocab.pad, label_smoothing=label_smoothing)
    watched = encode_batch(watch, corpus.source_vocab, corpus.target_vocab) if watch else None

    def loss_fn(model: Transformer, step: int) -> torch.Tensor:
        batch = next_batch()
        logits = model(batch.source, batch.target_in, need_weights=False).logits  # (B, T, V)
        return loss_of(logits.flatten(0, 1), batch.target_out.flatten())

    def checkpoint(model: Transformer, step: int) -> dict[str, Any]:
        record: dict[str, Any] = {}
        if watched is not None:
            record["cross_attention"] = model(watched.source, watched.target_in).cross_attention
        if valid:
            record["exact_match"] = evaluate_transformer(model, valid, corpus).exact_match
        return record

    with seeded(seed):  # dropout draws from torch's global generator: the same run every time
        history = fit(
            model,
            loss_fn,
            steps,
            lr=lr,
            warmup=warmup,
            checkpoint=checkpoint,
            every=every,
            progress=progress,
            schedule=schedule,
        )
    return model, history
