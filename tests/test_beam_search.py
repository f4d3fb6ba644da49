"""Beam search for the Transformer: beam 1 is greedy decoding, wider beams find likelier translations, an
exhaustive beam finds the exact best sequence (checked against a brute-force search), bad arguments say so."""

import itertools
import math
from types import SimpleNamespace

import pytest
import torch

from attn.data import make_corpus
from attn.training import seeded
from attn.transformer import Transformer, TransformerConfig
from attn.transformer.translate import beam_search, length_penalty_of, translate

BOS, EOS = 1, 2
# A padded batch of source sentences (pad = 0).
SOURCE = torch.tensor(
    [[4, 5, 6, 7, 8], [3, 10, 4, 0, 0], [7, 9, 0, 0, 0], [10, 9, 8, 7, 6], [5, 5, 5, 3, 0], [8, 0, 0, 0, 0]]
)


def random_transformer(seed=0, norm_first=False, positions="sinusoidal", sharpen=4.0) -> Transformer:
    """A small random-initialised model; ``sharpen`` scales the output layer so that the next-word distributions
    are peaked enough for greedy and beam search to disagree."""
    config = TransformerConfig(11, 13, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=16,
                               positions=positions, norm_first=norm_first)  # fmt: skip
    with seeded(seed):
        model = Transformer(config)
    with torch.no_grad():
        model.out.weight.mul_(sharpen)
    return model.eval()


def teacher_forced_log_prob(model: Transformer, source: torch.Tensor, tokens: torch.Tensor, eos: int) -> torch.Tensor:
    """Σ_t log p(y_t | y_<t, x) of each row of ``tokens (B, L)`` up to and with its first ``eos`` (all L words if
    it has none), read in one teacher-forced forward pass: ``(B,)``."""
    decoder_in = torch.cat([torch.full((len(tokens), 1), BOS), tokens[:, :-1]], dim=1)  # (B, L)
    with torch.no_grad():
        log_p = model(source, decoder_in).logits.log_softmax(-1)  # (B, L, V)
    totals = []
    for b, row in enumerate(tokens.tolist()):
        n = row.index(eos) + 1 if eos in row else len(row)
        totals.append(sum(float(log_p[b, t, row[t]]) for t in range(n)))
    return torch.tensor(totals)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_beam_of_one_is_greedy_decoding(norm_first, positions):
    for seed in range(3):
        model = random_transformer(seed, norm_first, positions)
        for eos in (EOS, 5, 9):  # different eos ids end different sentences at different steps
            greedy = model.greedy_decode(SOURCE, BOS, eos, max_len=10)
            searched = beam_search(model, SOURCE, BOS, eos, beam=1, max_len=10)
            assert torch.equal(searched.tokens, greedy)
            assert torch.equal(searched.beams[:, 0], greedy) and searched.beams.shape[1] == 1
            expected = teacher_forced_log_prob(model, SOURCE, greedy, eos)
            torch.testing.assert_close(searched.log_prob, expected, atol=1e-4, rtol=0)


def test_translate_with_a_beam_of_one_is_todays_greedy_translate():
    corpus = make_corpus(200, 20, seed=0)
    config = TransformerConfig(len(corpus.source_vocab), len(corpus.target_vocab), d_model=16, num_heads=2,
                               num_layers=1, d_ff=32, dropout=0.0)  # fmt: skip
    with seeded(0):
        model = Transformer(config).eval()
    vocabs = (corpus.source_vocab, corpus.target_vocab)
    for pair in corpus.test[:5]:
        sentence = " ".join(pair.source)
        greedy = translate(model, sentence, *vocabs)
        again = translate(model, sentence, *vocabs, beam=1)
        assert (again.target, again.finished, again.unknown) == (greedy.target, greedy.finished, greedy.unknown)
        assert torch.equal(again.alignment, greedy.alignment)
        searched = translate(model, sentence, *vocabs, beam=3, length_penalty=0.6)
        assert searched.source == greedy.source and searched.alignment.shape[1] == len(pair.source) + 1
    with pytest.raises(ValueError, match="beam must be a positive int, got 0"):
        translate(model, "the dog sees the cat", *vocabs, beam=0)
    with pytest.raises(ValueError, match="length_penalty must be a finite number >= 0, got -1"):
        translate(model, "the dog sees the cat", *vocabs, length_penalty=-1)


def test_a_wider_beam_is_likelier_than_greedy_on_nearly_every_sentence():
    """Beam search does not promise to beat greedy decoding: greedy's prefix can fall out of the beam, behind
    hypotheses that all end worse (a hand-built case below). On small random models it is rare: measured."""
    worse, gain, n = 0, 0.0, 0
    for seed, norm_first, eos in itertools.product(range(10), (False, True), (EOS, 9)):
        model = random_transformer(seed, norm_first)
        greedy = model.greedy_decode(SOURCE, BOS, eos, max_len=10)
        greedy_log_prob = teacher_forced_log_prob(model, SOURCE, greedy, eos)
        searched = beam_search(model, SOURCE, BOS, eos, beam=4, max_len=10)
        scored = teacher_forced_log_prob(model, SOURCE, searched.tokens, eos)  # computed independently
        torch.testing.assert_close(searched.log_prob, scored, atol=1e-4, rtol=0)
        torch.testing.assert_close(searched.score, searched.log_prob)  # no length penalty: the score itself
        assert (searched.beam_scores[:, :-1] >= searched.beam_scores[:, 1:]).all()  # best first
        worse += int((scored < greedy_log_prob - 1e-4).sum())
        gain += float((scored - greedy_log_prob).sum())
        n += len(SOURCE)
    assert n == 240 and worse <= 0.03 * n and gain / n > 0.5, (worse, gain / n)  # measured: 3 of 240, +1.1 nats


def test_hypotheses_end_at_eos_and_the_search_stops_when_beam_of_them_have_ended():
    model = random_transformer(1)
    decode, calls = model.decode, []

    def counted(target, memory, source, need_weights=True):
        calls.append(target.shape)
        return decode(target, memory, source, need_weights)

    model.decode = counted
    searched = beam_search(model, SOURCE, BOS, EOS, beam=3, max_len=12)
    # one decoder call per step, for the 3 hypotheses of each sentence not yet done (all 6 at first)
    rows = [shape[0] for shape in calls]
    assert [shape[1] for shape in calls] == list(range(1, len(calls) + 1)) and len(calls) <= 12
    assert rows[0] == 6 * 3 and all(r % 3 == 0 for r in rows) and rows == sorted(rows, reverse=True)
    ends = []
    for row in searched.beams.flatten(0, 1).tolist():
        assert EOS in row or len(row) == 12  # ended, or cut by max_len
        n = row.index(EOS) + 1 if EOS in row else len(row)
        assert all(token == model.config.pad for token in row[n:])  # padding after <eos>
        ends.append(n)
    assert max(ends) == searched.beams.shape[2]
    assert searched.tokens.dtype == torch.long and searched.tokens.shape[1] <= 12


# ---------------------------------------------------------------- a model whose next-word logits we set


def table_model(table: dict[tuple[int, ...], torch.Tensor], V: int) -> Transformer:
    """A Transformer whose decoder returns ``table[prefix]`` as the logits after the words ``prefix`` (the
    ``<bos>`` left out) for every sentence, whatever the source: a language we choose by hand."""
    config = TransformerConfig(6, V, d_model=8, num_heads=2, num_layers=1, d_ff=8, dropout=0.0, max_len=8)
    with seeded(0):
        model = Transformer(config).eval()

    def decode(target, memory, source, need_weights=True):
        logits = torch.zeros(*target.shape, V)  # (B, t, V): only the last position is read
        for b, row in enumerate(target.tolist()):
            logits[b, -1] = table[tuple(row[1:])]
        return SimpleNamespace(logits=logits)

    model.decode = decode
    return model


def log_probs(p: list[float]) -> torch.Tensor:
    return torch.tensor(p).log()


def test_beam_search_finds_the_best_sentence_that_greedy_misses():
    # Words: 0 <pad>, 1 <bos>, 2 <eos>, 3 "a", 4 "b". Greedy takes "a" (0.6), after which nothing is likely
    # (at most 0.36); "b" (0.4) is followed by <eos> with 0.95: p(b <eos>) = 0.38 > p(a ...) <= 0.216.
    table = {
        (): log_probs([0.0, 0.0, 0.0, 0.6, 0.4]),
        (3,): log_probs([0.0, 0.0, 0.3, 0.36, 0.34]),
        (4,): log_probs([0.0, 0.0, 0.95, 0.03, 0.02]),
    }
    for prefix in itertools.product((3, 4), repeat=2):
        table[prefix] = log_probs([0.0, 0.0, 0.5, 0.25, 0.25])
    model = table_model(table, 5)
    source = torch.tensor([[3, 4]])
    assert model.greedy_decode(source, BOS, EOS, max_len=3).tolist() == [[3, 3, 2]]  # p = 0.6 · 0.36 · 0.5
    # Done after 3 steps, when two hypotheses have ended, long before max_len (the table knows no 3-word prefix).
    searched = beam_search(model, source, BOS, EOS, beam=2, max_len=8)
    assert searched.tokens.tolist() == [[4, 2]]
    assert searched.log_prob.item() == pytest.approx(math.log(0.4 * 0.95))
    assert searched.beams[0, 1].tolist() == [3, 3, 2]  # the runner-up: greedy's, 0.108
    assert searched.beam_scores[0, 1].item() == pytest.approx(math.log(0.6 * 0.36 * 0.5))


def test_beam_search_can_lose_to_greedy():
    # Greedy: "a" (0.4), "a" (0.45), <eos> (0.9): p = 0.162. A beam of two keeps "a" and "b" (0.38), then the
    # two extensions of "b" (0.19 each) push out "a a" (0.18), and everything after "b" is unlikely.
    table = {(): log_probs([0.0, 0.0, 0.0, 0.4, 0.38, 0.22])}
    table[(3,)] = log_probs([0.0, 0.0, 0.1, 0.45, 0.225, 0.225])
    table[(4,)] = log_probs([0.0, 0.0, 0.0, 0.0, 0.5, 0.5])
    table[(5,)] = log_probs([0.0, 0.0, 0.1, 0.3, 0.3, 0.3])
    for prefix in itertools.product(range(6), repeat=2):
        table[prefix] = log_probs([0.0, 0.0, 0.1, 0.3, 0.3, 0.3])
    table[(3, 3)] = log_probs([0.0, 0.0, 0.9, 0.04, 0.03, 0.03])
    model = table_model(table, 6)
    source = torch.tensor([[3, 4]])
    assert model.greedy_decode(source, BOS, EOS, max_len=3).tolist() == [[3, 3, 2]]
    searched = beam_search(model, source, BOS, EOS, beam=2, max_len=3)
    assert searched.tokens[0, :2].tolist() in ([4, 4], [4, 5])  # cut at max_len: p = 0.38 · 0.5 · 0.3
    assert searched.log_prob.item() == pytest.approx(math.log(0.38 * 0.5 * 0.3))  # 0.057 < 0.162
    wider = beam_search(model, source, BOS, EOS, beam=3, max_len=3)  # keeps "a a": finds greedy's sentence
    assert wider.tokens.tolist() == [[3, 3, 2]]


def brute_force(table: dict[tuple[int, ...], torch.Tensor], V: int, max_len: int, alpha: float):
    """Every sentence of at most ``max_len`` words (ended by ``<eos>``, or cut at ``max_len``), scored by
    ``log p / lp``: the best sentence and its score."""
    best, best_score = None, -math.inf
    for n in range(1, max_len + 1):
        for words in itertools.product(range(V), repeat=n):
            if EOS in words[:-1] or (n < max_len and words[-1] != EOS):
                continue
            log_p = sum(float(table[words[:t]].log_softmax(-1)[words[t]]) for t in range(n))
            score = log_p / float(length_penalty_of(torch.tensor(float(n)), alpha))
            if score > best_score:
                best, best_score = list(words), score
    return best, best_score


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_an_exhaustive_beam_finds_the_exact_best_sequence(alpha):
    """Random next-word logits over 4 words for every prefix; a beam of 4³ = 64, as many as all sentences of
    3 words, prunes nothing, so it must return the best of all sentences of length <= 3, found by brute force."""
    V, max_len, misses = 4, 3, 0
    for seed in range(12):
        g = torch.Generator().manual_seed(seed)
        table = {p: torch.randn(V, generator=g) for n in range(max_len) for p in itertools.product(range(V), repeat=n)}
        model = table_model(table, V)
        source = torch.tensor([[3, 4, 5], [5, 0, 0]])  # two sentences, the same table: the same answer
        best, best_score = brute_force(table, V, max_len, alpha)
        searched = beam_search(model, source, BOS, EOS, beam=V**max_len, max_len=max_len, length_penalty=alpha)
        for b in range(2):
            row = searched.tokens[b].tolist()
            assert row[: len(best)] == best and all(t == 0 for t in row[len(best) :]), (seed, row, best)
            assert searched.score[b].item() == pytest.approx(best_score, abs=1e-5)
        greedy = model.greedy_decode(source, BOS, EOS, max_len)[0].tolist()
        misses += greedy[: len(best)] != best
    assert misses >= 2  # greedy misses the best sentence of 6, 6 and 2 of these tables; the beam never does


def test_length_penalty_is_gnmts():
    lengths = torch.tensor([1.0, 5.0, 10.0])
    torch.testing.assert_close(length_penalty_of(lengths, 0.6), ((5 + lengths) / 6) ** 0.6)
    assert torch.equal(length_penalty_of(lengths, 0.0), torch.ones(3))


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"beam": 0}, "beam must be a positive int, got 0"),
        ({"beam": -2}, "beam must be a positive int, got -2"),
        ({"beam": 2.5}, "beam must be a positive int, got 2.5"),
        ({"beam": True}, "beam must be a positive int, got True"),
        ({"length_penalty": -0.1}, "length_penalty must be a finite number >= 0, got -0.1"),
        ({"length_penalty": float("nan")}, "length_penalty must be a finite number >= 0, got nan"),
        ({"length_penalty": float("inf")}, "length_penalty must be a finite number >= 0, got inf"),
        ({"length_penalty": "0.6"}, "length_penalty must be a finite number >= 0, got '0.6'"),
        ({"max_len": 0}, "max_len must be a positive int, got 0"),
        ({"max_len": 17}, r"max_len=17 is longer than the model's positional table \(max_len=16\)"),
        ({"bos": 13}, "bos must be a target token id below 13, got 13"),
        ({"eos": -1}, "eos must be a target token id below 13, got -1"),
    ],
)
def test_beam_search_rejects_bad_arguments(kwargs, message):
    model = random_transformer()
    args = {"bos": BOS, "eos": EOS, **kwargs}
    with pytest.raises(ValueError, match=message):
        beam_search(model, SOURCE, **args)


def test_beam_search_rejects_a_bad_source_and_leaves_the_model_mode_as_it_was():
    model = random_transformer()
    with pytest.raises(ValueError, match="source must be a"):
        beam_search(model, SOURCE.float(), BOS, EOS)
    with pytest.raises(ValueError, match=r"source holds ids in \[3, 11\] but the vocabulary has 11"):
        beam_search(model, torch.tensor([[11, 3]]), BOS, EOS)
    model.train()
    beam_search(model, SOURCE, BOS, EOS, beam=2, max_len=4)
    assert model.training
