"""Incremental decoding with a key/value cache: every step's logits and attention equal the rows of the full
forward pass, generation with and without the cache writes the same tokens, and the cache is a plain value."""

import itertools

import pytest
import torch

from attn.blocks import KeyValue, MultiHeadAttention
from attn.data.vocab import Vocab
from attn.training import seeded
from attn.transformer import KeyValueCache, LanguageModel, LanguageModelConfig
from attn.transformer.translate import sample_sentences

V = 17
# A padded batch of token ids (pad = 0): padding at the end, and one row with padding inside the prompt.
TOKENS = torch.tensor(
    [
        [1, 5, 6, 7, 8, 9, 10, 11, 12, 13],
        [1, 4, 4, 0, 0, 14, 15, 16, 5, 6],
        [1, 9, 0, 0, 0, 0, 0, 0, 0, 0],
    ]
)


def random_lm(positions="sinusoidal", norm_first=True, d_ff=32, seed=0, max_len=24) -> LanguageModel:
    config = LanguageModelConfig(V, d_model=16, num_heads=4, num_layers=3, d_ff=d_ff, dropout=0.1, max_len=max_len,
                                 positions=positions, norm_first=norm_first)  # fmt: skip
    with seeded(seed):
        model = LanguageModel(config)
    return model.eval()


def close(actual, expected):
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0)


CASES = list(itertools.product(["sinusoidal", "learned", "none"], [True, False], [32, 0]))
IDS = [f"{p}-{'pre' if n else 'post'}LN-dff{d}" for p, n, d in CASES]


@pytest.mark.parametrize(("positions", "norm_first", "d_ff"), CASES, ids=IDS)
def test_each_cached_step_equals_the_full_forward_pass(positions, norm_first, d_ff):
    model = random_lm(positions, norm_first, d_ff)
    with torch.no_grad():
        full = model(TOKENS)  # (B, T, V) and per layer (B, H, T, T)
        out, cache = model.extend(TOKENS[:, :1])
        close(out.logits[:, 0], full.logits[:, 0])
        for t in range(1, TOKENS.shape[1]):
            out, cache = model.extend(TOKENS[:, t : t + 1], cache)
            assert out.logits.shape == (3, 1, V) and len(cache) == t + 1
            close(out.logits[:, 0], full.logits[:, t])
            for cached, every in zip(out.attention, full.attention, strict=True):  # per layer
                assert cached.shape == (3, 4, 1, t + 1)
                close(cached[:, :, 0], every[:, :, t, : t + 1])  # the last row of the full pass
        assert all(kv.key.shape == kv.value.shape == (3, 4, TOKENS.shape[1], 4) for kv in cache.layers)
        assert torch.equal(cache.tokens, TOKENS)


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_a_prompt_read_at_once_then_chunks_equal_the_full_pass(positions):
    model = random_lm(positions)
    with torch.no_grad():
        full = model(TOKENS)
        out, cache = model.extend(TOKENS[:, :4])  # a prompt, read at once
        close(out.logits, full.logits[:, :4])
        out, cache = model.extend(TOKENS[:, 4:7], cache)  # three tokens at once
        close(out.logits, full.logits[:, 4:7])
        for cached, every in zip(out.attention, full.attention, strict=True):
            close(cached, every[:, :, 4:7, :7])
        out, _ = model.extend(TOKENS[:, 7:], cache, need_weights=False)
        close(out.logits, full.logits[:, 7:])
        assert out.attention is None


def test_the_cache_is_a_value_that_extend_does_not_change():
    model = random_lm()
    with torch.no_grad():
        _, cache = model.extend(TOKENS[:, :5])
        keys = [kv.key.clone() for kv in cache.layers]
        a, after_a = model.extend(TOKENS[:, 5:6], cache)
        b, after_b = model.extend(torch.full((3, 1), 7), cache)  # another continuation of the same prefix
        again, _ = model.extend(TOKENS[:, 5:6], cache)
    assert len(cache) == 5 and len(after_a) == len(after_b) == 6
    assert all(torch.equal(kv.key, k) for kv, k in zip(cache.layers, keys, strict=True))
    assert torch.equal(a.logits, again.logits) and not torch.allclose(a.logits, b.logits)
    assert isinstance(cache.layers[0], KeyValue) and len(cache.layers[0]) == 5
    with pytest.raises(AttributeError):  # frozen: a new cache is returned, the old one is never written to
        cache.tokens = TOKENS


def test_multi_head_attention_extend_is_forward_for_the_new_rows():
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0))
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    with torch.no_grad():
        out, weights = mha(x, x, x, causal)
        first, first_weights, past = mha.extend(x[:, :4], None, causal[:4, :4])
        close(first, out[:, :4])
        close(first_weights, weights[:, :, :4, :4])
        rest, rest_weights, cache = mha.extend(x[:, 4:], past, causal[4:])
        close(rest, out[:, 4:])
        close(rest_weights, weights[:, :, 4:])
        fused, none, _ = mha.extend(x[:, 4:], past, causal[4:], need_weights=False)
        close(fused, out[:, 4:])
    assert none is None and len(cache) == 7 and cache.key.shape == (2, 4, 7, 4)
    close(cache.key, mha.W_k(x).view(2, 7, 4, 4).transpose(1, 2).detach())  # K = x W_K, split into heads


@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "none"])
@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-LN", "post-LN"])
def test_greedy_generation_with_and_without_the_cache_writes_the_same_tokens(positions, norm_first):
    model = random_lm(positions, norm_first)
    prompt = TOKENS[:, :3]
    without = model.generate(prompt, 21)
    assert torch.equal(model.generate(prompt, 21, cache=True), without)
    assert without.shape == (3, 24)
    for seed in range(3):  # sampling: the same draws from the same generator
        g1, g2 = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
        assert torch.equal(model.generate(prompt, 21, 1.0, g1, cache=True), model.generate(prompt, 21, 1.0, g2))
    model.train()
    assert torch.equal(model.generate(prompt, 5, cache=True), without[:, :8])  # no dropout while writing
    assert model.training


def test_sample_sentences_with_the_cache_writes_the_same_sentences():
    vocab = Vocab([f"w{i}" for i in range(V - 4)])
    model = random_lm(max_len=12)
    for temperature in (0.0, 1.0):
        kwargs = {"temperature": temperature, "seed": 3, "max_words": 12}
        assert sample_sentences(model, vocab, 6, cache=True, **kwargs) == sample_sentences(model, vocab, 6, **kwargs)


def test_extend_and_generate_reject_bad_arguments():
    model = random_lm(max_len=12)
    _, cache = model.extend(TOKENS[:, :10])
    with pytest.raises(ValueError, match="10 cached and 3 new tokens need 13 positions but the model has max_len=12"):
        model.extend(TOKENS[:, :3], cache)
    with pytest.raises(ValueError, match="cache must be a KeyValueCache \\(or None\\), got tuple"):
        model.extend(TOKENS[:, :1], cache.layers)
    with pytest.raises(ValueError, match=r"tokens \(2, 1\) and cache.tokens \(3, 10\) differ in batch size"):
        model.extend(TOKENS[:2, :1], cache)
    with pytest.raises(ValueError, match="tokens must be a"):
        model.extend(TOKENS.float())
    with pytest.raises(ValueError, match="cache must be True or False, got 1"):
        model.generate(TOKENS[:, :2], 3, cache=1)
    bidirectional = LanguageModel(LanguageModelConfig(V, d_model=16, num_heads=4, causal=False))
    with pytest.raises(ValueError, match=r"extend needs a causal model \(config.causal=True\)"):
        bidirectional.extend(TOKENS)
    short = KeyValueCache(cache.tokens, cache.layers[:2])
    with pytest.raises(ValueError, match=r"past must be a tuple of one KeyValue per layer \(3\), got 2 entries"):
        model.extend(TOKENS[:, :1], short)
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(2, 1, 16)
    bad = KeyValue(torch.zeros(2, 4, 5, 8), torch.zeros(2, 4, 5, 8))
    with pytest.raises(ValueError, match=r"past.key must have shape \(B=2, H_kv=4, T, d_k=4\), got \(2, 4, 5, 8\)"):
        mha.extend(x, bad)
    with pytest.raises(ValueError, match=r"past.key \(2, 4, 5, 4\) and past.value \(2, 4, 6, 4\) differ in shape"):
        mha.extend(x, KeyValue(torch.zeros(2, 4, 5, 4), torch.zeros(2, 4, 6, 4)))
    with pytest.raises(ValueError, match="past must be a KeyValue \\(or None\\), got tuple"):
        mha.extend(x, (bad.key, bad.value))
    with pytest.raises(ValueError, match=r"x must have shape \(B, Tn, d_model=16\), got \(2, 16\)"):
        mha.extend(x[:, 0])
    with pytest.raises(ValueError, match="start must be an int >= 0, got -1"):
        model.embedding(TOKENS[:, :1], start=-1)
