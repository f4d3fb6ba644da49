"""attn.blocks against torch's own layers and the properties attention must have: multi-head attention (its fused
path, dropout, weights that are distributions over the allowed keys), the encoder and decoder layers and LayerNorm,
an encoder without positions that is permutation-equivariant, the positional encodings, attention-only layers, and
bad input."""

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
from attn.masks import causal_mask
from attn.training import seeded

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


# ---------------------------------------------------------------- weights are distributions over the allowed keys


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


def test_bad_activation():
    with pytest.raises(ValueError, match=r"activation must be one of \['gelu', 'relu'\], got 'tanh'"):
        EncoderLayer(8, 2, 16, activation="tanh")
