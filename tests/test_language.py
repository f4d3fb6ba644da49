"""Tiny language models: the text corpus and BERT's masking, the English parser, repeated strings, the training
objectives and losses, filling in blanks, sampling with a temperature, attention-only layers and the panels."""

import math
from functools import partial

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from panel_utils import shown  # noqa: E402
from torch_reference import close, randn  # noqa: E402

from attn.blocks import EncoderLayer  # noqa: E402
from attn.data.language import MASK, encode_sentences, make_text_corpus, mask_tokens  # noqa: E402
from attn.data.sequences import IGNORE, repeated_sequences  # noqa: E402
from attn.data.translation import NUMBER, make_corpus, parse_english, render, sample_sentence  # noqa: E402
from attn.data.vocab import Vocab  # noqa: E402
from attn.training import seeded  # noqa: E402
from attn.transformer import (  # noqa: E402
    OBJECTIVES,
    LanguageModel,
    LanguageModelConfig,
    TransformerConfig,
    fill_in,
    language_model_batch,
    language_model_loss,
    token_losses,
    train_language_model,
)
from attn.transformer.translate import sample_sentences  # noqa: E402
from attn.viz.widgets import head_panel, sampling_panel  # noqa: E402

N_TRAIN, N_TEST = 300, 40


@pytest.fixture(scope="module")
def corpus():
    return make_text_corpus(N_TRAIN, N_TEST, seed=0)


def tiny_lm(vocab_size, causal=True, seed=0, **kw):
    args = {"d_model": 16, "num_heads": 2, "num_layers": 1, "d_ff": 32, "dropout": 0.0, "max_len": 24, **kw}
    with seeded(seed):
        return LanguageModel(LanguageModelConfig(vocab_size, causal=causal, **args)).eval()


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


# ---------------------------------------------------------------- language_model_batch and token_losses

SENTENCES = torch.tensor([[1, 5, 6, 7, 2, 0], [1, 8, 2, 0, 0, 0], [1, 0, 0, 0, 0, 0]])


def test_next_token_batch_shifts_by_one():
    inputs, labels = language_model_batch(SENTENCES, "next")
    assert torch.equal(inputs, SENTENCES[:, :-1])
    assert labels.tolist() == [[5, 6, 7, 2, IGNORE], [8, 2, IGNORE, IGNORE, IGNORE], [IGNORE] * 5]


def test_one_position_batch_scores_one_real_position_per_sentence():
    seen = set()
    for seed in range(40):
        inputs, labels = language_model_batch(SENTENCES, "one", generator=torch.Generator().manual_seed(seed))
        assert torch.equal(inputs, SENTENCES[:, :-1])
        scored = labels != IGNORE
        assert scored.sum(1).tolist() == [1, 1, 0]  # the last sentence has nothing to predict
        _, next_labels = language_model_batch(SENTENCES, "next")
        assert torch.equal(labels[scored], next_labels[scored])
        seen.add(int(scored[0].nonzero()))
    assert seen == {0, 1, 2, 3}  # every real position of the first sentence gets drawn


def test_masked_batch_is_bert_masking():
    g = torch.Generator().manual_seed(4)
    inputs, labels = language_model_batch(SENTENCES, "masked", mask=9, vocab_size=10, generator=g)
    expected = mask_tokens(SENTENCES, 9, 10, generator=torch.Generator().manual_seed(4))
    assert torch.equal(inputs, expected[0]) and torch.equal(labels, expected[1])
    assert inputs.shape == SENTENCES.shape  # nothing shifted
    for kwargs in ({}, {"mask": 9}, {"vocab_size": 10}):
        with pytest.raises(ValueError, match="the masked objective needs the id of the mask token and the vocab"):
            language_model_batch(SENTENCES, "masked", **kwargs)


@pytest.mark.parametrize("objective", ["prev", "Next", "", None])
def test_unknown_objective(objective):
    assert OBJECTIVES == ("next", "one", "masked")
    with pytest.raises(ValueError, match=r"objective must be one of \('next', 'one', 'masked'\), got"):
        language_model_batch(SENTENCES, objective)


def test_token_losses_are_each_predictions_cross_entropy(corpus):
    model = tiny_lm(len(corpus.vocab), seed=1)
    tokens = corpus.test[:6]
    losses = token_losses(model, tokens)
    assert losses.shape == (6, tokens.shape[1] - 1)
    with torch.no_grad():
        log_p = model(tokens[:, :-1]).logits.log_softmax(-1)
    for n in range(6):
        for t in range(tokens.shape[1] - 1):
            target = int(tokens[n, t + 1])
            expected = 0.0 if target == 0 else -float(log_p[n, t, target])
            assert math.isclose(float(losses[n, t]), expected, rel_tol=1e-5, abs_tol=1e-6)
    assert (losses[tokens[:, 1:] == 0] == 0).all() and (losses[tokens[:, 1:] != 0] > 0).all()


# ---------------------------------------------------------------- train_language_model


def test_a_tiny_causal_model_learns_the_next_word(corpus):
    model = tiny_lm(len(corpus.vocab), seed=0)
    valid = corpus.test
    before = token_losses(model, valid)[valid[:, 1:] != 0].mean()
    _, history = train_language_model(model, corpus.train, "next", 60, batch_size=32, lr=1e-2, every=30,
                                      valid=valid, progress=False)  # fmt: skip
    assert len(history.loss) == 60 and [c["step"] for c in history.checkpoints] == [30, 60]
    last = history.checkpoints[-1]
    assert last["token_loss"].shape == (N_TEST, valid.shape[1] - 1)
    assert math.isclose(last["next_loss"], float(last["token_loss"][valid[:, 1:] != 0].mean()), rel_tol=1e-5)
    assert last["next_loss"] < 0.7 * float(before), (float(before), last["next_loss"])
    assert "masked_loss" not in last


def test_a_builder_trains_the_model_a_module_built_under_the_seed_would_be(corpus):
    config = LanguageModelConfig(len(corpus.vocab), d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0,
                                 max_len=24)  # fmt: skip
    kwargs = dict(batch_size=16, every=10, valid=corpus.test, seed=3, progress=False)
    model, history = train_language_model(partial(LanguageModel, config), corpus.train, "next", 20, **kwargs)
    with seeded(3):
        here = LanguageModel(config)
    _, here_history = train_language_model(here, corpus.train, "next", 20, **kwargs)
    assert history.loss == here_history.loss
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), here.state_dict().values(), strict=True))
    with pytest.raises(ValueError, match="model must be a module or a function that builds one, got 3"):
        train_language_model(3, corpus.train, "next", 5, progress=False)


def test_a_tiny_bidirectional_model_trains_on_masked_words_deterministically(corpus):
    def run():
        model = tiny_lm(len(corpus.vocab), causal=False, seed=2)
        return train_language_model(model, corpus.train, "masked", 20, mask=corpus.mask, batch_size=16,
                                    every=10, valid=corpus.test, progress=False).history  # fmt: skip

    first, second = run(), run()
    assert first.loss == second.loss
    assert [c["masked_loss"] for c in first.checkpoints] == [c["masked_loss"] for c in second.checkpoints]
    assert len(first.checkpoints) == 2 and all(math.isfinite(c["masked_loss"]) for c in first.checkpoints)
    assert "next_loss" not in first.checkpoints[-1]
    model = tiny_lm(len(corpus.vocab), causal=False)
    with pytest.raises(ValueError, match="the masked objective needs the id of the mask token"):
        train_language_model(model, corpus.train, "masked", 5, progress=False)  # no mask=
    with pytest.raises(ValueError, match="objective must be one of"):
        train_language_model(model, corpus.train, "fill", 5, progress=False)


# ---------------------------------------------------------------- fill_in


def test_fill_in_with_a_causal_model_reads_the_words_on_the_left(corpus):
    model = tiny_lm(len(corpus.vocab), seed=3)
    tokens = corpus.test[:5]
    guesses = fill_in(model, tokens)
    assert guesses.shape == tokens.shape
    first = torch.arange(tokens.shape[1]) == 0
    assert torch.equal(guesses == IGNORE, (tokens == 0) | first)  # padding and <bos> are not guessed
    with torch.no_grad():
        expected = model(tokens[:, :-1]).logits.argmax(-1)
        real = tokens[:, 1:] != 0
        assert torch.equal(guesses[:, 1:][real], expected[real])
        t = 4
        alone = model(tokens[:, :t]).logits[:, -1].argmax(-1)  # only the prefix
        assert torch.equal(guesses[:, t][tokens[:, t] != 0], alone[tokens[:, t] != 0])


def test_fill_in_with_a_bidirectional_model_masks_one_word_at_a_time(corpus):
    model = tiny_lm(len(corpus.vocab), causal=False, seed=4)
    tokens = corpus.test[:4]
    guesses = fill_in(model, tokens, mask=corpus.mask)
    assert (guesses[:, 0] == IGNORE).all() and (guesses[tokens == 0] == IGNORE).all()
    with torch.no_grad():
        for t in (1, 3, tokens.shape[1] - 1):
            blanked = tokens.clone()
            blanked[:, t] = corpus.mask
            expected = model(blanked).logits[:, t].argmax(-1)
            real = tokens[:, t] != 0
            assert torch.equal(guesses[real, t], expected[real])
    assert not torch.equal(guesses, fill_in(model, tokens, mask=4))  # the mask id matters
    with pytest.raises(ValueError, match=r"a bidirectional model needs the id of the mask token \(mask=...\)"):
        fill_in(model, tokens)


# ---------------------------------------------------------------- sampling with a temperature


PROMPT = torch.tensor([[1, 4, 5], [1, 6, 6]])


def test_temperature_zero_is_greedy_and_sampling_is_seeded():
    model = tiny_lm(11, seed=5)
    greedy = model.generate(PROMPT, 8)
    assert torch.equal(model.generate(PROMPT, 8, temperature=0.0), greedy)
    assert torch.equal(model.generate(PROMPT, 8, temperature=0), greedy)
    assert torch.equal(model.generate(PROMPT, 8, temperature=1e-4, generator=torch.Generator().manual_seed(0)), greedy)

    def sample(seed, temperature=1.0):
        return model.generate(PROMPT, 8, temperature=temperature, generator=torch.Generator().manual_seed(seed))

    first = sample(0)
    assert first.shape == (2, 11) and torch.equal(first[:, :3], PROMPT)
    assert torch.equal(sample(0), first) and not torch.equal(sample(1), first)
    assert not torch.equal(sample(0, temperature=5.0), greedy)
    assert model.training is False


@pytest.mark.parametrize("temperature", [-1.0, -1e-9, float("nan"), float("inf"), True, "hot", None])
def test_generate_rejects_a_bad_temperature(temperature):
    with pytest.raises(ValueError, match=r"temperature must be a finite number >= 0 \(0: greedy\), got"):
        tiny_lm(11).generate(PROMPT, 2, temperature=temperature)


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_sampled_frequencies_follow_the_softmax(temperature):
    model = tiny_lm(6, seed=6)
    logits = torch.tensor([-3.0, 0.0, 1.5, -1.0, 2.0, 0.5])
    with torch.no_grad():  # the same logits whatever the input
        model.out.weight.zero_()
        model.out.bias.copy_(logits)
    n = 4000
    drawn = model.generate(torch.ones(n, 1, dtype=torch.long), 1, temperature, torch.Generator().manual_seed(0))
    frequencies = torch.bincount(drawn[:, 1], minlength=6).float() / n
    close(frequencies, torch.softmax(logits / temperature, -1), atol=0.025, rtol=0)
    assert model.generate(torch.ones(3, 1, dtype=torch.long), 2).tolist() == [[1, 4, 4]] * 3


def test_sample_sentences(corpus):
    model = tiny_lm(len(corpus.vocab), seed=7)
    sentences = sample_sentences(model, corpus.vocab, 5, temperature=1.0, seed=0, max_words=6)
    assert len(sentences) == 5 and all(isinstance(s, str) for s in sentences)
    assert all(len(s.split()) <= 6 for s in sentences)  # at most max_words tokens
    assert sample_sentences(model, corpus.vocab, 5, temperature=1.0, seed=0, max_words=6) == sentences
    assert sample_sentences(model, corpus.vocab, 5, temperature=1.0, seed=1, max_words=6) != sentences
    greedy = sample_sentences(model, corpus.vocab, 4, temperature=0.0, seed=3)
    assert len(greedy) == 4 and len(set(greedy)) == 1
    assert sample_sentences(model, corpus.vocab, 4, temperature=0.0, seed=9) == greedy
    with pytest.raises(ValueError, match="n must be a positive int, got 0"):
        sample_sentences(model, corpus.vocab, 0)


# ---------------------------------------------------------------- attention-only layers


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_attention_only_layer_is_attention_in_a_residual(norm_first):
    layer = EncoderLayer(16, 4, d_ff=0, dropout=0.0, norm_first=norm_first).eval()
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())) * 0.3)
    assert layer.feed_forward is None and layer.norm2 is None
    params = sum(p.numel() for p in layer.parameters())
    assert params == 4 * (16 * 16 + 16) + 2 * 16  # W_q, W_k, W_v, W_o and one LayerNorm
    x = randn(2, 5, 16, seed=1)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])[:, None, None, :]
    with torch.no_grad():
        out, weights = layer(x, mask)
        if norm_first:
            h = layer.norm1(x)
            expected = x + layer.self_attention(h, h, h, mask)[0]
        else:
            expected = layer.norm1(x + layer.self_attention(x, x, x, mask)[0])
    close(out, expected)
    assert weights.shape == (2, 4, 5, 5)


def test_layer_norm_eps_and_bad_d_ff():
    layer = EncoderLayer(8, 2, 16, eps=1e-3)
    assert layer.norm1.eps == layer.norm2.eps == 1e-3
    assert EncoderLayer(8, 2, 0, eps=1e-6).norm1.eps == 1e-6
    with pytest.raises(ValueError, match="d_ff must be an int >= 0, got -1"):
        EncoderLayer(8, 2, -1)
    with pytest.raises(ValueError, match="eps must be a positive number, got 0"):
        EncoderLayer(8, 2, 16, eps=0)


def test_configs_accept_d_ff_zero_only_for_language_models():
    model = tiny_lm(11, d_ff=0, num_layers=2)
    assert all(layer.feed_forward is None for layer in model.layers.layers)
    logits = model(PROMPT).logits
    assert logits.shape == (2, 3, 11) and torch.isfinite(logits).all()
    assert model.generate(PROMPT, 2).shape == (2, 5)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match=r"d_ff must be an int >= 0, got"):
            LanguageModelConfig(11, d_ff=bad)
    with pytest.raises(ValueError, match="d_ff must be a positive int, got 0"):
        TransformerConfig(11, 11, d_ff=0)


# ---------------------------------------------------------------- panels


def fake_read(sentence):
    words = sentence.split()
    if not words:
        raise ValueError("the sentence is <empty>")
    T = len(words)
    g = torch.Generator().manual_seed(T)
    layers = tuple(torch.rand(1, 3, T, T, generator=g).softmax(-1) for _ in range(2))  # 2 layers, 3 heads
    return layers, words


def test_head_panel_shows_the_chosen_head_and_errors():
    panel = head_panel(fake_read, ["the dog sees the cat", "a b"], layer=1, head=2)
    choose, text, layer, head, readout, image = panel.children
    assert (layer.value, layer.max, head.value, head.max) == (2, 2, 3, 3)  # shown 1-based
    assert "5 tokens" in readout.value and shown(image)[1].startswith("Heatmap of layer 2, head 3: each token")
    first = shown(image)[0]
    head.value = 1
    assert shown(image)[0] != first
    choose.value = "a b"
    assert text.value == "a b" and "2 tokens" in readout.value
    text.value = "   "
    assert "the sentence is &lt;empty&gt;" in readout.value and shown(image)[0] == b""
    text.value = "one two three"
    assert "3 tokens" in readout.value and shown(image)[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layer": 2}, r"layer must be in 0..1 and head in 0..2, got layer=2, head=0"),
        ({"head": 3}, r"layer must be in 0..1 and head in 0..2, got layer=0, head=3"),
        ({"layer": -1}, r"got layer=-1, head=0"),
        ({"examples": []}, "examples must hold at least one sentence"),
    ],
)
def test_head_panel_refuses_what_it_cannot_show(kwargs, message):
    args = {"examples": ["a b c"], **kwargs}
    with pytest.raises(ValueError, match=message):
        head_panel(fake_read, **args)


def test_sampling_panel_redraws_with_the_temperature(corpus):
    asked = []

    def sample(temperature):
        asked.append(temperature)
        return ["the <b>dog</b> sees", ""]

    panel = sampling_panel(sample, temperature=2.0)
    slider, out = panel.children
    assert asked == [2.0] and "τ = 2.00" in out.value
    assert "&lt;b&gt;dog&lt;/b&gt;" in out.value and "(empty)" in out.value and out.value.count("<li>") == 2
    slider.value = 0.1
    assert asked[-1] == pytest.approx(0.1) and "τ = 0.10" in out.value
    with pytest.raises(ValueError, match=r"temperature must be a number in \[0.01, 100\]"):
        sampling_panel(sample, temperature=0.0)
    model = tiny_lm(len(corpus.vocab), seed=8)
    panel = sampling_panel(lambda t: sample_sentences(model, corpus.vocab, 3, temperature=t, seed=0, max_words=5))
    assert panel.children[1].value.count("<li>") == 3


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


def test_next_token_objectives_refuse_a_bidirectional_model(corpus):
    with seeded(0):
        model = LanguageModel(LanguageModelConfig(len(corpus.vocab), d_model=8, num_heads=2, num_layers=1, d_ff=8,
                                                  causal=False))  # fmt: skip
    for call in (
        lambda: train_language_model(model, corpus.train, "next", 1, progress=False),
        lambda: language_model_loss(model, corpus.test, "one"),
        lambda: token_losses(model, corpus.test),
    ):
        with pytest.raises(ValueError, match="needs a causal model"):
            call()


def test_evaluation_restores_the_training_mode(corpus):
    with seeded(0):
        model = LanguageModel(LanguageModelConfig(len(corpus.vocab), d_model=8, num_heads=2, num_layers=1, d_ff=8))
    model.train()
    token_losses(model, corpus.test[:4])
    fill_in(model, corpus.test[:4])
    language_model_loss(model, corpus.test[:4], "next")
    assert model.training


def test_sampling_at_a_tiny_temperature_is_greedy_not_nan(corpus):
    with seeded(0):
        model = LanguageModel(LanguageModelConfig(len(corpus.vocab), d_model=8, num_heads=2, num_layers=1, d_ff=8))
    prompt = torch.full((3, 1), corpus.vocab.bos)
    tiny = model.generate(prompt, 5, temperature=1e-40, generator=torch.Generator().manual_seed(0))
    assert torch.equal(tiny, model.generate(prompt, 5))


def test_parse_english_refuses_a_string():
    with pytest.raises(ValueError, match="words must be a list of words, not a string"):
        parse_english("the dog sees the cat")
