"""Translate a typed sentence with a trained :class:`~attn.seq2seq.Seq2Seq`, its alignment included."""

from __future__ import annotations

import torch

from attn.data.translation import Translation, sentence_words
from attn.data.vocab import Vocab
from attn.seq2seq.model import Seq2Seq

__all__ = ["translate"]


def translate(
    model: Seq2Seq, sentence: str, source_vocab: Vocab, target_vocab: Vocab, max_words: int = 20
) -> Translation:
    """Translate one typed sentence. Unknown words become ``<unk>`` (and are listed); empty or over-long
    input raises a ``ValueError`` that says so."""
    words = sentence_words(sentence, max_words)
    device = next(model.parameters()).device  # the words go where the model is
    ids = torch.tensor([source_vocab.encode(words, eos=True)], device=device)
    model.eval()
    lengths = torch.tensor([ids.shape[1]], device=device)
    decoded = model.greedy_decode(ids, lengths, target_vocab.bos, target_vocab.eos, 2 * max_words)
    n = int(decoded.lengths[0])
    finished = n < decoded.tokens.shape[1]  # the model said <eos> at position n
    target = [target_vocab.tokens[int(i)] for i in decoded.tokens[0, :n]]  # one word per alignment row
    alignment = None if decoded.alignments is None else decoded.alignments[0, : n + finished]
    unknown = [w for w in words if w not in source_vocab]
    return Translation(words, target, finished, alignment, unknown)
