"""Chapter 2's trainer: a :class:`~attn.seq2seq.Seq2Seq` on the translation corpus."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from attn.data.translation import Corpus, Pair, encode_batch, random_batches
from attn.seq2seq.measures import evaluate_translation
from attn.seq2seq.model import Seq2Seq, Seq2SeqConfig
from attn.training import Trained, fit, seeded

__all__ = ["train_translator"]


def train_translator(
    corpus: Corpus,
    attention: str = "additive",
    steps: int = 1500,
    *,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    every: int | Sequence[int] = 100,
    watch: Sequence[Pair] = (),
    valid: Sequence[Pair] = (),
    progress: bool = True,
    **sizes: int,
) -> Trained:
    """Train a :class:`Seq2Seq` on ``corpus.train`` (cross-entropy, teacher forcing), seeded.

    At each checkpoint the history stores the teacher-forced alignments of the ``watch`` pairs
    (``"alignments"``) and the exact match on the ``valid`` pairs (``"exact_match"``) with the greedy
    translations it scored (``"predictions"``), if given. The learning rate is constant, so the model at step s of
    a longer run is the model a run of s steps ends with.
    """
    config = Seq2SeqConfig(len(corpus.source_vocab), len(corpus.target_vocab), attention=attention, **sizes)
    with seeded(seed):
        model = Seq2Seq(config)
    next_batch = random_batches(corpus, batch_size, seed)
    loss_of = nn.CrossEntropyLoss(ignore_index=corpus.target_vocab.pad)
    watched = encode_batch(watch, corpus.source_vocab, corpus.target_vocab) if watch else None

    def loss_fn(model: Seq2Seq, step: int) -> torch.Tensor:
        batch = next_batch()
        logits = model(batch.source, batch.source_lengths, batch.target_in).logits  # (B, T, V)
        return loss_of(logits.flatten(0, 1), batch.target_out.flatten())

    def checkpoint(model: Seq2Seq, step: int) -> dict[str, Any]:
        record: dict[str, Any] = {}
        if watched is not None and model.attention is not None:
            record["alignments"] = model(watched.source, watched.source_lengths, watched.target_in).alignments
        if valid:
            scores = evaluate_translation(model, valid, corpus)
            record["exact_match"], record["predictions"] = scores.exact_match, scores.predictions
        return record

    history = fit(model, loss_fn, steps, lr=lr, checkpoint=checkpoint, every=every, progress=progress)
    return Trained(model, history)
