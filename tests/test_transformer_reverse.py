"""A small Transformer trained on the reverse task (train_transformer, evaluate_transformer): it learns, its runs
are seeded, a shorter run is the start of a longer one, and its greedy decoding stops at eos sentence by
sentence."""

import pytest
import torch
from tiny_models import _reference_greedy

from attn.data.sequences import make_sequence_corpus
from attn.data.translation import encode_batch
from attn.transformer import TransformerConfig, evaluate_transformer, train_transformer


@pytest.fixture(scope="module")
def reverse_corpus():
    return make_sequence_corpus("reverse", n_train=2000, n_test=100, num_symbols=6, min_len=2, max_len=5, seed=0)


SIZES = {"d_model": 32, "num_heads": 2, "num_layers": 1, "d_ff": 64}


@pytest.fixture(scope="module")
def reverser(reverse_corpus):
    # With the defaults (lr=1e-3, dropout=0.1) 300 steps reach only ~0.4 exact match (600: 0.72, 1000: 0.96);
    # lr=3e-3 without dropout reaches 0.98-1.0 in 400 steps for seeds 0-4.
    return train_transformer(reverse_corpus, steps=400, lr=3e-3, dropout=0.0, seed=0, progress=False,
                             every=400, valid=reverse_corpus.test[:20], **SIZES)  # fmt: skip


def test_a_small_transformer_learns_to_reverse(reverse_corpus, reverser):
    model, history = reverser
    scores = evaluate_transformer(model, reverse_corpus.test, reverse_corpus)
    assert scores.exact_match >= 0.9, scores.exact_match
    assert len(history.loss) == 400 and sum(history.loss[-20:]) / 20 < 0.1 * history.loss[0]
    assert [c["step"] for c in history.checkpoints] == [400]
    assert history.checkpoints[-1]["exact_match"] >= 0.85
    assert len(scores.alignments) == 100 and scores.alignments[0].shape == (
        len(reverse_corpus.test[0].target) + 1,
        len(reverse_corpus.test[0].source) + 1,
    )


def test_train_transformer_is_seeded(reverse_corpus):
    runs = [train_transformer(reverse_corpus, steps=15, seed=s, progress=False, **SIZES) for s in (3, 3, 4)]
    (a, history_a), (b, history_b), (_, history_c) = runs
    assert history_a.loss == history_b.loss  # dropout 0.1 included
    assert history_a.loss != history_c.loss
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert isinstance(a.config, TransformerConfig) and a.config.pad == reverse_corpus.target_vocab.pad


def test_a_shorter_run_is_the_start_of_a_longer_one(reverse_corpus):
    # Chapter 8 compares decoders on "the same recipe stopped at step 200" by training 200 steps apart from the
    # 500-step run: the constant rate after the warm-up and the checkpoints (which draw no random numbers) make
    # the short run's steps, and so its weights, those of the long run's start.
    short, short_history = train_transformer(reverse_corpus, steps=12, warmup=5, seed=2, progress=False, **SIZES)
    long, long_history = train_transformer(
        reverse_corpus, steps=24, warmup=5, seed=2, progress=False, every=6, valid=reverse_corpus.test[:5], **SIZES
    )
    assert short_history.loss == long_history.loss[:12]  # dropout 0.1 included
    assert not all(torch.equal(p, q) for p, q in zip(short.parameters(), long.parameters(), strict=True))
    again, _ = train_transformer(reverse_corpus, steps=12, warmup=5, seed=2, progress=False, **SIZES)
    assert all(torch.equal(p, q) for p, q in zip(short.parameters(), again.parameters(), strict=True))


def test_greedy_decode_of_a_trained_model_stops_at_eos_sentence_by_sentence(reverse_corpus, reverser):
    model, _ = reverser
    vocab = reverse_corpus.target_vocab
    # Held-out strings have 4 or 5 symbols (all shorter ones occur in training): add short training ones.
    short = [next(p for p in reverse_corpus.train if len(p.source) == n) for n in (2, 3)]
    pairs = [*short, *reverse_corpus.test[:10]]
    batch = encode_batch(pairs, reverse_corpus.source_vocab, vocab)
    decoded = model.greedy_decode(batch.source, vocab.bos, vocab.eos, max_len=9)
    assert decoded.shape[1] < 9  # every sentence ended, so decoding stopped early
    for row, pair in zip(decoded.tolist(), pairs, strict=True):
        source = torch.tensor([vocab.encode(pair.source, eos=True)])
        with torch.no_grad():
            expected = _reference_greedy(model, source, vocab.bos, vocab.eos, 9)
        assert expected[-1] == vocab.eos
        assert row == expected + [vocab.pad] * (len(row) - len(expected))
    assert {len(p.target) for p in pairs} == {2, 3, 4, 5}  # so sentences ended at different steps
