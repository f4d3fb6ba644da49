"""Use trained models on typed or sampled text: translate with a :class:`~attn.transformer.Transformer`, write
sentences with a :class:`~attn.transformer.LanguageModel` (for the chapters' panels)."""

from __future__ import annotations

import torch

from attn._checks import check_positive_int
from attn.additive import Translation, tokenize
from attn.data.vocab import Vocab
from attn.transformer.models import LanguageModel, Transformer

__all__ = ["translate", "sample_sentences"]


def translate(
    model: Transformer, sentence: str, source_vocab: Vocab, target_vocab: Vocab, max_words: int = 20
) -> Translation:
    """Greedy-decode one typed sentence; the alignment is the last layer's cross-attention averaged over heads,
    read while the model re-reads its own translation. Unknown words become ``<unk>`` (and are listed); empty
    or over-long input raises a ``ValueError`` that says so."""
    if not isinstance(sentence, str):
        raise ValueError(f"sentence must be a string, got {type(sentence).__name__}")
    words = tokenize(sentence)
    if not words:
        raise ValueError("the sentence is empty: type a few words, e.g. 'the dog sees the cat'")
    if len(words) > max_words:
        raise ValueError(f"the sentence has {len(words)} words; this model reads at most {max_words}")
    source = torch.tensor([source_vocab.encode(words, eos=True)])  # (1, S)
    model.eval()
    longest = min(2 * max_words, model.config.max_len)
    decoded = model.greedy_decode(source, target_vocab.bos, target_vocab.eos, longest)[0]  # (≤ longest,)
    ended = (decoded == target_vocab.eos).nonzero()
    finished = len(ended) > 0
    n = int(ended[0]) if finished else len(decoded)
    target = [target_vocab.tokens[int(i)] for i in decoded[:n]]
    with torch.no_grad():
        # Row k of the decoder input predicts target word k (and, if the model ended, row n predicts <eos>).
        target_in = torch.cat([torch.tensor([target_vocab.bos]), decoded[: n - 1 + finished]])[None]  # (1, rows)
        cross = model(source, target_in).cross_attention
    alignment = cross[-1][0].mean(0)  # (rows, S): heads averaged
    unknown = [w for w in words if w not in source_vocab]
    return Translation(words, target, finished, alignment, unknown)


def sample_sentences(
    model: LanguageModel, vocab: Vocab, n: int, temperature: float = 1.0, seed: int = 0, max_words: int = 20
) -> list[str]:
    """``n`` sentences written by a causal :class:`~attn.transformer.LanguageModel` from ``<bos>``, each token
    drawn from ``softmax(logits / temperature)`` (0: greedy) with a generator seeded by ``seed``; a sentence
    ends at ``<eos>`` or after ``max_words`` tokens, and shows every token drawn (a special one by its name)."""
    n = check_positive_int("n", n)
    prompt = torch.full((n, 1), vocab.bos, dtype=torch.long)  # (n, 1)
    steps = min(check_positive_int("max_words", max_words), model.config.max_len)
    g = torch.Generator().manual_seed(seed)
    written = model.generate(prompt, steps, temperature=temperature, generator=g)[:, 1:].tolist()  # n x steps
    ends = [row.index(vocab.eos) if vocab.eos in row else len(row) for row in written]
    return [" ".join(vocab.tokens[i] for i in row[:end]) for row, end in zip(written, ends, strict=True)]
