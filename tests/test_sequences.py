"""The algorithmic sequence tasks: answers and alignments, corpus generation, bad arguments; and the repeated
sequences of induction heads (repeated_sequences)."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn.data.sequences import SYMBOLS, TASKS, make_sequence_corpus, repeated_sequences, sequence_pair
from attn.data.translation import Pair, encode_batch

# ---------------------------------------------------------------- sequence_pair


def test_copy_and_reverse():
    source = ("c", "a", "b", "a")
    assert sequence_pair("copy", source) == Pair(source, source, (0, 1, 2, 3))
    assert sequence_pair("reverse", source) == Pair(source, ("a", "b", "a", "c"), (3, 2, 1, 0))


def test_sort_is_stable_with_ties():
    source = ("c", "a", "b", "a", "c", "a")
    pair = sequence_pair("sort", source)
    assert pair.target == ("a", "a", "a", "b", "c", "c")
    assert pair.alignment == (1, 3, 5, 2, 0, 4)  # equal symbols keep their order


def test_sequence_pair_accepts_lists_and_edge_cases():
    assert sequence_pair("reverse", ["x", "y"]) == Pair(("x", "y"), ("y", "x"), (1, 0))
    assert sequence_pair("sort", ()) == Pair((), (), ())
    assert sequence_pair("sort", ("q",)) == Pair(("q",), ("q",), (0,))


@given(st.sampled_from(TASKS), st.lists(st.sampled_from("abcde"), max_size=12).map(tuple))
def test_alignment_points_at_the_source_symbol_of_every_output_symbol(task, source):
    pair = sequence_pair(task, source)
    assert pair.source == source and len(pair.target) == len(source)
    assert sorted(pair.alignment) == list(range(len(source)))  # a permutation: every symbol used once
    assert all(source[i] == t for i, t in zip(pair.alignment, pair.target, strict=True))
    expected = {"copy": source, "reverse": source[::-1], "sort": tuple(sorted(source))}[task]
    assert pair.target == expected
    if task == "sort":  # stable: among equal symbols, the alignment increases
        for a, b, i, j in zip(pair.target, pair.target[1:], pair.alignment, pair.alignment[1:], strict=False):
            assert a < b or (a == b and i < j)


@pytest.mark.parametrize("task", ["Copy", "shuffle", "", None])
def test_sequence_pair_rejects_unknown_tasks(task):
    with pytest.raises(ValueError, match=r"task must be one of \('copy', 'reverse', 'sort'\)"):
        sequence_pair(task, ("a",))


# ---------------------------------------------------------------- make_sequence_corpus


@pytest.mark.parametrize("task", TASKS)
def test_corpus_contents(task):
    corpus = make_sequence_corpus(task, n_train=300, n_test=40, num_symbols=5, min_len=3, max_len=6, seed=1)
    assert len(corpus.train) == 300 and len(corpus.test) == 40
    train_sources = {p.source for p in corpus.train}
    test_sources = [p.source for p in corpus.test]
    assert not train_sources & set(test_sources)  # held-out strings never occur in training
    assert len(set(test_sources)) == 40  # nor twice among themselves
    for pair in corpus.train + corpus.test:
        assert 3 <= len(pair.source) <= 6
        assert set(pair.source) <= set("abcde")
        assert pair == sequence_pair(task, pair.source)
    lengths = {len(p.source) for p in corpus.train}
    assert lengths == {3, 4, 5, 6}  # both bounds are drawn
    assert corpus.source_vocab is corpus.target_vocab  # one shared vocabulary
    assert corpus.source_vocab.tokens[4:] == list("abcde")
    batch = encode_batch(corpus.test, corpus.source_vocab, corpus.target_vocab)
    assert not (batch.source == corpus.source_vocab.unk).any()


def test_corpus_is_deterministic_by_seed():
    def make(seed):
        return make_sequence_corpus("sort", n_train=200, n_test=30, num_symbols=4, min_len=2, max_len=7, seed=seed)

    a, b, c = make(3), make(3), make(4)
    assert a.train == b.train and a.test == b.test
    assert a.train != c.train and a.test != c.test


def test_corpus_defaults():
    corpus = make_sequence_corpus("copy", n_train=100, n_test=10)
    assert len(corpus.source_vocab) == 4 + 10
    assert all(3 <= len(p.source) <= 10 for p in corpus.train + corpus.test)
    assert corpus.train == make_sequence_corpus("copy", n_train=100, n_test=10, seed=0).train


def test_fixed_length_and_a_single_symbol():
    corpus = make_sequence_corpus("reverse", n_train=1, n_test=1, num_symbols=1, min_len=1, max_len=2, seed=0)
    assert {p.source for p in corpus.train} | {p.source for p in corpus.test} == {("a",), ("a", "a")}
    full = make_sequence_corpus("copy", n_train=50, n_test=3, num_symbols=26, min_len=4, max_len=4, seed=2)
    assert all(len(p.source) == 4 for p in full.train + full.test)
    assert len(full.source_vocab) == 4 + len(SYMBOLS)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"task": "shuffle"}, r"task must be one of \('copy', 'reverse', 'sort'\), got 'shuffle'"),
        ({"n_train": 0}, "n_train must be a positive int, got 0"),
        ({"n_test": -1}, "n_test must be a positive int, got -1"),
        ({"n_test": 2.0}, "n_test must be a positive int, got 2.0"),
        ({"n_train": True}, "n_train must be a positive int, got True"),
        ({"num_symbols": 0}, "num_symbols must be a positive int, got 0"),
        ({"num_symbols": 27}, r"num_symbols must be in \[1, 26\], got 27"),
        ({"min_len": 0}, "min_len must be a positive int, got 0"),
        ({"max_len": 0}, "max_len must be a positive int, got 0"),
        ({"min_len": 5, "max_len": 4}, "min_len=5 must be <= max_len=4"),
        # 1 symbol, length 2: the only string is in training, nothing is left to hold out.
        ({"num_symbols": 1, "min_len": 2, "max_len": 2}, "found only 0 held-out strings"),
        ({"num_symbols": 2, "min_len": 1, "max_len": 1, "n_test": 3}, "found only 0 held-out strings"),
    ],
)
def test_make_sequence_corpus_rejects_bad_arguments(kwargs, message):
    args = {"task": "copy", "n_train": 20, "n_test": 5, "num_symbols": 4, "min_len": 2, "max_len": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        make_sequence_corpus(**args)


def test_delayed_copy_labels_each_position_with_the_symbol_delay_back():
    import torch

    from attn.data.sequences import delayed_copy

    inputs, labels = delayed_copy(5, 12, 4, num_symbols=6, seed=3)
    assert inputs.shape == labels.shape == (5, 12)
    assert (labels[:, :4] == -100).all() and torch.equal(labels[:, 4:], inputs[:, :-4])
    assert inputs.min() >= 1 and inputs.max() <= 6
    assert torch.equal(delayed_copy(5, 12, 4, num_symbols=6, seed=3)[0], inputs)
    with pytest.raises(ValueError, match="delay must be < length=4, got 4"):
        delayed_copy(2, 4, 4)


# ---------------------------------------------------------------- repeated_sequences


@given(st.integers(0, 2**16), st.integers(2, 30), st.integers(1, 40), st.data())
def test_repeated_sequences_repeat_a_segment_with_its_period(seed, length, num_symbols, data):
    low = data.draw(st.integers(1, length - 1))
    high = data.draw(st.integers(low, length - 1))
    tokens, periods = repeated_sequences(7, length, num_symbols, (low, high), seed)
    assert tokens.shape == (7, length) and periods.shape == (7,) and tokens.dtype == torch.long
    assert tokens.min() >= 1 and tokens.max() <= num_symbols
    assert ((periods >= low) & (periods <= high)).all()
    for row, p in zip(tokens.tolist(), periods.tolist(), strict=True):
        segment = row[:p]
        assert row == (segment * (length // p + 1))[:length]


def test_repeated_sequences_are_seeded_and_draw_every_period():
    tokens, periods = repeated_sequences(500, 24, 32, (4, 12), seed=1)
    assert set(periods.tolist()) == set(range(4, 13))
    again, same_periods = repeated_sequences(500, 24, 32, (4, 12), seed=1)
    assert torch.equal(tokens, again) and torch.equal(periods, same_periods)
    assert not torch.equal(repeated_sequences(500, 24, 32, (4, 12), seed=2)[0], tokens)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"periods": (6, 4)}, r"periods must satisfy 1 <= low <= high < length=10, got \(6, 4\)"),
        ({"periods": (4, 10)}, r"periods must satisfy 1 <= low <= high < length=10, got \(4, 10\)"),
        ({"periods": (0, 4)}, r"periods\[0\] must be a positive int, got 0"),
        ({"n": 0}, "n must be a positive int, got 0"),
        ({"num_symbols": 0}, "num_symbols must be a positive int, got 0"),
    ],
)
def test_repeated_sequences_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        repeated_sequences(**{"n": 3, "length": 10, **kwargs})
