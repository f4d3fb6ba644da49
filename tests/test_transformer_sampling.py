"""Sampling from a language model with a temperature (LanguageModel.generate, sample_sentences): temperature 0 is
greedy and so is a tiny one, draws are seeded, their frequencies follow the softmax, and a bad temperature is
refused."""

import pytest
import torch
from tiny_models import PROMPT, tiny_lm
from torch_reference import close

from attn.training import seeded
from attn.transformer import LanguageModel, LanguageModelConfig
from attn.transformer.translate import sample_sentences


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


def test_sampling_at_a_tiny_temperature_is_greedy_not_nan(corpus):
    with seeded(0):
        model = LanguageModel(LanguageModelConfig(len(corpus.vocab), d_model=8, num_heads=2, num_layers=1, d_ff=8))
    prompt = torch.full((3, 1), corpus.vocab.bos)
    tiny = model.generate(prompt, 5, temperature=1e-40, generator=torch.Generator().manual_seed(0))
    assert torch.equal(tiny, model.generate(prompt, 5))
