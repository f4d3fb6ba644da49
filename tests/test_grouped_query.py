"""Grouped-query and multi-query attention (Ainslie et al. 2023; Shazeer 2019) against the full-head model with
tied weights: each shared key/value head copied into the query heads of its group."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch_reference import close, randn

import attn
from attn.blocks import MultiHeadAttention
from attn.transformer import LanguageModel, LanguageModelConfig


@torch.no_grad()
def tied_full_heads(shared: MultiHeadAttention) -> MultiHeadAttention:
    """The h-head layer that computes what ``shared`` computes: W_K and W_V of each key/value head repeated for the
    h / h_kv query heads of its group (query head i reads key/value head i // g)."""
    full = MultiHeadAttention(shared.d_model, shared.h, shared.dropout)
    g, d_k = shared.h // shared.h_kv, shared.d_k
    full.W_q.load_state_dict(shared.W_q.state_dict())
    full.W_o.load_state_dict(shared.W_o.state_dict())
    for name in ("W_k", "W_v"):
        ours, theirs = getattr(shared, name), getattr(full, name)
        theirs.weight.copy_(ours.weight.view(shared.h_kv, d_k, -1).repeat_interleave(g, 0).reshape(theirs.weight.shape))
        theirs.bias.copy_(ours.bias.view(shared.h_kv, d_k).repeat_interleave(g, 0).reshape(-1))
    return full


@pytest.mark.parametrize("h_kv", [1, 2, 4])
@pytest.mark.parametrize("masked", [False, True])
def test_shared_heads_equal_full_heads_with_tied_weights(h_kv, masked):
    torch.manual_seed(0)
    shared = MultiHeadAttention(32, 4, num_kv_heads=h_kv)
    full = tied_full_heads(shared)
    x, memory = randn(3, 5, 32, seed=1), randn(3, 7, 32, seed=2)
    mask = attn.causal_mask(5) if masked else None
    for args in ((x, x, x, mask), (x, memory, memory, None)):
        out, weights = shared(*args)
        ref_out, ref_weights = full(*args)
        close(out, ref_out)
        close(weights, ref_weights)
        assert weights.shape == (3, 4, 5, args[1].shape[1])
        fused, none = shared(*args, need_weights=False)
        assert none is None
        close(fused, out)


def test_a_per_head_mask_and_a_padding_mask_go_to_the_right_query_heads():
    torch.manual_seed(0)
    shared = MultiHeadAttention(16, 4, num_kv_heads=2)
    full = tied_full_heads(shared)
    x = randn(2, 6, 16, seed=3)
    per_head = torch.rand(2, 4, 6, 6, generator=torch.Generator().manual_seed(4)) > 0.3
    key_mask = attn.padding_mask([6, 4], 6)
    out, weights = shared(x, x, x, per_head, key_mask=key_mask)
    ref_out, ref_weights = full(x, x, x, per_head, key_mask=key_mask)
    close(out, ref_out)
    close(weights, ref_weights)


def test_multi_query_has_one_key_value_head_and_a_cache_h_times_smaller():
    layer = MultiHeadAttention(32, 8, num_kv_heads=1)
    assert layer.W_k.weight.shape == (4, 32) and layer.W_v.weight.shape == (4, 32)
    full = MultiHeadAttention(32, 8)
    x = randn(2, 10, 32)
    _, _, cache = layer.extend(x)
    _, _, full_cache = full.extend(x)
    assert cache.key.shape == (2, 1, 10, 4)
    assert full_cache.nbytes == 8 * cache.nbytes


@given(h_kv=st.sampled_from([1, 2, 3, 6]), T=st.integers(1, 6), split=st.integers(0, 6), seed=st.integers(0, 99))
def test_extend_with_a_cache_equals_forward(h_kv, T, split, seed):
    torch.manual_seed(seed)
    layer = MultiHeadAttention(24, 6, num_kv_heads=h_kv).eval()
    x = randn(2, T, 24, seed=seed)
    split = min(split, T - 1)
    mask = attn.causal_mask(T)
    out, weights = layer(x, x, x, mask)
    past = layer.extend(x[:, :split], None, mask[:split, :split])[2] if split else None
    rest, w2, cache = layer.extend(x[:, split:], past, mask[split:])
    close(rest, out[:, split:])
    close(w2, weights[:, :, split:])
    assert len(cache) == T and cache.key.shape[1] == h_kv


def test_language_model_with_shared_heads_decodes_with_its_cache():
    torch.manual_seed(0)
    config = LanguageModelConfig(vocab_size=11, d_model=16, num_heads=4, num_kv_heads=2, dropout=0.0)
    model = LanguageModel(config).eval()
    tokens = torch.randint(1, 11, (2, 7), generator=torch.Generator().manual_seed(5))
    whole = model(tokens)
    out, cache = model.extend(tokens[:, :4])
    more, cache = model.extend(tokens[:, 4:], cache)
    close(more.logits, whole.logits[:, 4:])
    assert cache.nbytes == 2 * 2 * 2 * 2 * 7 * 4 * 4  # (key, value) · layers · B · H_kv · T · d_k · 4 bytes
    close(model.generate(tokens[:, :3], 4, cache=True).float(), model.generate(tokens[:, :3], 4).float())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_kv_heads": 3}, r"num_heads=4 is not divisible by num_kv_heads=3"),
        ({"num_kv_heads": 0}, r"num_kv_heads must be a positive int"),
    ],
)
def test_bad_numbers_of_key_value_heads(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(16, 4, **kwargs)
    with pytest.raises(ValueError, match=message):
        LanguageModelConfig(vocab_size=5, d_model=16, num_heads=4, **kwargs)


def test_a_cache_with_the_wrong_number_of_key_value_heads_is_refused():
    layer = MultiHeadAttention(16, 4, num_kv_heads=2)
    _, _, wrong = MultiHeadAttention(16, 4).extend(randn(1, 3, 16))
    with pytest.raises(ValueError, match=r"past.key must have shape \(B=1, H_kv=2, T, d_k=4\), got \(1, 4, 3, 4\)"):
        layer.extend(randn(1, 1, 16), wrong)


def test_a_windowed_language_model_sees_the_last_window_tokens_and_decodes_with_its_cache():
    torch.manual_seed(0)
    config = LanguageModelConfig(vocab_size=9, d_model=16, num_heads=2, window=3, dropout=0.0)
    model = LanguageModel(config).eval()
    tokens = torch.randint(1, 9, (2, 10), generator=torch.Generator().manual_seed(1))
    assert torch.equal(model.mask(tokens)[0, 0], attn.masks.sliding_window_mask(10, 3))
    whole = model(tokens)
    out, cache = model.extend(tokens[:, :4])
    more, _ = model.extend(tokens[:, 4:], cache)
    close(more.logits, whole.logits[:, 4:])
    changed = tokens.clone()
    changed[:, 0] = (changed[:, 0] % 8) + 1  # a token out of the last position's reach (2 layers · 2 back)
    close(model(changed).logits[:, -1], whole.logits[:, -1])
    with pytest.raises(ValueError, match="window must be a positive int, got 0"):
        LanguageModelConfig(vocab_size=9, window=0)
