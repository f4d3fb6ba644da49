"""One small training loop for every chapter: seeded, Adam, gradient clipping, tqdm progress, a history."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from attn.additive import Seq2Seq, Seq2SeqConfig
from attn.data.translation import Corpus, Pair, alignment_mass, encode_batch, exact_match

__all__ = ["seeded", "History", "fit", "TranslationScores", "evaluate_translation", "train_translator"]


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Inside the block, torch's global random numbers start from ``seed``; outside, they are as they were.

    Use it to build a model with the same initial weights every time, without changing the caller's state.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@dataclass
class History:
    """What a run of :func:`fit` saw: the loss at every step, what ``checkpoint`` returned (with the step and
    the training seconds so far), and the seconds spent in training steps (checkpoints not counted)."""

    loss: list[float] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def fit(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, int], torch.Tensor],
    steps: int,
    *,
    lr: float = 3e-3,
    clip: float = 1.0,
    checkpoint: Callable[[nn.Module, int], dict[str, Any]] | None = None,
    every: int = 100,
    progress: bool = True,
) -> History:
    """Train for ``steps`` Adam steps; ``loss_fn(model, step)`` computes one batch's loss.

    Every ``every`` steps (and after the last) ``checkpoint(model, step)`` is called in eval mode under
    ``torch.no_grad()`` and its dict (metrics, attention snapshots) is stored in the history.
    """
    for name, value in (("steps", steps), ("every", every)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = History()
    bar = tqdm(range(1, steps + 1), disable=not progress, desc="training", leave=False)
    for step in bar:
        start = time.perf_counter()
        model.train()
        loss = loss_fn(model, step)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        history.loss.append(loss.item())
        history.seconds += time.perf_counter() - start
        if checkpoint is not None and (step % every == 0 or step == steps):
            model.eval()
            with torch.no_grad():
                record = {"step": step, "seconds": history.seconds, **checkpoint(model, step)}
            history.checkpoints.append(record)
            bar.set_postfix({k: v for k, v in record.items() if k not in ("step", "seconds") and isinstance(v, float)})
    model.eval()
    return history


@dataclass
class TranslationScores:
    """Held-out results: exact match, attention mass on the true alignment, predictions and alignments
    (teacher-forced, one ``(T+1, S+1)`` matrix per pair, with ``<eos>``; None without attention)."""

    exact_match: float
    alignment_mass: float | None
    predictions: list[list[str]]
    alignments: list[torch.Tensor] | None


def evaluate_translation(
    model: Seq2Seq, pairs: Sequence[Pair], corpus: Corpus, batch_size: int = 500
) -> TranslationScores:
    """Greedy-decode every pair and score it; read the references once more for the alignments."""
    predictions: list[list[str]] = []
    alignments: list[torch.Tensor] = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            batch = encode_batch(chunk, corpus.source_vocab, corpus.target_vocab)
            decoded = model.greedy_decode(
                batch.source, batch.source_lengths, corpus.target_vocab.bos, corpus.target_vocab.eos
            )
            predictions += [corpus.target_vocab.decode(row) for row in decoded.tokens]
            forced = model(batch.source, batch.source_lengths, batch.target_in).alignments
            if forced is not None:
                alignments += [w[: len(p.target) + 1, : len(p.source) + 1] for w, p in zip(forced, chunk, strict=True)]
    has_attention = model.attention is not None
    return TranslationScores(
        exact_match=exact_match(predictions, pairs),
        alignment_mass=alignment_mass(alignments, pairs) if has_attention else None,
        predictions=predictions,
        alignments=alignments if has_attention else None,
    )


def train_translator(
    corpus: Corpus,
    attention: str = "additive",
    steps: int = 1500,
    *,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    every: int = 100,
    watch: Sequence[Pair] = (),
    valid: Sequence[Pair] = (),
    progress: bool = True,
    **sizes: int,
) -> tuple[Seq2Seq, History]:
    """Train a :class:`Seq2Seq` on ``corpus.train`` (cross-entropy, teacher forcing), seeded.

    At each checkpoint the history stores the teacher-forced alignments of the ``watch`` pairs
    (``"alignments"``) and the exact match on the ``valid`` pairs (``"exact_match"``), if given.
    """
    config = Seq2SeqConfig(len(corpus.source_vocab), len(corpus.target_vocab), attention=attention, **sizes)
    with seeded(seed):
        model = Seq2Seq(config)
    rng = np.random.default_rng(seed)
    loss_of = nn.CrossEntropyLoss(ignore_index=corpus.target_vocab.pad)
    watched = encode_batch(watch, corpus.source_vocab, corpus.target_vocab) if watch else None

    def loss_fn(model: Seq2Seq, step: int) -> torch.Tensor:
        chosen = rng.integers(len(corpus.train), size=batch_size)
        batch = encode_batch([corpus.train[i] for i in chosen], corpus.source_vocab, corpus.target_vocab)
        logits = model(batch.source, batch.source_lengths, batch.target_in).logits  # (B, T, V)
        return loss_of(logits.flatten(0, 1), batch.target_out.flatten())

    def checkpoint(model: Seq2Seq, step: int) -> dict[str, Any]:
        record: dict[str, Any] = {}
        if watched is not None and model.attention is not None:
            record["alignments"] = model(watched.source, watched.source_lengths, watched.target_in).alignments
        if valid:
            record["exact_match"] = evaluate_translation(model, valid, corpus).exact_match
        return record

    history = fit(model, loss_fn, steps, lr=lr, checkpoint=checkpoint, every=every, progress=progress)
    return model, history
