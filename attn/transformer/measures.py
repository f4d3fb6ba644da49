"""What is measured on a trained language model: its guess for every word blanked out, from the words around it
(a masked model) or from the likelihood of each candidate sentence (a causal one). The scores a trainer checks at
its checkpoints (translations, tagging accuracy, next-token losses) are in :mod:`attn.transformer.train`."""

from __future__ import annotations

from typing import cast

import torch

from attn._checks import check, check_positive_int, check_tokens, describe
from attn.blocks.attention import KeyValue
from attn.data.sequences import IGNORE
from attn.training import evaluating
from attn.transformer.model import KeyValueCache, LanguageModel

__all__ = ["fill_in", "fill_in_by_likelihood"]


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
                blanked[:, t] = cast(int, mask)  # a bidirectional model was given one (the check above)
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
