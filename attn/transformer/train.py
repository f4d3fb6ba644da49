"""The trainers of the models made of the Transformer's blocks: translation (chapter 8), labelling every position of a
sequence (chapters 5-7: the mixers, the Transformer's encoder as a tagger) and pretraining a language model on one of
the objectives of :mod:`attn.transformer.pretraining` (chapter 10)."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import nn

from attn._checks import check
from attn.data.sequences import IGNORE
from attn.data.translation import (
    Batch,
    Corpus,
    Pair,
    TranslationScores,
    encode_batch,
    random_batches,
    score_translations,
)
from attn.training import Trained, build_seeded, evaluating, fit, seeded
from attn.transformer.mixers import MixerTagger
from attn.transformer.model import LanguageModel, Transformer, TransformerConfig
from attn.transformer.pretraining import check_objective, language_model_batch, language_model_loss

__all__ = ["train_transformer", "train_tagger", "train_mixer_tagger", "train_language_model"]


# ---- the scores a trainer checks at its checkpoints


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


def tagging_accuracy(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, ignore: int = -100) -> float:
    """Fraction of positions (labels != ``ignore``) where the model's most likely label is right."""
    model.eval()
    with torch.no_grad():
        predicted = model(inputs).logits.argmax(-1)  # (N, T)
    keep = labels != ignore
    return float((predicted[keep] == labels[keep]).float().mean())


def token_losses(model: LanguageModel, tokens: torch.Tensor) -> torch.Tensor:
    """The cross-entropy (nats) of each next-token prediction of a causal model on ``tokens (N, T)``:
    ``(N, T - 1)``, entry t for predicting token t + 1 (0 where that token is padding)."""
    check_objective(model, "next")
    with evaluating(model):
        logits = model(tokens[:, :-1], need_weights=False).logits  # (N, T-1, V)
    targets = tokens[:, 1:].masked_fill(tokens[:, 1:] == 0, IGNORE)  # (N, T-1)
    return nn.functional.cross_entropy(logits.transpose(1, 2), targets, ignore_index=IGNORE, reduction="none")


# ---- the trainers


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
) -> Trained:
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
    return Trained(model, history)


def train_tagger(
    model: nn.Module | Callable[[], nn.Module],
    inputs: torch.Tensor,
    labels: torch.Tensor,
    steps: int = 1000,
    *,
    batch_size: int = 64,
    lr: float = 3e-3,
    warmup: int = 0,
    seed: int = 0,
    every: int = 100,
    valid: tuple[torch.Tensor, torch.Tensor] | None = None,
    goal: float | None = None,
    progress: bool = True,
) -> Trained:
    """Train ``model`` (ids ``(B, T)`` -> an output with ``logits (B, T, C)``) to predict ``labels (N, T)`` at
    every position at once (cross-entropy; label -100 is ignored) on random batches of ``inputs (N, T)``.

    ``model`` is a module, trained in place, or a function of no arguments that builds one: it is called under
    :func:`seeded` ``(seed)``, so each seed starts from its own weights; either way the model and its history are
    returned (:class:`attn.training.Trained`), as every trainer does. The function form can run in another process:
    ``over_seeds(partial(train_tagger, partial(LanguageModel, config), inputs, labels), seeds)``
    (:func:`attn.training.over_seeds`) trains one model per seed.

    At each checkpoint the history stores the accuracy on ``valid = (inputs, labels)`` (``"accuracy"``). With a
    ``goal``, training stops at the first checkpoint whose accuracy reaches it (its ``"step"`` says when), so
    ``steps`` is the most it may take; a run that ends without reaching the goal has trained all ``steps``.
    """
    check(inputs.shape == labels.shape and inputs.dim() == 2, lambda: "inputs and labels must both be (N, T), got "
          f"{tuple(inputs.shape)} and {tuple(labels.shape)}")  # fmt: skip
    check(goal is None or (valid is not None and not isinstance(goal, bool) and isinstance(goal, numbers.Real)),
          lambda: f"goal must be a number with valid=(inputs, labels) to measure it on, got goal={goal!r}")  # fmt: skip
    model = build_seeded(model, seed)
    rng = np.random.default_rng(seed)
    loss_of = nn.CrossEntropyLoss()

    def loss_fn(model: nn.Module, step: int) -> torch.Tensor:
        chosen = torch.from_numpy(rng.integers(len(inputs), size=batch_size))
        logits = model(inputs[chosen]).logits  # (B, T, C)
        return loss_of(logits.flatten(0, 1), labels[chosen].flatten())

    def checkpoint(model: nn.Module, step: int) -> dict[str, Any]:
        return {"accuracy": tagging_accuracy(model, *valid)} if valid is not None else {}

    def reached(record: dict[str, Any]) -> bool:
        return record["accuracy"] >= goal

    with seeded(seed):
        history = fit(model, loss_fn, steps, lr=lr, warmup=warmup, checkpoint=checkpoint, every=every,
                      progress=progress, stop_when=None if goal is None else reached)  # fmt: skip
    return Trained(model, history)


def train_mixer_tagger(
    kind: str,
    data: tuple[torch.Tensor, torch.Tensor],
    vocab_size: int,
    num_labels: int,
    *,
    steps: int = 600,
    lr: float = 3e-3,
    seed: int = 0,
    valid: tuple[torch.Tensor, torch.Tensor] | None = None,
    every: int = 100,
    d_k: int | None = None,
    scaled: bool = True,
    match_scaled_start: bool = False,
    progress: bool = False,
) -> Trained:
    """A :class:`MixerTagger` built from ``seed`` and trained on ``data = (inputs, labels)`` (both ``(N, T)``) with
    :func:`attn.transformer.train_tagger` (Adam at learning rate ``lr``) from the same seed: one run, as
    :func:`attn.training.over_seeds` repeats it.

    Returns the trained model and its history (accuracy on ``valid`` every ``every`` steps, if given).
    """
    inputs, labels = data
    build = partial(
        MixerTagger,
        kind,
        vocab_size,
        num_labels,
        max_len=inputs.shape[1],
        d_k=d_k,
        scaled=scaled,
        match_scaled_start=match_scaled_start,
    )
    return train_tagger(build, inputs, labels, steps, lr=lr, seed=seed, every=every, valid=valid, progress=progress)


def train_language_model(
    model: LanguageModel | Callable[[], LanguageModel],
    tokens: torch.Tensor,
    objective: str = "next",
    steps: int = 1000,
    *,
    mask: int | None = None,
    batch_size: int = 64,
    lr: float = 3e-3,
    warmup: int = 0,
    seed: int = 0,
    every: int = 100,
    valid: torch.Tensor | None = None,
    progress: bool = True,
) -> Trained:
    """Train on random batches of sentences ``tokens (N, T)`` with one of the pretraining objectives
    (:data:`~attn.transformer.pretraining.OBJECTIVES`). At each checkpoint the history stores, on ``valid``, for a
    causal model the next-token loss (``"next_loss"``) and every prediction's loss (``"token_loss"``, ``(N, T - 1)``,
    see :func:`~attn.transformer.measures.token_losses`); for a bidirectional one the masked-LM loss
    (``"masked_loss"``).

    As in :func:`train_tagger`, ``model`` is a module trained in place or a function that builds one under
    :func:`seeded` ``(seed)`` (that form can run in another process, e.g. ``partial(LanguageModel, config)``); the
    model and its history are returned (:class:`attn.training.Trained`)."""
    model = build_seeded(model, seed)
    check_objective(model, objective)
    language_model_batch.check(tokens, objective, mask, model.config.vocab_size)
    rng = np.random.default_rng(seed)
    g = torch.Generator().manual_seed(seed)
    loss_of = nn.CrossEntropyLoss(ignore_index=IGNORE)

    def loss_fn(model: LanguageModel, step: int) -> torch.Tensor:
        batch = _rows(tokens, rng, batch_size)
        inputs, labels = language_model_batch(batch, objective, mask, model.config.vocab_size, g)
        logits = model(inputs, need_weights=False).logits  # (B, T, V)
        return loss_of(logits.flatten(0, 1), labels.flatten())

    def checkpoint(model: LanguageModel, step: int) -> dict[str, Any]:
        if valid is None:
            return {}
        if model.config.causal:
            losses = token_losses(model, valid)  # (N, T-1)
            return {"next_loss": float(losses[valid[:, 1:] != 0].mean()), "token_loss": losses}
        return {"masked_loss": language_model_loss(model, valid, "masked", mask)}

    with seeded(seed):
        history = fit(
            model, loss_fn, steps, lr=lr, warmup=warmup, checkpoint=checkpoint, every=every, progress=progress
        )
    return Trained(model, history)


def _rows(tokens: torch.Tensor, rng: np.random.Generator, batch_size: int) -> torch.Tensor:
    """A random batch of rows, with the padding columns no row needs cut off."""
    batch = tokens[torch.from_numpy(rng.integers(len(tokens), size=batch_size))]
    return batch[:, : int((batch != 0).sum(1).max())]
