"""Pretraining objectives (chapter 10): next-token prediction at every position (GPT) or at one, and BERT's masked
language modelling, on one :class:`~attn.transformer.LanguageModel`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from attn._checks import check, check_choice, checked
from attn._random import uniform
from attn.data.language import mask_tokens
from attn.data.sequences import IGNORE
from attn.training import evaluating

if TYPE_CHECKING:  # for the annotations only: the objectives do not need the model's module
    from attn.transformer.model import LanguageModel

__all__ = ["check_objective", "OBJECTIVES", "language_model_batch", "language_model_loss"]


OBJECTIVES = ("next", "one", "masked")


def check_objective(model: LanguageModel, objective: str) -> None:
    """Next-token objectives need a causal model: a bidirectional one would see the token it predicts."""
    check(objective not in ("next", "one") or model.config.causal,
          lambda: f"objective {objective!r} needs a causal model (config.causal=True); use 'masked'")  # fmt: skip


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


def language_model_loss(
    model: LanguageModel, tokens: torch.Tensor, objective: str, mask: int | None = None, seed: int = 0
) -> float:
    """Mean cross-entropy (nats per scored token) of ``objective`` on ``tokens``; masking drawn from ``seed``."""
    check_objective(model, objective)
    g = torch.Generator().manual_seed(seed)
    inputs, labels = language_model_batch(tokens, objective, mask, model.config.vocab_size, g)
    with evaluating(model):
        logits = model(inputs, need_weights=False).logits  # (B, T, V)
    return float(nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE))
