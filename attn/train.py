"""One small training loop for every chapter: seeded, Adam, gradient clipping, tqdm progress, a history."""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from attn._checks import check_nonnegative_int, check_positive_int
from attn._progress import progress_bar
from attn.additive import Seq2Seq, Seq2SeqConfig
from attn.data.language import mask_tokens
from attn.data.sequences import IGNORE
from attn.data.translation import Batch, Corpus, Pair, alignment_mass, encode_batch, exact_match
from attn.transformer import LanguageModel, Transformer, TransformerConfig

__all__ = [
    "seeded",
    "History",
    "noam_schedule",
    "fit",
    "TranslationScores",
    "evaluate_translation",
    "train_translator",
    "evaluate_transformer",
    "train_transformer",
    "tagging_accuracy",
    "train_tagger",
    "OBJECTIVES",
    "language_model_batch",
    "token_losses",
    "language_model_loss",
    "train_language_model",
    "fill_in",
]

OBJECTIVES = ("next", "one", "masked")


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Inside the block, torch's global random numbers start from ``seed``; outside, they are as they were.

    Use it to build a model with the same initial weights every time, without changing the caller's state.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def noam_schedule(step: int, d_model: int, warmup: int) -> float:
    """``lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`` (Vaswani et al. 2017, §5.3, eq. 3), step
    counted from 1: a linear rise for ``warmup`` steps to its peak ``(d_model · warmup)^-0.5``, then a decay as
    step^-0.5. With :class:`torch.optim.lr_scheduler.LambdaLR` (which counts from 0) and a base rate of 1:
    ``LambdaLR(optimizer, lambda i: noam_schedule(i + 1, d_model, warmup))``, or :func:`fit` with
    ``lr=1.0, schedule=lambda step: noam_schedule(step, d_model, warmup)``."""
    for name, value in (("step", step), ("d_model", d_model), ("warmup", warmup)):
        check_positive_int(name, value)
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


@dataclass
class History:
    """What a run of :func:`fit` saw: the loss at every step, what ``checkpoint`` returned (with the step and
    the training seconds so far), and the seconds spent in training steps (checkpoints not counted)."""

    loss: list[float] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def _checkpoint_steps(every: object) -> Callable[[int], bool]:
    """Whether a step is a checkpoint: every ``every`` steps (a positive int), or the steps listed."""
    if isinstance(every, numbers.Integral) and not isinstance(every, bool) and every >= 1:
        return lambda step: step % every == 0
    if (
        isinstance(every, Collection)
        and every
        and all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1 for s in every)
    ):
        listed = frozenset(every)
        return lambda step: step in listed
    raise ValueError(f"every must be a positive int or a collection of positive steps, got {every!r}")


def fit(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, int], torch.Tensor],
    steps: int,
    *,
    lr: float = 3e-3,
    clip: float = 1.0,
    checkpoint: Callable[[nn.Module, int], dict[str, Any]] | None = None,
    every: int | Collection[int] = 100,
    warmup: int = 0,
    progress: bool = True,
    stop_when: Callable[[dict[str, Any]], bool] | None = None,
    schedule: Callable[[int], float] | None = None,
) -> History:
    """Train for ``steps`` Adam steps; ``loss_fn(model, step)`` computes one batch's loss.

    With ``warmup`` > 0 the learning rate rises linearly from ``lr / warmup`` to ``lr`` over the first
    ``warmup`` steps, then stays constant (the Transformer paper warms up the same way, §5.3, and then decays
    the rate as step^-0.5: :func:`noam_schedule`). A ``schedule`` replaces that: the rate of step s (from 1) is
    ``lr · schedule(s)``.

    Every ``every`` steps (and after the last) ``checkpoint(model, step)`` is called in eval mode under
    ``torch.no_grad()`` and its dict (metrics, attention snapshots) is stored in the history; ``every`` may also
    be the steps themselves, e.g. ``(400, 1000)``. With ``stop_when``, training stops early at the first
    checkpoint whose dict it accepts (a goal reached).
    """
    at = _checkpoint_steps(every)
    check_positive_int("steps", steps)
    check_nonnegative_int("warmup", warmup)
    if schedule is not None and (warmup or not callable(schedule)):
        got = f"warmup={warmup} as well" if callable(schedule) else repr(schedule)
        raise ValueError(f"schedule must be a function of the step (from 1) that replaces warmup, got {got}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def rate(i: int) -> float:  # LambdaLR counts the steps from 0
        if schedule is not None:
            return schedule(i + 1)
        return min(1.0, (i + 1) / warmup) if warmup else 1.0

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    history = History()
    bar = progress_bar(range(1, steps + 1), show=progress, desc="training", leave=False)
    for step in bar:
        start = time.perf_counter()
        model.train()
        loss = loss_fn(model, step)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        scheduler.step()
        history.loss.append(loss.item())
        history.seconds += time.perf_counter() - start
        if checkpoint is not None and (at(step) or step == steps):
            model.eval()
            with torch.no_grad():
                record = {"step": step, "seconds": history.seconds, **checkpoint(model, step)}
            history.checkpoints.append(record)
            bar.set_postfix({k: v for k, v in record.items() if k not in ("step", "seconds") and isinstance(v, float)})
            if stop_when is not None and stop_when(record):
                break
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


def _random_batch(encoded: Batch, rng: np.random.Generator, batch_size: int) -> Batch:
    """``batch_size`` pairs of the encoded training set drawn at random (with replacement), padded."""
    return encoded.rows(torch.from_numpy(rng.integers(len(encoded.source), size=batch_size)))


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
) -> tuple[Seq2Seq, History]:
    """Train a :class:`Seq2Seq` on ``corpus.train`` (cross-entropy, teacher forcing), seeded.

    At each checkpoint the history stores the teacher-forced alignments of the ``watch`` pairs
    (``"alignments"``) and the exact match on the ``valid`` pairs (``"exact_match"``) with the greedy
    translations it scored (``"predictions"``), if given. The learning rate is constant, so the model at step s of
    a longer run is the model a run of s steps ends with.
    """
    config = Seq2SeqConfig(len(corpus.source_vocab), len(corpus.target_vocab), attention=attention, **sizes)
    with seeded(seed):
        model = Seq2Seq(config)
    rng = np.random.default_rng(seed)
    loss_of = nn.CrossEntropyLoss(ignore_index=corpus.target_vocab.pad)
    watched = encode_batch(watch, corpus.source_vocab, corpus.target_vocab) if watch else None
    train_set = encode_batch(corpus.train, corpus.source_vocab, corpus.target_vocab)  # once: each step draws rows

    def loss_fn(model: Seq2Seq, step: int) -> torch.Tensor:
        batch = _random_batch(train_set, rng, batch_size)
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
    return model, history


def evaluate_transformer(
    model: Transformer, pairs: Sequence[Pair], corpus: Corpus, batch_size: int = 500
) -> TranslationScores:
    """Greedy-decode every pair and score it; the alignments are the last layer's cross-attention, averaged
    over heads, while the model reads the reference (teacher forcing)."""
    predictions: list[list[str]] = []
    alignments: list[torch.Tensor] = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            batch = encode_batch(chunk, corpus.source_vocab, corpus.target_vocab)
            longest = min(batch.target_out.shape[1] + 5, model.config.max_len)
            decoded = model.greedy_decode(batch.source, corpus.target_vocab.bos, corpus.target_vocab.eos, longest)
            predictions += [corpus.target_vocab.decode(row) for row in decoded]
            cross = model(batch.source, batch.target_in).cross_attention[-1].mean(1)  # (B, T, S)
            alignments += [w[: len(p.target) + 1, : len(p.source) + 1] for w, p in zip(cross, chunk, strict=True)]
    return TranslationScores(
        exact_match(predictions, pairs), alignment_mass(alignments, pairs), predictions, alignments
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
    if (
        isinstance(label_smoothing, bool)
        or not isinstance(label_smoothing, numbers.Real)
        or not 0 <= label_smoothing < 1
    ):
        raise ValueError(f"label_smoothing must be a number in [0, 1), got {label_smoothing!r}")
    config = TransformerConfig(len(corpus.source_vocab), len(corpus.target_vocab), pad=corpus.target_vocab.pad, **sizes)
    with seeded(seed):
        model = Transformer(config)
    rng = np.random.default_rng(seed)
    loss_of = nn.CrossEntropyLoss(ignore_index=corpus.target_vocab.pad, label_smoothing=label_smoothing)
    watched = encode_batch(watch, corpus.source_vocab, corpus.target_vocab) if watch else None
    train_set = encode_batch(corpus.train, corpus.source_vocab, corpus.target_vocab)  # once: each step draws rows

    def loss_fn(model: Transformer, step: int) -> torch.Tensor:
        batch = _random_batch(train_set, rng, batch_size)
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


def tagging_accuracy(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, ignore: int = -100) -> float:
    """Fraction of positions (labels != ``ignore``) where the model's most likely label is right."""
    model.eval()
    with torch.no_grad():
        predicted = model(inputs).logits.argmax(-1)  # (N, T)
    keep = labels != ignore
    return float((predicted[keep] == labels[keep]).float().mean())


def _built(model: nn.Module | Callable[[], nn.Module], seed: int) -> nn.Module:
    """``model`` itself, or the module the function ``model`` builds under :func:`seeded` ``(seed)``."""
    if isinstance(model, nn.Module):
        return model
    if not callable(model):
        raise ValueError(f"model must be a module or a function that builds one, got {model!r}")
    with seeded(seed):
        built = model()
    if not isinstance(built, nn.Module):
        raise ValueError(f"the function given as model must return a module, got {type(built).__name__}")
    return built


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
) -> History | tuple[nn.Module, History]:
    """Train ``model`` (ids ``(B, T)`` -> an output with ``logits (B, T, C)``) to predict ``labels (N, T)`` at
    every position at once (cross-entropy; label -100 is ignored) on random batches of ``inputs (N, T)``.

    ``model`` is a module, trained in place (the :class:`History` is returned), or a function of no arguments
    that builds one: it is called under :func:`seeded` ``(seed)``, so each seed starts from its own weights, and
    ``(model, history)`` is returned, as :func:`train_transformer` does. That form can run in another process:
    ``over_seeds(partial(train_tagger, partial(LanguageModel, config), inputs, labels), seeds)``
    (:func:`attn.seeds.over_seeds`) trains one model per seed.

    At each checkpoint the history stores the accuracy on ``valid = (inputs, labels)`` (``"accuracy"``). With a
    ``goal``, training stops at the first checkpoint whose accuracy reaches it (its ``"step"`` says when), so
    ``steps`` is the most it may take; a run that ends without reaching the goal has trained all ``steps``.
    """
    if inputs.shape != labels.shape or inputs.dim() != 2:
        raise ValueError(f"inputs and labels must both be (N, T), got {tuple(inputs.shape)} and {tuple(labels.shape)}")
    if goal is not None and (valid is None or isinstance(goal, bool) or not isinstance(goal, numbers.Real)):
        raise ValueError(f"goal must be a number with valid=(inputs, labels) to measure it on, got goal={goal!r}")
    built = not isinstance(model, nn.Module)
    model = _built(model, seed)
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
    return (model, history) if built else history


def language_model_batch(
    tokens: torch.Tensor,
    objective: str,
    mask: int | None = None,
    vocab_size: int | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and labels ``(B, T')`` for one of :data:`OBJECTIVES` on sentences ``tokens (B, T)`` (0 = padding):

    - ``"next"``: read ``tokens[:, :-1]``, predict ``tokens[:, 1:]``: the next token at every position at once;
    - ``"one"``: the same, but only one position per sentence (drawn at random) is scored;
    - ``"masked"``: BERT's masked LM (:func:`attn.data.language.mask_tokens`: ``mask`` is the id of
      ``<mask>``, random replacements are drawn below ``vocab_size``).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if objective == "masked":
        if mask is None or vocab_size is None:
            raise ValueError("the masked objective needs the id of the mask token and the vocabulary size")
        return mask_tokens(tokens, mask, vocab_size, generator=generator)
    inputs, labels = tokens[:, :-1], tokens[:, 1:].masked_fill(tokens[:, 1:] == 0, IGNORE)  # (B, T-1) each
    if objective == "one":
        scored = labels != IGNORE
        pick = (torch.rand(labels.shape, generator=generator) * scored).argmax(1)  # (B,): one scored position
        one = torch.full_like(labels, IGNORE)
        rows = torch.arange(len(labels))
        one[rows, pick] = labels[rows, pick]
        labels = one
    return inputs, labels


@contextmanager
def _evaluating(model: nn.Module) -> Iterator[None]:
    """Eval mode (no dropout) and no gradients inside the block; the model's mode is restored after it."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def _check_objective(model: LanguageModel, objective: str) -> None:
    """Next-token objectives need a causal model: a bidirectional one would see the token it predicts."""
    if objective in ("next", "one") and not model.config.causal:
        raise ValueError(f"objective {objective!r} needs a causal model (config.causal=True); use 'masked'")


def token_losses(model: LanguageModel, tokens: torch.Tensor) -> torch.Tensor:
    """The cross-entropy (nats) of each next-token prediction of a causal model on ``tokens (N, T)``:
    ``(N, T - 1)``, entry t for predicting token t + 1 (0 where that token is padding)."""
    _check_objective(model, "next")
    with _evaluating(model):
        logits = model(tokens[:, :-1], need_weights=False).logits  # (N, T-1, V)
    targets = tokens[:, 1:].masked_fill(tokens[:, 1:] == 0, IGNORE)  # (N, T-1)
    return nn.functional.cross_entropy(logits.transpose(1, 2), targets, ignore_index=IGNORE, reduction="none")


def language_model_loss(
    model: LanguageModel, tokens: torch.Tensor, objective: str, mask: int | None = None, seed: int = 0
) -> float:
    """Mean cross-entropy (nats per scored token) of ``objective`` on ``tokens``; masking drawn from ``seed``."""
    _check_objective(model, objective)
    g = torch.Generator().manual_seed(seed)
    inputs, labels = language_model_batch(tokens, objective, mask, model.config.vocab_size, g)
    with _evaluating(model):
        logits = model(inputs, need_weights=False).logits  # (B, T, V)
    return float(nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE))


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
) -> History | tuple[LanguageModel, History]:
    """Train on random batches of sentences ``tokens (N, T)`` with one of :data:`OBJECTIVES`. At each checkpoint
    the history stores, on ``valid``, for a causal model the next-token loss (``"next_loss"``) and every
    prediction's loss (``"token_loss"``, ``(N, T - 1)``, see :func:`token_losses`); for a bidirectional one the
    masked-LM loss (``"masked_loss"``).

    As in :func:`train_tagger`, ``model`` is a module trained in place (the :class:`History` is returned) or a
    function that builds one under :func:`seeded` ``(seed)`` (``(model, history)`` is returned; that form can run
    in another process, e.g. ``partial(LanguageModel, config)``)."""
    built = not isinstance(model, nn.Module)
    model = _built(model, seed)
    _check_objective(model, objective)
    language_model_batch(tokens[:1], objective, mask, model.config.vocab_size, torch.Generator())  # check arguments
    rng = np.random.default_rng(seed)
    g = torch.Generator().manual_seed(seed)
    loss_of = nn.CrossEntropyLoss(ignore_index=IGNORE)

    def loss_fn(model: nn.Module, step: int) -> torch.Tensor:
        batch = _rows(tokens, rng, batch_size)
        inputs, labels = language_model_batch(batch, objective, mask, model.config.vocab_size, g)
        logits = model(inputs, need_weights=False).logits  # (B, T, V)
        return loss_of(logits.flatten(0, 1), labels.flatten())

    def checkpoint(model: nn.Module, step: int) -> dict[str, Any]:
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
    return (model, history) if built else history


def _rows(tokens: torch.Tensor, rng: np.random.Generator, batch_size: int) -> torch.Tensor:
    """A random batch of rows, with the padding columns no row needs cut off."""
    batch = tokens[torch.from_numpy(rng.integers(len(tokens), size=batch_size))]
    return batch[:, : int((batch != 0).sum(1).max())]


def fill_in(model: LanguageModel, tokens: torch.Tensor, mask: int | None = None) -> torch.Tensor:
    """The model's guess for every word of ``tokens (N, T)`` when that word is blanked out: ``(N, T)`` ids
    (-100 at padding and ``<bos>``). A causal model guesses from the words on the left (one forward pass); a
    bidirectional one sees the sentence with that one word replaced by ``mask`` (one pass per position)."""
    if not model.config.causal and mask is None:
        raise ValueError("a bidirectional model needs the id of the mask token (mask=...)")
    guesses = torch.full_like(tokens, IGNORE)
    with _evaluating(model):
        if model.config.causal:
            guesses[:, 1:] = model(tokens[:, :-1], need_weights=False).logits.argmax(-1)
        else:
            for t in range(1, tokens.shape[1]):
                blanked = tokens.clone()
                blanked[:, t] = mask
                guesses[:, t] = model(blanked, need_weights=False).logits[:, t].argmax(-1)
    return guesses.masked_fill(tokens == 0, IGNORE)
