"""attn.transformer against torch's own layers, the properties attention must have, bad input, decoding, training."""

import functools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch_reference import close, copy_attention, copy_layer, copy_norm, randn

from attn.blocks import (
    DecoderLayer,
    Encoder,
    EncoderLayer,
    LayerNorm,
    LearnedPositions,
    MultiHeadAttention,
    SinusoidalPositions,
    layer_norm,
    sinusoidal_positions,
)
from attn.data.sequences import make_sequence_corpus
from attn.data.translation import encode_batch
from attn.masks import causal_mask
from attn.training import fit, seeded
from attn.transformer import (
    Embedding,
    LanguageModel,
    LanguageModelConfig,
    Transformer,
    TransformerConfig,
    evaluate_transformer,
    train_transformer,
)

D, H, D_FF = 16, 4, 32


def randomize(module: nn.Module, seed: int = 0, std: float = 0.3) -> nn.Module:
    """Every parameter random (biases, γ and β too), so a wrongly copied or unused one shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return module


# ---------------------------------------------------------------- MultiHeadAttention vs torch


B, TQ, TK = 3, 5, 7
KEEP = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] + [0] * 6], dtype=torch.bool)  # (B, TK): real keys


def _attention_case(case):
    """(ours' mask, torch's keyword arguments, Tq, Tk, bias) for each case; torch's masks are ~ours."""
    if case == "none":
        return None, {}, TQ, TK, True
    if case == "causal":
        return causal_mask(TK), {"attn_mask": ~causal_mask(TK)}, TK, TK, True
    if case == "padding":
        return KEEP[:, None, None, :], {"key_padding_mask": ~KEEP}, TK, TK, True
    if case == "cross":  # Tq != Tk, and the keys padded
        return KEEP[:, None, None, :], {"key_padding_mask": ~KEEP}, 4, TK, True
    if case == "per-batch":  # a 3-D (B, Tq, Tk) mask; torch wants it per head, (B * H, Tq, Tk)
        mask = randn(B, TQ, TK, seed=5) > -0.5
        mask[:, :, 0] = True
        return mask, {"attn_mask": ~mask.repeat_interleave(H, 0)}, TQ, TK, True
    assert case == "no-bias"
    return causal_mask(TK)[:TQ], {"attn_mask": ~causal_mask(TK)[:TQ]}, TQ, TK, False


@pytest.mark.parametrize("case", ["none", "causal", "padding", "cross", "per-batch", "no-bias"])
def test_multi_head_attention_matches_torch(case):
    mask, kwargs, Tq, Tk, bias = _attention_case(case)
    ours = randomize(MultiHeadAttention(D, H, bias=bias), seed=1)
    theirs = nn.MultiheadAttention(D, H, bias=bias, batch_first=True)
    copy_attention(ours, theirs)
    q = randn(B, Tq, D, seed=2).requires_grad_()
    k, v = randn(B, Tk, D, seed=3), randn(B, Tk, D, seed=4)
    out, weights = ours(q, k, v, mask)
    ref_out, ref_weights = theirs(q, k, v, need_weights=True, average_attn_weights=False, **kwargs)
    assert out.shape == (B, Tq, D) and weights.shape == (B, H, Tq, Tk)
    close(out, ref_out)
    close(weights, ref_weights)
    (grad,) = torch.autograd.grad(out.square().sum(), q)
    (ref_grad,) = torch.autograd.grad(ref_out.square().sum(), q)
    close(grad, ref_grad)


@pytest.mark.parametrize("shared", ["self", "key-value"])
@pytest.mark.parametrize("bias", [True, False])
def test_one_input_for_several_projections_gives_torchs_result_and_gradients(shared, bias):
    """Self-attention (Q, K and V from x) and cross-attention (K and V from one memory) project in one product."""
    ours = randomize(MultiHeadAttention(D, H, bias=bias), seed=1)
    theirs = nn.MultiheadAttention(D, H, bias=bias, batch_first=True)
    copy_attention(ours, theirs)
    x = randn(B, TK, D, seed=2).requires_grad_()
    q = x if shared == "self" else randn(B, TQ, D, seed=3).requires_grad_()
    mask = causal_mask(TK) if shared == "self" else KEEP[:, None, None, :]
    kwargs = {"attn_mask": ~mask} if shared == "self" else {"key_padding_mask": ~KEEP}
    for need_weights in (True, False):
        out, weights = ours(q, x, x, mask, need_weights=need_weights)
        ref_out, ref_weights = theirs(q, x, x, need_weights=True, average_attn_weights=False, **kwargs)
        close(out, ref_out)
        if need_weights:
            close(weights, ref_weights)
        inputs = [x] if shared == "self" else [x, q]
        grads = torch.autograd.grad(out.square().sum(), [*inputs, ours.W_q.weight, ours.W_k.weight, ours.W_v.weight])
        ref_grads = torch.autograd.grad(ref_out.square().sum(), [*inputs, theirs.in_proj_weight])
        for grad, ref_grad in zip([*grads[: len(inputs)], torch.cat(grads[len(inputs) :])], ref_grads, strict=True):
            close(grad, ref_grad, atol=1e-4, rtol=1e-4)  # sums of up to 3 Tk D terms of size ~1


@pytest.mark.parametrize("case", ["none", "causal", "padding", "cross", "per-batch", "no-bias"])
def test_fused_path_equals_the_weights_path(case):
    mask, _, Tq, Tk, bias = _attention_case(case)
    mha = randomize(MultiHeadAttention(D, H, bias=bias), seed=1, std=0.15)
    inputs = [randn(B, Tq, D, seed=2), randn(B, Tk, D, seed=3), randn(B, Tk, D, seed=4)]
    grads = []
    for need_weights in (True, False):
        mha.zero_grad()
        q, k, v = (x.clone().requires_grad_() for x in inputs)
        out, weights = mha(q, k, v, mask, need_weights=need_weights)
        assert (weights is None) == (not need_weights)
        out.square().sum().backward()
        grads.append([out.detach(), *(x.grad for x in (q, k, v)), *(p.grad for p in mha.parameters())])
    (out, *grads), (fused_out, *fused_grads) = grads
    close(fused_out, out, atol=1e-6, rtol=0)
    for with_weights, fused in zip(grads, fused_grads, strict=True):  # gradients of size ~10
        close(fused, with_weights, atol=1e-5, rtol=1e-5)


def test_fused_path_gives_zero_for_a_query_with_nothing_to_attend_to():
    mha = randomize(MultiHeadAttention(D, H), seed=1)
    x = randn(2, 4, D, seed=2)
    mask = torch.ones(2, 4, 4, dtype=torch.bool)
    mask[1, 2] = False  # query 2 of sentence 1 may attend to nothing
    out, weights = mha(x, x, x, mask)
    fused, _ = mha(x, x, x, mask, need_weights=False)
    assert torch.equal(weights[1, :, 2], torch.zeros(H, 4))
    close(out[1, 2], mha.W_o.bias.detach())  # zero heads: only the output bias is left
    assert torch.isfinite(fused).all()
    close(fused, out, atol=1e-6, rtol=1e-6)
    x.requires_grad_()
    mha(x, x, x, mask, need_weights=False)[0].sum().backward()
    assert torch.isfinite(x.grad).all() and all(torch.isfinite(p.grad).all() for p in mha.parameters())


def test_dropout_acts_in_training_only_and_never_on_the_returned_weights():
    mha = randomize(MultiHeadAttention(D, H, dropout=0.5), seed=1)
    x = randn(2, 6, D, seed=2)
    eval_out, eval_weights = mha.eval()(x, x, x)
    mha.train()
    for need_weights in (True, False):
        with seeded(0):
            out, weights = mha(x, x, x, need_weights=need_weights)
        assert (out - eval_out).abs().max() > 1e-3
        if need_weights:
            close(weights, eval_weights)  # the picture shows the weights before dropout
    assert mha.extra_repr() == f"d_model={D}, num_heads={H}, d_k={D // H}, dropout=0.5"


@pytest.mark.parametrize("bias", [True, False])
def test_heads_cost_no_parameters(bias):
    def count(m):
        return sum(p.numel() for p in m.parameters())

    assert count(MultiHeadAttention(24, 8, bias=bias)) == count(MultiHeadAttention(24, 1, bias=bias))
    assert count(MultiHeadAttention(24, 8, bias=bias)) == 4 * 24 * 24 + bias * 4 * 24


# ---------------------------------------------------------------- layers vs torch


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no-grad"])  # no_grad: torch's fast path
def test_encoder_layer_matches_torch(norm_first, activation, grad):
    ours = randomize(EncoderLayer(D, H, D_FF, dropout=0.0, norm_first=norm_first, activation=activation), 1).eval()
    theirs = nn.TransformerEncoderLayer(
        D, H, D_FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    ).eval()
    copy_layer(ours, theirs)
    x = randn(B, TK, D, seed=2)
    with torch.set_grad_enabled(grad):
        out, weights = ours(x, KEEP[:, None, None, :])
        ref = theirs(x, src_key_padding_mask=~KEEP)
    close(out, ref)
    assert weights.shape == (B, H, TK, TK)
    assert torch.all(weights.masked_select(~KEEP[:, None, None, :].expand_as(weights)) == 0)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer_matches_torch(norm_first, activation):
    ours = randomize(DecoderLayer(D, H, D_FF, dropout=0.0, norm_first=norm_first, activation=activation), 1).eval()
    theirs = nn.TransformerDecoderLayer(
        D, H, D_FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    ).eval()
    copy_layer(ours, theirs)
    T = 5
    x, memory = randn(B, T, D, seed=2), randn(B, TK, D, seed=3)
    target_keep = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]], dtype=torch.bool)
    self_mask = causal_mask(T) & target_keep[:, None, None, :]
    out, self_weights, cross_weights = ours(x, memory, self_mask, KEEP[:, None, None, :])
    ref = theirs(x, memory, tgt_mask=~causal_mask(T), tgt_key_padding_mask=~target_keep, memory_key_padding_mask=~KEEP)
    close(out, ref)
    assert self_weights.shape == (B, H, T, T) and cross_weights.shape == (B, H, T, TK)
    # Without padding in the target, torch's causal tgt_mask alone gives the same.
    out, _, _ = ours(x[:1], memory[:1], causal_mask(T), KEEP[:1, None, None, :])
    close(out, theirs(x[:1], memory[:1], tgt_mask=~causal_mask(T), memory_key_padding_mask=~KEEP[:1]))


# ---------------------------------------------------------------- LayerNorm


def test_layer_norm_matches_torch_with_gradients():
    ours = randomize(LayerNorm(D), seed=1, std=1.0)
    theirs = nn.LayerNorm(D, eps=1e-5)
    copy_norm(ours, theirs)
    x = (randn(2, 3, D, seed=2) * 3 + 1).requires_grad_()
    out, ref = ours(x), theirs(x)
    close(out, ref)
    upstream = randn(2, 3, D, seed=3)
    (out * upstream).sum().backward()
    grad_x, x.grad = x.grad, None
    (ref * upstream).sum().backward()
    close(grad_x, x.grad)
    close(ours.gamma.grad, theirs.weight.grad)
    close(ours.beta.grad, theirs.bias.grad)


def test_layer_norm_module_computes_the_equation_with_gradients():
    # The module calls torch's fused kernel; the equation (layer_norm, written out) is the independent reference.
    ours = randomize(LayerNorm(D, eps=0.5), seed=1, std=1.0)
    gamma, beta = (p.detach().clone().requires_grad_() for p in (ours.gamma, ours.beta))
    x = (randn(2, 3, D, seed=2) * 3 + 1).requires_grad_()
    x2 = x.detach().clone().requires_grad_()
    out, ref = ours(x), layer_norm(x2, gamma, beta, eps=0.5)
    close(out, ref)
    upstream = randn(2, 3, D, seed=3)
    (out * upstream).sum().backward()
    (ref * upstream).sum().backward()
    close(x.grad, x2.grad)
    close(ours.gamma.grad, gamma.grad)
    close(ours.beta.grad, beta.grad)


def test_layer_norm_function_and_defaults():
    x = randn(4, 7, seed=1) * 5 - 2
    gamma, beta = randn(7, seed=2), randn(7, seed=3)
    close(layer_norm(x, gamma, beta), nn.functional.layer_norm(x, (7,), gamma, beta, eps=1e-5))
    close(layer_norm(x, gamma, beta, eps=0.5), nn.functional.layer_norm(x, (7,), gamma, beta, eps=0.5))
    y = LayerNorm(7)(x)  # γ = 1, β = 0: zero mean, unit (biased) variance per vector
    close(y.mean(-1), torch.zeros(4), atol=1e-6, rtol=0)
    close(y.var(-1, unbiased=False), torch.ones(4), atol=1e-4, rtol=0)


def test_layer_norm_bad_input():
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., d_model=8\), got \(2, 7\)"):
        LayerNorm(8)(torch.randn(2, 7))
    with pytest.raises(ValueError, match=r"got list"):
        LayerNorm(8)([1.0] * 8)
    with pytest.raises(ValueError, match="eps must be a positive number"):
        LayerNorm(8, eps=0)
    with pytest.raises(ValueError, match="d_model must be a positive int"):
        LayerNorm(0)


# ---------------------------------------------------------------- models: small configs


def small_transformer(positions="sinusoidal", norm_first=False, seed=0, **kw) -> Transformer:
    config = TransformerConfig(11, 13, d_model=D, num_heads=H, num_layers=2, d_ff=D_FF, dropout=0.1,
                               max_len=16, positions=positions, norm_first=norm_first, **kw)  # fmt: skip
    with seeded(seed):
        return Transformer(config).eval()


def small_lm(positions="sinusoidal", causal=True, seed=0, **kw) -> LanguageModel:
    config = LanguageModelConfig(11, d_model=D, num_heads=H, num_layers=2, d_ff=D_FF, dropout=0.1,
                                 max_len=16, positions=positions, causal=causal, **kw)  # fmt: skip
    with seeded(seed):
        return LanguageModel(config).eval()


# Two sentences (pad = 0), the second one padded.
SOURCE = torch.tensor([[4, 5, 6, 7, 8, 9], [3, 10, 4, 0, 0, 0]])
TARGET = torch.tensor([[1, 12, 5, 6, 7], [1, 8, 0, 0, 0]])


@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "none"])
def test_embedding_scales_by_sqrt_d_model_and_adds_positions(positions):
    with seeded(0):
        embedding = Embedding(11, D, 16, positions, dropout=0.1, pad=0).eval()
    tokens = torch.tensor([[3, 0, 7, 7]])
    x = embedding(tokens)
    table = embedding.positions.table[:4] if positions != "none" else torch.zeros(4, D)
    close(x[0], embedding.tokens.weight[tokens[0]] * math.sqrt(D) + table)
    assert torch.equal(embedding.tokens.weight[0], torch.zeros(D))  # the padding vector is zero
    assert 0.7 < float((embedding.tokens.weight[1:].detach() * math.sqrt(D)).std()) < 1.3  # unit-size entries


# ---------------------------------------------------------------- causal and padding maps


def test_transformer_attention_maps_are_causal_and_ignore_padding():
    out = small_transformer()(SOURCE, TARGET)
    source_keep, target_keep = SOURCE != 0, TARGET != 0
    assert len(out.encoder_attention) == len(out.decoder_attention) == len(out.cross_attention) == 2
    for w in out.decoder_attention:
        assert w.shape == (2, H, 5, 5)
        assert torch.all(torch.triu(w, 1) == 0)
        assert torch.all(w.masked_select(~target_keep[:, None, None, :].expand_as(w)) == 0)
        close(w.sum(-1), torch.ones(2, H, 5))
    for w, Tq in [*((w, 6) for w in out.encoder_attention), *((w, 5) for w in out.cross_attention)]:
        assert w.shape == (2, H, Tq, 6)
        assert torch.all(w.masked_select(~source_keep[:, None, None, :].expand_as(w)) == 0)
        close(w.sum(-1), torch.ones(2, H, Tq))
    assert torch.all(w[1, ..., 3:] == 0)  # the padding of sentence 1, spelled out


@pytest.mark.parametrize("norm_first", [False, True])
def test_language_model_attention_is_causal(norm_first):
    tokens = torch.tensor([[3, 4, 5, 6, 7, 8], [9, 10, 3, 0, 0, 0]])
    out = small_lm(norm_first=norm_first)(tokens)
    assert out.logits.shape == (2, 6, 11)
    for w in out.attention:
        assert w.shape == (2, H, 6, 6)
        assert torch.all(torch.triu(w, 1) == 0)
        assert torch.all(w[1, ..., 3:] == 0)
        close(w.sum(-1), torch.ones(2, H, 6))
    bidirectional = small_lm(causal=False)(tokens).attention[0]
    assert bool((bidirectional[0] > 0).all())  # without causal, the future is seen too
    assert torch.all(bidirectional[1, ..., 3:] == 0)


@st.composite
def masked_attention_case(draw):
    b, heads = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2, 4]))
    tq, tk = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    shape = draw(st.sampled_from([(tq, tk), (b, tq, tk), (b, 1, 1, tk), (b, heads, tq, tk), (1, heads, 1, tk)]))
    density = draw(st.sampled_from([0.1, 0.5, 0.9]))
    return b, heads, tq, tk, shape, density, draw(st.integers(0, 2**16))


@given(masked_attention_case())
def test_weights_are_distributions_over_allowed_keys(case):
    b, heads, tq, tk, shape, density, seed = case
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=g) < density
    with seeded(seed):
        mha = MultiHeadAttention(8, heads)
    q, kv = torch.randn(b, tq, 8, generator=g) * 3, torch.randn(b, tk, 8, generator=g) * 3
    out, w = mha(q, kv, kv, mask)
    full = (mask.unsqueeze(1) if mask.dim() == 3 else mask).expand(b, heads, tq, tk)
    assert w.shape == (b, heads, tq, tk) and torch.isfinite(w).all()
    assert torch.all(w[~full] == 0)  # exactly
    some = full.any(-1)
    close(w.sum(-1)[some], torch.ones(int(some.sum())), atol=1e-5, rtol=0)
    assert torch.all(w[~some] == 0)
    fused, _ = mha(q, kv, kv, mask, need_weights=False)
    close(fused, out, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------- permutation equivariance


@functools.cache
def _encoder() -> Encoder:
    with seeded(0):
        return randomize(Encoder(2, D, H, D_FF, dropout=0.0, norm_first=True), seed=3).eval()


@given(st.integers(2, 7).flatmap(lambda T: st.permutations(range(T))), st.booleans(), st.integers(0, 100))
@settings(max_examples=30)
def test_encoder_without_positions_is_permutation_equivariant(perm, padded, seed):
    perm = torch.tensor(perm)
    T = len(perm)
    x = randn(2, T, D, seed=seed)
    mask = (torch.arange(T) < torch.tensor([[T], [max(1, T - 2)]]))[:, None, None, :] if padded else None
    with torch.no_grad():
        out, weights = _encoder()(x, mask)
        out_p, weights_p = _encoder()(x[:, perm], None if mask is None else mask[..., perm])
    close(out_p, out[:, perm])
    for w, w_p in zip(weights, weights_p, strict=True):
        close(w_p, w[:, :, perm][..., perm])


PERMUTATIONS = [[5, 4, 3, 2, 1, 0], [1, 0, 2, 3, 4, 5], [2, 3, 4, 5, 0, 1]]


@pytest.mark.parametrize("positions", ["none", "sinusoidal", "learned"])
def test_transformer_encoder_is_equivariant_only_without_positions(positions):
    model = small_transformer(positions)
    source, target = SOURCE[:1], TARGET[:1]
    with torch.no_grad():
        memory, weights = model.encode(source)
        logits = model(source, target).logits
        for perm in map(torch.tensor, PERMUTATIONS):
            memory_p, weights_p = model.encode(source[:, perm])
            out_p = model(source[:, perm], target)
            if positions == "none":
                close(memory_p, memory[:, perm])
                close(weights_p[-1], weights[-1][:, :, perm][..., perm])
                close(out_p.logits, logits)  # cross-attention reads the source as a set
                close(out_p.cross_attention[-1], model(source, target).cross_attention[-1][..., perm])
            else:
                assert (memory_p - memory[:, perm]).abs().max() > 1e-3
                assert (out_p.logits - logits).abs().max() > 1e-3


@pytest.mark.parametrize("positions", ["none", "sinusoidal", "learned"])
def test_bidirectional_language_model_is_equivariant_only_without_positions(positions):
    model = small_lm(positions, causal=False)
    tokens = torch.tensor([[3, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        out = model(tokens)
        for perm in map(torch.tensor, PERMUTATIONS):
            out_p = model(tokens[:, perm])
            if positions == "none":
                close(out_p.logits, out.logits[:, perm])
                for w, w_p in zip(out.attention, out_p.attention, strict=True):
                    close(w_p, w[:, :, perm][..., perm])
            else:
                assert (out_p.logits - out.logits[:, perm]).abs().max() > 1e-3


@given(st.permutations(range(6)))
@settings(max_examples=30)
def test_bidirectional_language_model_without_positions_permutation_property(perm):
    perm = torch.tensor(perm)
    model = _lm_without_positions()
    tokens = torch.tensor([[3, 4, 5, 6, 3, 10], [7, 8, 9, 0, 0, 0]])  # with a repeated token and padding
    with torch.no_grad():
        out = model(tokens)
        out_p = model(tokens[:, perm])
    close(out_p.logits, out.logits[:, perm])
    for w, w_p in zip(out.attention, out_p.attention, strict=True):
        close(w_p, w[:, :, perm][..., perm])


@functools.cache
def _lm_without_positions() -> LanguageModel:
    return small_lm("none", causal=False)


# ---------------------------------------------------------------- positional encodings


@pytest.mark.parametrize("d_model", [1, 2, 7, 16, 33])
def test_sinusoidal_positions_match_the_formula(d_model):
    T = 50
    table = sinusoidal_positions(T, d_model)
    assert table.shape == (T, d_model) and table.dtype == torch.float32
    expected = torch.empty(T, d_model, dtype=torch.float64)
    for pos in range(T):
        for i in range(d_model):
            angle = pos / 10000 ** ((i - i % 2) / d_model)  # the pair (2i, 2i+1) shares one frequency
            expected[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    close(table.double(), expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("d_model", [8, 16, 64])
def test_sinusoidal_dot_products_depend_only_on_the_offset(d_model):
    pe = sinusoidal_positions(40, d_model).double()
    gram = pe @ pe.T  # Σ_k cos(ω_k (i - j)): a Toeplitz matrix
    close(gram[1:, 1:], gram[:-1, :-1], atol=1e-4, rtol=0)
    close(gram.diagonal(), torch.full((40,), d_model / 2, dtype=torch.float64), atol=1e-4, rtol=0)
    close(gram, gram.T, atol=1e-12, rtol=0)


@pytest.mark.parametrize("module", [SinusoidalPositions, LearnedPositions])
def test_positional_modules_add_the_table_and_refuse_long_inputs(module):
    positions = module(6, max_len=5)
    x = randn(2, 5, 6)
    out = positions(x)
    close(out - x, positions.table[:5].expand(2, 5, 6).detach())
    if module is SinusoidalPositions:
        close(positions.table, sinusoidal_positions(5, 6), atol=0, rtol=0)
        assert not list(positions.parameters())
    else:
        assert [p.shape for p in positions.parameters()] == [(5, 6)]
    with pytest.raises(ValueError, match=r"length T=6 .*max_len=5"):
        positions(randn(2, 6, 6))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_model=6\), got \(2, 5, 4\)"):
        positions(randn(2, 5, 4))


def test_sinusoidal_positions_bad_sizes():
    with pytest.raises(ValueError, match="T must be a positive int, got 0"):
        sinusoidal_positions(0, 4)
    with pytest.raises(ValueError, match="d_model must be a positive int, got 2.5"):
        sinusoidal_positions(3, 2.5)


# ---------------------------------------------------------------- bad input


def test_multi_head_attention_bad_input():
    mha = MultiHeadAttention(8, 2)
    q, kv = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"query must have shape \(B, T, d_model=8\), got \(2, 3, 6\)"):
        mha(torch.randn(2, 3, 6), kv, kv)
    with pytest.raises(ValueError, match=r"key must have shape \(B, T, d_model=8\), got \(5, 8\)"):
        mha(q, kv[0], kv)
    with pytest.raises(ValueError, match=r"key and value must have the same \(B, Tk\).*\(2, 5, 8\).*\(2, 4, 8\)"):
        mha(q, kv, kv[:, :4])
    with pytest.raises(ValueError, match=r"same batch size B, got \(2, 3, 8\) and \(1, 5, 8\)"):
        mha(q, kv[:1], kv[:1])
    with pytest.raises(ValueError, match=r"mask must have shape .*\(3, 5\).*got \(3, 4\)"):
        mha(q, kv, kv, torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask must have shape .*got \(2, 3, 1, 5\)"):
        mha(q, kv, kv, torch.ones(2, 3, 1, 5, dtype=torch.bool))  # 3 heads, not 2
    with pytest.raises(ValueError, match=r"mask must have shape .*got \(5,\)"):
        mha(q, kv, kv, torch.ones(5, dtype=torch.bool))
    for dtype in (torch.float32, torch.int64, torch.uint8):
        with pytest.raises(ValueError, match=rf"mask must have dtype torch.bool .*got {dtype}"):
            mha(q, kv, kv, torch.ones(3, 5, dtype=dtype))
    with pytest.raises(ValueError, match="mask must be a bool torch.Tensor"):
        mha(q, kv, kv, [[True] * 5] * 3)


def test_a_wrong_3d_mask_is_reported_with_the_shape_it_was_given():
    # A 3-D mask is unsqueezed to (B, 1, Tq, Tk) for the check; the message must show the (2, 3, 4) it got.
    mha = MultiHeadAttention(8, 2)
    q, kv = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"mask must have shape .*, got \(2, 3, 4\)$"):
        mha(q, kv, kv, torch.ones(2, 3, 4, dtype=torch.bool))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_model": 10, "num_heads": 3}, "d_model=10 is not divisible by num_heads=3"),
        ({"num_heads": 0}, "num_heads must be a positive int, got 0"),
        ({"d_model": 0}, "d_model must be a positive int, got 0"),
        ({"dropout": 1.0}, r"dropout must be a probability in \[0, 1\), got 1.0"),
        ({"dropout": -0.1}, "dropout must be a probability"),
    ],
)
def test_multi_head_attention_bad_sizes(kwargs, message):
    args = {"d_model": 8, "num_heads": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**args)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"positions": "foo"}, r"positions must be one of \('sinusoidal', 'learned', 'none'\), got 'foo'"),
        ({"dropout": 1.0}, r"dropout must be a probability in \[0, 1\), got 1.0"),
        ({"num_heads": 0}, "num_heads must be a positive int, got 0"),
        ({"d_model": 10, "num_heads": 4}, "d_model=10 is not divisible by num_heads=4"),
        ({"num_layers": 0}, "num_layers must be a positive int"),
        ({"max_len": True}, "max_len must be a positive int, got True"),
        ({"pad": 11}, "pad=11 is not an id of a vocabulary"),
        ({"pad": 1.0}, "pad must be a token id"),
    ],
)
@pytest.mark.parametrize("config", [TransformerConfig, LanguageModelConfig])
def test_configs_reject_bad_fields(config, kwargs, message):
    with pytest.raises(ValueError, match=message):
        config(*((11, 11) if config is TransformerConfig else (11,)), **kwargs)


def test_bad_activation():
    with pytest.raises(ValueError, match=r"activation must be one of \['gelu', 'relu'\], got 'tanh'"):
        EncoderLayer(8, 2, 16, activation="tanh")


def test_transformer_bad_input():
    model = small_transformer()
    with pytest.raises(ValueError, match=r"source holds ids in \[0, 11\] but the vocabulary has 11"):
        model(torch.tensor([[0, 11]]), TARGET[:1])
    with pytest.raises(ValueError, match=r"target holds ids in \[-1, 5\] but the vocabulary has 13"):
        model(SOURCE[:1], torch.tensor([[-1, 5]]))
    with pytest.raises(ValueError, match=r"source \(2, 6\) and target \(1, 5\) must have the same batch size"):
        model(SOURCE, TARGET[:1])
    with pytest.raises(ValueError, match=r"source must be a \(B, T\) int64 tensor with T >= 1, got torch.float32"):
        model(SOURCE.float(), TARGET)
    with pytest.raises(ValueError, match=r"source must be a \(B, T\) int64 tensor with T >= 1"):
        model(SOURCE[:, :0], TARGET)
    with pytest.raises(ValueError, match=r"target must be a \(B, T\) int64 tensor.*\(5,\)"):
        model(SOURCE[0:1], TARGET[0])
    with pytest.raises(ValueError, match=r"length T=17 but the positional table holds max_len=16"):
        model(torch.full((1, 17), 4), TARGET[:1])
    with pytest.raises(ValueError, match=r"length T=17 but the positional table holds max_len=16"):
        model(SOURCE[:1], torch.full((1, 17), 4))
    small_transformer("none")(torch.full((1, 40), 4), torch.full((1, 40), 4))  # no table, no limit


def test_language_model_bad_input():
    model = small_lm()
    with pytest.raises(ValueError, match=r"tokens holds ids in \[3, 11\] but the vocabulary has 11"):
        model(torch.tensor([[3, 11]]))
    with pytest.raises(ValueError, match=r"length T=17 but the positional table holds max_len=16"):
        model(torch.full((1, 17), 4))
    assert model.generate(torch.full((1, 10), 4), 7).shape == (1, 17)  # the last token is never read back
    with pytest.raises(
        ValueError, match=r"a prompt of length 10 and steps=8 need 17 positions but the model has max_len=16"
    ):
        model.generate(torch.full((1, 10), 4), 8)
    with pytest.raises(ValueError, match="steps must be a positive int, got 0"):
        model.generate(torch.full((1, 3), 4), 0)
    with pytest.raises(ValueError, match=r"prompt holds ids"):
        model.generate(torch.full((1, 3), 11), 2)
    with pytest.raises(ValueError, match=r"generate needs a causal model \(config.causal=True\)"):
        small_lm(causal=False).generate(torch.full((1, 3), 4), 2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bos": -1}, "bos must be a target token id below 13, got -1"),
        ({"bos": 13}, "bos must be a target token id below 13, got 13"),
        ({"bos": True}, "bos must be a target token id below 13, got True"),
        ({"eos": 13}, "eos must be a target token id below 13, got 13"),
        ({"eos": 2.0}, "eos must be a target token id below 13, got 2.0"),
        ({"max_len": 0}, "max_len must be a positive int, got 0"),
        ({"max_len": 17}, r"max_len=17 is longer than the model's positional table \(max_len=16\)"),
    ],
)
def test_greedy_decode_bad_arguments(kwargs, message):
    args = {"bos": 1, "eos": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        small_transformer().greedy_decode(SOURCE, **args)


# ---------------------------------------------------------------- padding does not change the answer


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_a_sentence_gets_the_same_logits_alone_and_in_a_padded_batch(positions, norm_first, need_weights):
    model = small_transformer(positions, norm_first, seed=1)
    sources = [[4, 5, 6, 7, 8, 9, 10], [3, 10, 4], [7], [5, 5, 6, 2]]
    targets = [[1, 12, 5, 6], [1, 8, 9, 10, 11, 3], [1], [1, 2, 3]]
    source = torch.tensor([s + [0] * (7 - len(s)) for s in sources])
    target = torch.tensor([t + [0] * (6 - len(t)) for t in targets])
    with torch.no_grad():
        batch = model(source, target, need_weights=need_weights).logits
        for i, (s, t) in enumerate(zip(sources, targets, strict=True)):
            alone = model(torch.tensor([s]), torch.tensor([t]), need_weights=need_weights).logits[0]
            close(batch[i, : len(t)], alone)


def test_a_prompt_gets_the_same_logits_alone_and_in_a_right_padded_batch():
    model = small_lm(seed=1)
    prompts = [[3, 4, 5, 6, 7], [8, 9], [10, 3, 3]]
    tokens = torch.tensor([p + [0] * (5 - len(p)) for p in prompts])
    with torch.no_grad():
        batch = model(tokens).logits
        for i, p in enumerate(prompts):
            close(batch[i, : len(p)], model(torch.tensor([p])).logits[0])


# ---------------------------------------------------------------- greedy decoding


def _reference_greedy(model, source, bos, eos, steps):
    """One sentence at a time, re-reading the whole prefix each step; stops after eos."""
    prefix = torch.tensor([[bos]])
    for _ in range(steps):
        token = model(source, prefix).logits[:, -1].argmax(-1)
        prefix = torch.cat([prefix, token[:, None]], dim=1)
        if int(token) == eos:
            break
    return prefix[0, 1:].tolist()


def test_greedy_decode_equals_a_step_by_step_loop_and_pads_after_eos():
    model = small_transformer(seed=2)
    sources = [[4, 5, 6, 7, 8, 9], [3, 10, 4], [7, 9], [10, 9, 8, 7]]
    source = torch.tensor([s + [0] * (6 - len(s)) for s in sources])
    steps = 8
    with torch.no_grad():
        free = [_reference_greedy(model, torch.tensor([s]), 1, -1, steps) for s in sources]  # never stops
    # An eos that ends some sentences early and not others, so both the padding and the early stop show.
    stops = {}
    for eos in range(13):
        ends = [row.index(eos) + 1 if eos in row else steps for row in free]
        if min(ends) < steps and len(set(ends)) > 1:
            stops[eos] = ends
    assert stops, f"no usable eos in {free}"
    for eos, ends in stops.items():
        decoded = model.greedy_decode(source, bos=1, eos=eos, max_len=steps)
        assert decoded.dtype == torch.long and decoded.shape == (4, max(ends))
        for row, s, end, free_row in zip(decoded.tolist(), sources, ends, free, strict=True):
            with torch.no_grad():
                expected = _reference_greedy(model, torch.tensor([s]), 1, eos, steps)
            assert expected == free_row[:end]
            assert row == expected + [0] * (max(ends) - end)


def test_greedy_decode_stops_when_every_sentence_is_done():
    model = small_transformer(seed=3)
    with torch.no_grad():
        model.out.bias.fill_(-100.0)
        model.out.bias[5] = 100.0  # the model always says 5
    assert torch.equal(model.greedy_decode(SOURCE, bos=1, eos=5, max_len=10), torch.full((2, 1), 5))
    assert torch.equal(model.greedy_decode(SOURCE, bos=1, eos=2, max_len=4), torch.full((2, 4), 5))
    assert model.greedy_decode(SOURCE, bos=1, eos=2).shape == (2, 16)  # default: max_len of the model


@pytest.mark.parametrize("positions", ["sinusoidal", "none"])
def test_generate_equals_a_step_by_step_loop(positions):
    model = small_lm(positions, seed=4)
    prompt = torch.tensor([[3, 4, 5], [6, 6, 9]])
    generated = model.generate(prompt, 6)
    assert generated.shape == (2, 9) and torch.equal(generated[:, :3], prompt)
    expected = prompt
    with torch.no_grad():
        for _ in range(6):
            expected = torch.cat([expected, model(expected).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(generated, expected)
    for b in range(2):  # and one prompt at a time
        assert torch.equal(model.generate(prompt[b : b + 1], 6)[0], expected[b])


# ---------------------------------------------------------------- training


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


def test_fit_warms_the_learning_rate_up_linearly():
    # Adam's first steps with a constant gradient move a parameter by almost exactly the learning rate.
    model = nn.Module()
    model.w = nn.Parameter(torch.zeros(()))
    seen = []

    def loss_fn(m, step):
        seen.append(float(m.w.detach()))
        return m.w * 1.0  # gradient 1 every step

    fit(model, loss_fn, 8, lr=0.1, warmup=4, progress=False)
    seen.append(float(model.w.detach()))
    moves = [before - after for before, after in zip(seen, seen[1:], strict=False)]
    assert moves == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1, 0.1, 0.1, 0.1], abs=1e-6)
    seen.clear()
    model.w.data.zero_()
    fit(model, loss_fn, 3, lr=0.1, warmup=0, progress=False)  # no warmup: full steps at once
    seen.append(float(model.w.detach()))
    assert [a - b for a, b in zip(seen, seen[1:], strict=False)] == pytest.approx([0.1] * 3, abs=1e-6)


@pytest.mark.parametrize("warmup", [-1, 1.5, True])
def test_fit_rejects_a_bad_warmup(warmup):
    model = nn.Linear(1, 1)
    with pytest.raises(ValueError, match=r"warmup must be an int >= 0"):
        fit(model, lambda m, step: m.weight.sum(), 3, warmup=warmup, progress=False)


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


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_decoder_layer_eps_reaches_its_layer_norms(norm_first):
    layer = DecoderLayer(D, H, D_FF, eps=1e-3)
    assert layer.norm1.eps == layer.norm2.eps == layer.norm3.eps == 1e-3
    assert DecoderLayer(D, H, D_FF).norm3.eps == EncoderLayer(D, H, D_FF).norm2.eps == 1e-5  # the same default
    with pytest.raises(ValueError, match=r"eps must be a positive number"):
        DecoderLayer(D, H, D_FF, eps=0)
    # A large ε changes the output, and matches torch's layer built with the same layer_norm_eps.
    ours = randomize(DecoderLayer(D, H, D_FF, dropout=0.0, norm_first=norm_first, eps=0.5), 1).eval()
    theirs = nn.TransformerDecoderLayer(
        D, H, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first, layer_norm_eps=0.5
    ).eval()
    copy_layer(ours, theirs)
    x, memory = randn(B, 5, D, seed=2), randn(B, TK, D, seed=3)
    out, _, _ = ours(x, memory)
    close(out, theirs(x, memory))
    default = randomize(DecoderLayer(D, H, D_FF, dropout=0.0, norm_first=norm_first), 1).eval()
    assert not torch.allclose(out, default(x, memory)[0])
