"""Text for training tiny language models: the English side of the translation corpus, and BERT's masking.

A sentence becomes ``<bos> words <eos>`` padded with 0. A causal model reads it left to right and predicts
every next token at once; a masked language model (Devlin et al. 2019, §3.1) sees it with some words hidden
behind ``<mask>`` and predicts them from both sides.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn._checks import check, check_positive_int, checked
from attn._random import integers, uniform
from attn.data.translation import make_corpus
from attn.data.vocab import IGNORE, Vocab

__all__ = ["MASK", "TextCorpus", "make_text_corpus", "encode_sentences", "mask_tokens"]

MASK = "<mask>"


@dataclass(frozen=True)
class TextCorpus:
    """Training and held-out sentences as ids ``(N, T)``: ``<bos> words <eos>``, then padding (0)."""

    train: torch.Tensor
    test: torch.Tensor
    vocab: Vocab

    @property
    def mask(self) -> int:
        """The id of ``<mask>``."""
        return self.vocab.index[MASK]


def _encode_sentences_args(sentences: Sequence[Sequence[str]], vocab: Vocab) -> None:
    check(sentences, "sentences must not be empty")


@checked(_encode_sentences_args)
def encode_sentences(sentences: Sequence[Sequence[str]], vocab: Vocab) -> torch.Tensor:
    """``<bos> words <eos>`` for each sentence, padded to the longest: ``(N, T)``."""
    rows = [[vocab.bos, *vocab.encode(s, eos=True)] for s in sentences]
    out = torch.full((len(rows), max(map(len, rows))), vocab.pad, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


def make_text_corpus(n_train: int = 20_000, n_test: int = 1_000, seed: int = 0) -> TextCorpus:
    """The English sentences of :func:`attn.data.translation.make_corpus` (held-out ones unseen in training)."""
    corpus = make_corpus(n_train, n_test, seed)
    vocab = Vocab([*corpus.source_vocab.tokens, MASK])
    return TextCorpus(
        encode_sentences([p.source for p in corpus.train], vocab),
        encode_sentences([p.source for p in corpus.test], vocab),
        vocab,
    )


def _got(tokens: object) -> str:
    """What ``tokens`` is, for a message: dtype and shape, or its type."""
    return f"{tokens.dtype} {tuple(tokens.shape)}" if isinstance(tokens, torch.Tensor) else type(tokens).__name__


def _mask_tokens_args(
    tokens: torch.Tensor, mask: int, vocab_size: int, rate: float = 0.15, generator: torch.Generator | None = None
) -> None:
    check(isinstance(tokens, torch.Tensor) and tokens.dim() == 2 and tokens.dtype in (torch.int64, torch.int32),
          lambda: f"tokens must be a (B, T) tensor of int64 ids, got {_got(tokens)}")  # fmt: skip
    check(0 < rate <= 1, lambda: f"rate must be in (0, 1], got {rate!r}")
    check(check_positive_int("vocab_size", vocab_size) > 5,
          f"vocab_size must be above 5 (ids 0-3 are special, one is the mask), got {vocab_size}")  # fmt: skip
    check(not isinstance(mask, bool) and isinstance(mask, numbers.Integral) and 4 <= mask < vocab_size,
          lambda: f"mask must be a word id in 4..{vocab_size - 1}, got {mask!r}")  # fmt: skip


@checked(_mask_tokens_args)
def mask_tokens(
    tokens: torch.Tensor, mask: int, vocab_size: int, rate: float = 0.15, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masked-LM corruption: each word (id >= 4, not padding or a boundary) is chosen with probability
    ``rate``; of the chosen, 80 % become ``mask``, 10 % a random other word, 10 % stay. Returns the corrupted
    inputs and labels ``(B, T)``: the original id where chosen, -100 (not scored) elsewhere."""
    words = tokens >= 4  # <pad>, <bos>, <eos>, <unk> are never chosen
    chosen = words & (uniform(tokens.shape, generator, tokens.device) < rate)
    labels = torch.where(chosen, tokens, IGNORE)
    how = uniform(tokens.shape, generator, tokens.device)  # < 0.8: <mask>; < 0.9: a random word; else unchanged
    random_words = integers(4, vocab_size - 1, tokens.shape, generator, tokens.device)  # every word but the mask:
    random_words += random_words >= mask  # ids from the mask on move up by one
    inputs = torch.where(chosen & (how < 0.8), mask, tokens)
    inputs = torch.where(chosen & (how >= 0.8) & (how < 0.9), random_words, inputs)
    return inputs, labels
