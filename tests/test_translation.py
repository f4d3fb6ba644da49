"""The toy English -> German corpus: its sentences, its true alignments, batches and scores, and the parser that
reads its English back (parse_english)."""

import numpy as np
import pytest
import torch

from attn.data import Vocab, make_corpus, translation
from attn.data.translation import (
    LEXICON,
    NUMBER,
    NounPhrase,
    Pair,
    Sentence,
    accuracy_by_length,
    alignment_mass,
    alignment_matrix,
    encode_batch,
    exact_match,
    parse_english,
    render,
    sample_sentence,
)


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(3000, 300, seed=1)


@pytest.mark.parametrize(
    ("sentence", "english", "german"),
    [
        (Sentence(NounPhrase(0), 0, NounPhrase(1)), "the dog sees the cat", "der hund sieht die katze"),
        (Sentence(NounPhrase(1), 0, NounPhrase(0, (0,))), "the cat sees the big dog",
         "die katze sieht den großen hund"),
        (
            Sentence(NounPhrase(0, (0,)), 1, NounPhrase(2), intro=0),
            "i know that the big dog likes the child",
            "ich weiß dass der große hund das kind mag",
        ),
        (
            Sentence(NounPhrase(0, (4,), number=21), 2, NounPhrase(1, (), number=0), intro=1),
            "she says that twenty one black dogs hear the cats",
            "sie sagt dass ein und zwanzig schwarze hunde die katzen hören",
        ),
        (
            Sentence(NounPhrase(3, (2, 1), number=0), 3, NounPhrase(5, (3,), number=30)),
            "the old small men find thirty young horses",
            "die alten kleinen männer finden dreißig junge pferde",
        ),
        (Sentence(NounPhrase(4, (), number=7), 0, NounPhrase(4, (5,))), "seven women see the red woman",
         "sieben frauen sehen die rote frau"),
    ],
)  # fmt: skip
def test_render_translates_the_grammar(sentence, english, german):
    pair = render(sentence)
    assert " ".join(pair.source) == english
    assert " ".join(pair.target) == german


def test_render_gives_crossing_alignments_for_verb_final_clauses_and_numbers():
    pair = render(Sentence(NounPhrase(0, (), number=21), 0, NounPhrase(1), intro=0))
    # i know that twenty one dogs see the cat -> ich weiß dass ein und zwanzig hunde die katze sehen
    assert pair.alignment == (0, 1, 2, 4, None, 3, 5, 7, 8, 6)
    crossing = [(t, s) for t, s in enumerate(pair.alignment) if s is not None]
    assert any(s1 > s2 for (t1, s1), (t2, s2) in zip(crossing, crossing[1:], strict=False))


@pytest.mark.parametrize(("number", "english", "german"), [
    (2, "two", "zwei"), (10, "ten", "zehn"), (15, "fifteen", "fünfzehn"), (19, "nineteen", "neunzehn"),
    (20, "twenty", "zwanzig"), (34, "thirty four", "vier und dreißig"), (59, "fifty nine", "neun und fünfzig"),
])  # fmt: skip
def test_every_number_from_2_to_59_has_its_own_words(number, english, german):
    pair = render(Sentence(NounPhrase(0, (), number=number), 0, NounPhrase(1)))
    assert " ".join(pair.source).startswith(english + " dogs see")
    assert " ".join(pair.target).startswith(german + " hunde sehen")
    numbers = {" ".join(render(Sentence(NounPhrase(0, (), n), 0, NounPhrase(1))).source[:-4]) for n in range(2, 60)}
    assert len(numbers) == 58  # no two numbers read the same


def test_render_rejects_a_number_outside_the_grammar():
    with pytest.raises(ValueError, match="number must be None, 0 or in 2..59, got 61"):
        render(Sentence(NounPhrase(0, (), number=61), 0, NounPhrase(1)))


def test_pair_checks_its_alignment_length():
    with pytest.raises(ValueError, match="alignment has 1 entries for 2 target words"):
        Pair(("a",), ("b", "c"), (0,))


def test_every_true_alignment_links_a_word_to_its_translation(corpus):
    for pair in corpus.train + corpus.test:
        assert len(pair.alignment) == len(pair.target)
        for t, s in enumerate(pair.alignment):
            if s is None:
                assert pair.target[t] == "und"
            else:
                assert pair.target[t] in LEXICON[pair.source[s]], (pair, t, s)
        # every source word is translated by exactly one target word
        assert sorted(s for s in pair.alignment if s is not None) == list(range(len(pair.source)))


def test_corpus_is_deterministic_and_held_out_sentences_are_new(corpus):
    again = make_corpus(3000, 300, seed=1)
    assert again.train == corpus.train and again.test == corpus.test
    assert make_corpus(3000, 300, seed=2).train != corpus.train
    assert len(corpus.test) == 300
    assert not {p.source for p in corpus.test} & {p.source for p in corpus.train}
    subordinate = sum(p.source[2] == "that" for p in corpus.train) / len(corpus.train)
    assert 0.4 < subordinate < 0.6
    every_word = {w for p in corpus.train for w in p.source}
    assert every_word <= set(corpus.source_vocab.tokens)


def test_corpus_checks_its_probability_and_says_when_it_runs_out_of_new_sentences(monkeypatch):
    with pytest.raises(ValueError, match="subordinate must be a probability in"):
        make_corpus(10, 10, subordinate=1.5)
    fixed = Sentence(NounPhrase(0), 0, NounPhrase(1))
    monkeypatch.setattr(translation, "sample_sentence", lambda rng, subordinate: fixed)
    with pytest.raises(ValueError, match="found only 0 held-out sentences unlike the training ones"):
        make_corpus(10, 5)


@pytest.mark.parametrize("n_train", [0, -1, 2.5, True])
def test_corpus_sizes_must_be_positive_ints(n_train):
    with pytest.raises(ValueError, match="n_train must be a positive int"):
        make_corpus(n_train, 10)


def test_vocab_maps_unknown_words_and_decodes_to_eos():
    vocab = Vocab(["b", "a", "b"])
    assert vocab.tokens == ["<pad>", "<bos>", "<eos>", "<unk>", "b", "a"]
    assert vocab.encode(["a", "zebra"], eos=True) == [5, vocab.unk, vocab.eos]
    assert vocab.decode([vocab.bos, 4, 5, vocab.eos, 4]) == ["b", "a"]
    assert "a" in vocab and "zebra" not in vocab
    with pytest.raises(ValueError, match="id 9 is outside the vocabulary of 6 tokens"):
        vocab.decode([9])


def test_encode_batch_pads_and_shifts(corpus):
    pairs = corpus.test[:5]
    batch = encode_batch(pairs, corpus.source_vocab, corpus.target_vocab)
    S = max(len(p.source) for p in pairs) + 1
    T = max(len(p.target) for p in pairs) + 1
    assert batch.source.shape == (5, S) and batch.target_in.shape == batch.target_out.shape == (5, T)
    for i, pair in enumerate(pairs):
        n = len(pair.source) + 1
        assert batch.source_lengths[i] == n
        assert corpus.source_vocab.decode(batch.source[i]) == list(pair.source)
        assert batch.source[i, n - 1] == corpus.source_vocab.eos and (batch.source[i, n:] == 0).all()
        assert batch.target_in[i, 0] == corpus.target_vocab.bos
        assert torch.equal(batch.target_in[i, 1 : len(pair.target) + 1], batch.target_out[i, : len(pair.target)])
    with pytest.raises(ValueError, match="pairs is empty"):
        encode_batch([], corpus.source_vocab, corpus.target_vocab)


def test_scores_are_one_for_a_perfect_model_and_less_otherwise(corpus):
    pairs = corpus.test[:10]
    assert exact_match([p.target for p in pairs], pairs) == 1.0
    assert exact_match([p.target[:-1] for p in pairs[:5]] + [p.target for p in pairs[5:]], pairs) == 0.5
    truth = [alignment_matrix(p) for p in pairs]
    assert alignment_mass(truth, pairs) == 1.0
    uniform = [torch.full((len(p.target) + 1, len(p.source) + 1), 1 / (len(p.source) + 1)) for p in pairs]
    assert alignment_mass(uniform, pairs) < 0.2
    with pytest.raises(ValueError, match="need one prediction per pair"):
        exact_match([], pairs)
    with pytest.raises(ValueError, match="too small"):
        alignment_mass([torch.ones(1, 1)] * len(pairs), pairs)


def test_accuracy_by_length_counts_each_length(corpus):
    pairs = corpus.test[:40]
    predictions = [p.target if i % 2 else () for i, p in enumerate(pairs)]
    table = accuracy_by_length(predictions, pairs)
    assert list(table) == sorted({len(p.source) for p in pairs})
    assert sum(n for _, n in table.values()) == 40
    assert sum(acc * n for acc, n in table.values()) == 20
    with pytest.raises(ValueError, match="need one prediction per pair"):
        accuracy_by_length(predictions[:3], pairs)


# ---------------------------------------------------------------- parse_english


def test_every_generated_sentence_parses_back_to_itself():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        sentence = sample_sentence(rng)
        words = render(sentence).source
        parsed = parse_english(words)
        assert parsed == sentence, words
        assert render(parsed).source == words


@pytest.mark.parametrize(
    "text",
    [
        "the dogs sees the cat",  # plural subject, singular verb
        "the dog see the cat",  # and the other way round
        "twenty one big dog like the cat",  # a count with a singular noun
        "two dogs sees the cat",
        "the big big dog sees the cat",  # a repeated adjective
        "the dog sees the old red old cat",
        "the dog sees the cat today",  # a trailing word
        "the dog sees the cat the",
        "one dog sees the cat",  # "one" is not a count the grammar writes
        "the dog sees",  # no object
        "dog sees the cat",  # no article
        "the dog the cat sees",
        "i know that",
        "i know the dog sees the cat",
        "",
    ],
)
def test_ungrammatical_english_does_not_parse(text):
    assert parse_english(text.split()) is None


def test_parse_english_reads_numbers_and_intros():
    parsed = parse_english(["we", "think", "that", "twenty", "dogs", "like", "fifteen", "small", "cats"])
    assert parsed is not None and parsed.intro == 2 and parsed.subject.number == 20 and parsed.object.number == 15
    assert parse_english(["the", "dogs", "see", "forty", "two", "horses"]).object.number == 42
    assert parse_english(("the", "dogs", "see", "the", "horses")).object.number == 0  # any sequence of words
    assert NUMBER["dog"] == NUMBER["sees"] == "singular" and NUMBER["dogs"] == NUMBER["see"] == "plural"
    assert NUMBER["children"] == "plural" and "the" not in NUMBER


def test_parse_english_refuses_a_string():
    with pytest.raises(ValueError, match="words must be a list of words, not a string"):
        parse_english("the dog sees the cat")
