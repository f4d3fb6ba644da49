"""attn.data.language: the text corpus of the tiny language models (the English of the translation corpus),
encoding sentences, and BERT's masking (mask_tokens)."""

import pytest
import torch
from tiny_models import N_TEST, N_TRAIN

from attn.data.language import MASK, encode_sentences, make_text_corpus, mask_tokens
from attn.data.sequences import IGNORE
from attn.data.translation import make_corpus
from attn.data.vocab import Vocab

# ---------------------------------------------------------------- mask_tokens


def test_mask_tokens_follows_berts_80_10_10_recipe():
    V, mask = 30, 29
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, V - 1, (400, 50), generator=g)  # ids 0..3 (padding, boundaries) mixed in
    inputs, labels = mask_tokens(tokens, mask, V, generator=torch.Generator().manual_seed(1))
    words = tokens >= 4
    chosen = labels != IGNORE
    assert not (chosen & ~words).any()  # <pad>, <bos>, <eos>, <unk> are never chosen
    assert torch.equal(labels[chosen], tokens[chosen])
    assert (labels[~chosen] == IGNORE).all()
    assert torch.equal(inputs[~chosen], tokens[~chosen])  # what is not chosen is left as it is
    n = int(chosen.sum())
    assert abs(n / int(words.sum()) - 0.15) < 0.015
    masked = inputs[chosen] == mask
    kept = inputs[chosen] == tokens[chosen]
    replaced = ~masked & ~kept
    assert abs(float(masked.float().mean()) - 0.8) < 0.03
    assert abs(float(replaced.float().mean()) - 0.1) < 0.03
    assert abs(float(kept.float().mean()) - 0.1) < 0.03
    assert ((inputs[chosen][replaced] >= 4) & (inputs[chosen][replaced] < V)).all()  # random words, not specials


def test_mask_tokens_is_seeded_and_rate_one_chooses_every_word():
    tokens = torch.tensor([[1, 5, 6, 7, 2, 0], [1, 8, 2, 0, 0, 0]])

    def run(seed, rate=0.5):
        return mask_tokens(tokens, 9, 10, rate, generator=torch.Generator().manual_seed(seed))

    assert all(torch.equal(a, b) for a, b in zip(run(3), run(3), strict=True))
    _, labels = run(0, rate=1.0)
    assert torch.equal(labels, torch.where(tokens >= 4, tokens, IGNORE))


@pytest.mark.parametrize("rate", [0, 0.0, -0.1, 1.01, 2])
def test_mask_tokens_rejects_a_rate_outside_0_1(rate):
    with pytest.raises(ValueError, match=r"rate must be in \(0, 1\], got"):
        mask_tokens(torch.tensor([[1, 5, 2]]), 6, 7, rate)
    with pytest.raises(ValueError, match="vocab_size must be a positive int, got 0"):
        mask_tokens(torch.tensor([[1, 5, 2]]), 6, 0)


def test_mask_tokens_needs_room_for_random_words():
    with pytest.raises(ValueError, match="vocab_size must be above 5"):
        mask_tokens(torch.tensor([[1, 5, 2]]), 4, 5)


def test_mask_tokens_checks_tokens_and_mask_and_never_draws_the_mask_as_a_random_word():
    with pytest.raises(ValueError, match=r"tokens must be a \(B, T\) tensor of int64 ids, got torch.float32 \(3,\)"):
        mask_tokens(torch.tensor([1.0, 5.0, 2.0]), 9, 10)
    with pytest.raises(ValueError, match=r"mask must be a word id in 4..9, got 99"):
        mask_tokens(torch.tensor([[1, 5, 2]]), 99, 10)
    tokens = torch.full((200, 50), 5)
    inputs, labels = mask_tokens(tokens, 6, 8, rate=1.0, generator=torch.Generator().manual_seed(0))
    replaced = inputs[(inputs != 6) & (inputs != 5)]  # the random words that differ from the original
    assert len(replaced) > 0 and set(replaced.tolist()) <= {4, 7}  # never <mask> (6)


# ---------------------------------------------------------------- the text corpus


def test_text_corpus_rows_are_bos_words_eos_then_padding(corpus):
    vocab = corpus.vocab
    assert corpus.train.shape[0] == N_TRAIN and corpus.test.shape[0] == N_TEST
    assert MASK in vocab and corpus.mask == vocab.index[MASK] == len(vocab) - 1
    for rows in (corpus.train, corpus.test):
        assert rows.dtype == torch.long and (rows[:, 0] == vocab.bos).all()
        assert ((rows == vocab.eos).sum(1) == 1).all()
        for row in rows.tolist():
            end = row.index(vocab.eos)
            assert all(i >= 4 for i in row[1:end]) and set(row[end + 1 :]) <= {0}
        assert (rows != 0).sum(1).max() == rows.shape[1]  # padded to the longest, no further
    assert (corpus.train == corpus.mask).sum() == 0


def test_text_corpus_holds_the_translation_corpus_english_and_keeps_test_sentences_apart(corpus):
    english = make_corpus(N_TRAIN, N_TEST, seed=0)
    assert [corpus.vocab.decode(row) for row in corpus.train] == [list(p.source) for p in english.train]
    assert [corpus.vocab.decode(row) for row in corpus.test] == [list(p.source) for p in english.test]
    train = {tuple(corpus.vocab.decode(row)) for row in corpus.train}
    assert not train & {tuple(corpus.vocab.decode(row)) for row in corpus.test}
    again = make_text_corpus(N_TRAIN, N_TEST, seed=0)
    assert torch.equal(again.train, corpus.train) and torch.equal(again.test, corpus.test)


def test_encode_sentences_by_hand():
    vocab = Vocab(["dog", "cat", "sees"])  # ids 4, 5, 6
    encoded = encode_sentences([["dog", "sees", "cat"], ["cat"], ["zebra", "dog"]], vocab)
    assert encoded.tolist() == [[1, 4, 6, 5, 2], [1, 5, 2, 0, 0], [1, 3, 4, 2, 0]]  # zebra is <unk>
    with pytest.raises(ValueError, match="sentences must not be empty"):
        encode_sentences([], vocab)
