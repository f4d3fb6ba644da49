"""Pretraining objectives (chapter 10): next-token prediction at every position (GPT) or at one, and BERT's masked
language modelling, on one :class:`~attn.transformer.LanguageModel`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from attn._checks import check, check_choice, check_positive_int, check_tokens, checked, describe
from attn._random import uniform
from attn.blocks.attention import KeyValue
from attn.data.language import mask_tokens
from attn.data.sequences import IGNORE
from attn.training import History, build_seeded, evaluating, fit, seeded
from attn.transformer.models import KeyValueCache, LanguageModel

__all__ = [
    "OBJECTIVES",
    "language_model_batch",
    "token_losses",
    "language_model_loss",
    "train_language_model",
    "fill_in",
    "fill_in_by_likelihood",
]


OBJECTIVES = ("next", "one", "masked")


def _language_model_batch_args(
    tokens: torch.Tensor,
    objective: str,
    mask: int | None = None,
    vocab_size: int | None = None,
    generator: torch.Generator | None = None,
) -> None:
    check_choice("objective", objective, OBJECTIVES)
    if objective == "masked":
        check(mask is not None and vocab_size is not None,
              "the masked objective needs the id of the mask token and the vocabulary size")  # fmt: skip
        mask_tokens.check(tokens, mask, vocab_size, generator=generator)


@checked(_language_model_batch_args)
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
    if objective == "masked":
        return mask_tokens(tokens, mask, vocab_size, generator=generator)
    inputs, labels = tokens[:, :-1], tokens[:, 1:].masked_fill(tokens[:, 1:] == 0, IGNORE)  # (B, T-1) each
    if objective == "one":
        scored = labels != IGNORE
        pick = (uniform(labels.shape, generator, labels.device) * scored).argmax(1)  # (B,): one scored position
        one = torch.full_like(labels, IGNORE)
        rows = torch.arange(len(labels), device=labels.device)
        one[rows, pick] = labels[rows, pick]
        labels = one
    return inputs, labels


def _check_objective(model: LanguageModel, objective: str) -> None:
    """Next-token objectives need a causal model: a bidirectional one would see the token it predicts."""
    check(objective not in ("next", "one") or model.config.causal,
          lambda: f"objective {objective!r} needs a causal model (config.causal=True); use 'masked'")  # fmt: skip


def token_losses(model: LanguageModel, tokens: torch.Tensor) -> torch.Tensor:
    """The cross-entropy (nats) of each next-token prediction of a causal model on ``tokens (N, T)``:
    ``(N, T - 1)``, entry t for predicting token t + 1 (0 where that token is padding)."""
    _check_objective(model, "next")
    with evaluating(model):
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
    with evaluating(model):
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
    model = build_seeded(model, seed)
    _check_objective(model, objective)
    language_model_batch.check(tokens, objective, mask, model.config.vocab_size)
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
    check(model.config.causal or mask is not None, "a bidirectional model needs the id of the mask token (mask=...)")
    guesses = torch.full_like(tokens, IGNORE)
    with evaluating(model):
        if model.config.causal:
            guesses[:, 1:] = model(tokens[:, :-1], need_weights=False).logits.argmax(-1)
        else:
            for t in range(1, tokens.shape[1]):
                blanked = tokens.clone()
                blanked[:, t] = mask
                guesses[:, t] = model(blanked, need_weights=False).logits[:, t].argmax(-1)
    return guesses.masked_fill(tokens == 0, IGNORE)


def _fill_in_by_likelihood_args(
    model: LanguageModel, tokens: torch.Tensor, candidates: torch.Tensor, batch_size: int = 1024
) -> None:
    check(model.config.causal, "fill_in_by_likelihood needs a causal model (config.causal=True); use fill_in for BERT")
    check_tokens("tokens", tokens, model.config.vocab_size)
    check(isinstance(candidates, torch.Tensor) and candidates.dim() == 1 and len(candidates) > 0,
          lambda: f"candidates must be a non-empty (C,) tensor of token ids, got {describe(candidates)}")  # fmt: skip
    check_tokens("candidates", candidates[None], model.config.vocab_size)
    pad = model.config.pad
    check(not bool((candidates == pad).any()),
          lambda: f"candidates must not hold the padding id {pad}: it would blank the word out")  # fmt: skip
    check_positive_int("batch_size", batch_size)


def fill_in_by_likelihood(
    model: LanguageModel, tokens: torch.Tensor, candidates: torch.Tensor, batch_size: int = 1024
) -> tuple[torch.Tensor, torch.Tensor]:
    """A causal model's guess for every word of ``tokens (N, T)`` when that word is blanked out, read from both
    sides: each of the ``candidates (C,)`` (ids) is put in the blank and scored by the likelihood of the whole
    sentence, ``log p(x) = sum_s log p(x_s | x_<s)`` (the chain rule, Radford et al. 2018, eq. 1), which counts the
    words on the right of the blank too. Returns the guesses ``(N, T)`` (the best candidate; -100 at padding and
    ``<bos>``) and the log-likelihoods ``(N, T, C)`` of the sentences with each candidate in each place (-inf where
    nothing is filled in).

    :func:`fill_in` needs one pass; this needs one per candidate and position. The prefix left of the blank is
    read once (its keys and values are cached, :meth:`LanguageModel.extend`) and only the candidate and the words
    after it are read per candidate, ``batch_size`` sentences at a time."""
    _fill_in_by_likelihood_args(model, tokens, candidates, batch_size)  # the model is the caller's: no @checked
    pad = model.config.pad
    N, T = tokens.shape
    C = len(candidates)
    candidates = candidates.to(device=tokens.device, dtype=torch.long)
    scores = torch.full((N, T, C), -torch.inf, device=tokens.device)  # (N, T, C)
    per = max(1, batch_size // C)  # sentences per batch of N' * C rows
    with evaluating(model):
        out, cache = model.extend(tokens, need_weights=False)  # every key and value of the sentences as written
        logp = out.logits.log_softmax(-1)  # (N, T, V): row s predicts token s + 1
        targets = tokens[:, 1:]  # (N, T-1)
        written = logp[:, :-1].gather(-1, targets[..., None])[..., 0] * (targets != pad)  # (N, T-1)
        prefix = torch.cat([written.new_zeros(N, 1), written.cumsum(1)], 1)  # (N, T): log p(x_1 .. x_t)
        for t in range(1, T):
            rows = (tokens[:, t] != pad).nonzero()[:, 0]  # the sentences that reach position t
            if not len(rows):
                continue
            L = int((tokens[rows] != pad).sum(1).max())  # their longest length
            # log p(x_<t) + log p(c | x_<t): (n, C)
            score = prefix[rows, t - 1, None] + logp[rows, t - 1][:, candidates]
            for start in range(0, len(rows) if t < L - 1 else 0, per):
                r = rows[start : start + per]  # (b,)
                b = len(r)
                past = KeyValueCache(
                    tokens[r, :t].repeat_interleave(C, 0),  # (b C, t)
                    tuple(
                        KeyValue(kv.key[r, :, :t].repeat_interleave(C, 0), kv.value[r, :, :t].repeat_interleave(C, 0))
                        for kv in cache.layers
                    ),  # per layer (b C, H_kv, t, d_k)
                )
                reads = tokens[r, t : L - 1].repeat_interleave(C, 0)  # (b C, L-1-t): the candidate, then the rest
                reads[:, 0] = candidates.repeat(b)
                after = tokens[r, t + 1 : L].repeat_interleave(C, 0)  # (b C, L-1-t): the words right of the blank
                later = model.extend(reads, past, need_weights=False)[0].logits.log_softmax(-1)  # (b C, L-1-t, V)
                right = (later.gather(-1, after[..., None])[..., 0] * (after != pad)).sum(1)  # (b C,)
                score[start : start + b] += right.view(b, C)
            scores[rows, t] = score
    guesses = candidates[scores.argmax(-1)]  # (N, T)
    return guesses.masked_fill(scores[..., 0] == -torch.inf, IGNORE), scores
