"""What is measured on a trained :class:`~attn.seq2seq.Seq2Seq`: its translations of held-out pairs, scored
against the references, with its alignments."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attn.data.translation import Corpus, Pair, TranslationScores, score_translations
from attn.seq2seq.model import Seq2Seq

__all__ = ["evaluate_translation"]


def evaluate_translation(
    model: Seq2Seq, pairs: Sequence[Pair], corpus: Corpus, batch_size: int = 500
) -> TranslationScores:
    """Greedy-decode every pair and score it; read the references once more for the alignments."""
    bos, eos = corpus.target_vocab.bos, corpus.target_vocab.eos
    model.eval()
    with torch.no_grad():
        return score_translations(
            lambda batch: model.greedy_decode(batch.source, batch.source_lengths, bos, eos).tokens,
            lambda batch: model(batch.source, batch.source_lengths, batch.target_in).alignments,
            pairs,
            corpus,
            batch_size,
        )
