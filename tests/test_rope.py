"""Rotary positions (RoPE, Su et al. 2021): the rotation against the paper's complex-multiplication form, the
relative-position property (a score depends on the two positions only through their offset), and the attention
layer that uses it."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attn.blocks import (
    MultiHeadAttention,
    RotaryMultiHeadAttention,
    rotary_positions,
    sinusoidal_positions,
)
from attn.masks import causal_mask


def complex_reference(x: torch.Tensor, start: int = 0, base: float = 10000.0) -> torch.Tensor:
    """Su et al. 2021, eq. 34 read as complex numbers (§3.2, eq. 12): pair i of position m is the complex number
    ``x_2i + i x_2i+1``, multiplied by ``e^{i m θ_i}`` with ``θ_i = base^(-2i/d)``; float64 throughout."""
    T, d = x.shape[-2:]
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())  # (..., T, d / 2)
    m = torch.arange(start, start + T, dtype=torch.float64)[:, None]  # (T, 1)
    theta = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)  # (d / 2,)
    turned = z * torch.polar(torch.ones(T, d // 2, dtype=torch.float64), m * theta)  # (..., T, d / 2)
    return torch.view_as_real(turned).flatten(-2)  # (..., T, d)


@given(
    st.integers(1, 3),
    st.integers(1, 12),
    st.integers(1, 16).map(lambda h: 2 * h),
    st.integers(0, 500),
    st.sampled_from([10000.0, 100.0, 2.5]),
    st.integers(0, 2**31 - 1),
)
@settings(max_examples=40, deadline=None)
def test_rotary_positions_is_the_complex_multiplication_of_the_paper(B, T, d, start, base, seed):
    x = torch.randn(B, T, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    assert torch.allclose(rotary_positions(x, start, base), complex_reference(x, start, base), atol=1e-9)


def test_rotary_positions_in_float32_agrees_with_the_float64_reference():
    x = torch.randn(2, 4, 50, 32, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(rotary_positions(x, start=100), complex_reference(x, start=100).float(), atol=2e-4)


def test_rotary_positions_keeps_norms_and_leaves_position_zero_alone():
    x = torch.randn(3, 9, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    turned = rotary_positions(x)
    assert torch.allclose(turned.norm(dim=-1), x.norm(dim=-1))  # a rotation
    assert torch.equal(turned[:, 0], x[:, 0])  # position 0: angle 0
    padded = torch.cat([torch.zeros(3, 4, 16, dtype=torch.float64), x], dim=1)  # x at positions 4, 5, ...
    assert torch.allclose(rotary_positions(x, start=4), rotary_positions(padded)[:, 4:])


def test_rotary_positions_turns_a_pair_by_the_sinusoids_angle():
    # The same frequencies as the sinusoidal table: (1, 0) at position m turns into (cos mθ_i, sin mθ_i),
    # the table's (sin, cos) pair read in the other order.
    T, d = 20, 8
    ones = torch.zeros(T, d, dtype=torch.float64)
    ones[:, 0::2] = 1.0
    turned = rotary_positions(ones)
    table = sinusoidal_positions(T, d).double()
    assert torch.allclose(turned[:, 0::2], table[:, 1::2], atol=1e-6)
    assert torch.allclose(turned[:, 1::2], table[:, 0::2], atol=1e-6)


@given(
    st.integers(1, 8).map(lambda h: 2 * h),
    st.integers(0, 300),
    st.integers(0, 300),
    st.integers(-50, 50),
    st.integers(0, 2**31 - 1),
)
@settings(max_examples=60, deadline=None)
def test_a_score_depends_on_the_positions_only_through_their_offset(d, m, n, shift, seed):
    """(R_m q) · (R_n k) = (R_{m+s} q) · (R_{n+s} k) for every shift s: Su et al. 2021, eq. 16."""
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(1, d, generator=g, dtype=torch.float64), torch.randn(1, d, generator=g, dtype=torch.float64)
    shift = max(shift, -min(m, n))  # positions stay >= 0

    def score(a: int, b: int) -> float:
        return float(rotary_positions(q, start=a)[0] @ rotary_positions(k, start=b)[0])

    assert math.isclose(score(m, n), score(m + shift, n + shift), rel_tol=1e-9, abs_tol=1e-9)
    # the score is that of the offset alone: (R_0 q) · (R_{n-m} k), or (R_{m-n} q) · (R_0 k)
    alone = score(0, n - m) if n >= m else score(m - n, 0)
    assert math.isclose(score(m, n), alone, rel_tol=1e-9, abs_tol=1e-9)


@given(st.integers(2, 24), st.integers(0, 2**31 - 1))
@settings(max_examples=20, deadline=None)
def test_scores_of_one_token_repeated_are_constant_along_every_diagonal(T, seed):
    # The check of chapter 7: the same token at every position, W_Q and W_K applied. With rotary positions the
    # scores depend on p - q alone; with the sinusoidal table added to the token, they do not.
    g = torch.Generator().manual_seed(seed)
    d, d_k = 16, 8
    token = torch.randn(d, generator=g, dtype=torch.float64)
    W_q, W_k = (
        torch.randn(d, d_k, generator=g, dtype=torch.float64),
        torch.randn(d, d_k, generator=g, dtype=torch.float64),
    )
    x = token.expand(T, d)  # (T, d)
    scores = rotary_positions(x @ W_q) @ rotary_positions(x @ W_k).T  # (T, T)
    for offset in range(-T + 1, T):
        diagonal = scores.diagonal(offset)
        assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal), atol=1e-9)


def test_the_sinusoidal_table_with_projections_is_not_relative():
    # The control of the test above: x_p = token + PE_p through W_Q and W_K is not constant along diagonals.
    g = torch.Generator().manual_seed(0)
    T, d, d_k = 24, 16, 8
    x = torch.randn(d, generator=g) + sinusoidal_positions(T, d)  # (T, d)
    W_q, W_k = torch.randn(d, d_k, generator=g), torch.randn(d, d_k, generator=g)
    scores = (x @ W_q) @ (x @ W_k).T
    spread = max(float(scores.diagonal(k).std()) for k in range(-T + 2, T - 1))
    assert spread > 0.1 * float(scores.abs().mean())


def test_rotary_attention_is_multi_head_attention_with_turned_queries_and_keys():
    torch.manual_seed(0)
    rotary, plain = RotaryMultiHeadAttention(16, 4).eval(), MultiHeadAttention(16, 4).eval()
    plain.load_state_dict(rotary.state_dict())
    x = torch.randn(2, 7, 16)
    out, weights = rotary(x, x, x, causal_mask(7))
    q = plain.W_q(x).view(2, 7, 4, 4).transpose(1, 2)  # (B, H, T, d_k)
    k = plain.W_k(x).view(2, 7, 4, 4).transpose(1, 2)
    v = plain.W_v(x).view(2, 7, 4, 4).transpose(1, 2)
    scores = rotary_positions(q) @ rotary_positions(k).transpose(-2, -1) / 2.0  # √d_k = 2
    want = scores.masked_fill(~causal_mask(7), -math.inf).softmax(-1)
    assert torch.allclose(weights, want, atol=1e-6)
    assert torch.allclose(out, plain.W_o((want @ v).transpose(1, 2).reshape(2, 7, 16)), atol=1e-6)
    # without the turn it is plain multi-head attention, which differs
    assert not torch.allclose(out, plain(x, x, x, causal_mask(7))[0], atol=1e-3)


def test_rotary_attention_sees_offsets_not_positions():
    # One token repeated: every query sees the same keys at the same offsets, so without a mask a causal
    # window of the same length gives the same weights wherever it starts.
    torch.manual_seed(1)
    layer = RotaryMultiHeadAttention(16, 2).eval()
    x = torch.randn(1, 1, 16).expand(1, 9, 16)
    _, weights = layer(x, x, x, causal_mask(9))  # (1, H, 9, 9)
    for t in range(2, 9):  # row t's last two weights (offsets 1 and 0) against row t's others: same scores
        assert torch.allclose(weights[0, :, t, t - 1] / weights[0, :, t, t], weights[0, :, 1, 0] / weights[0, :, 1, 1])


def test_extend_with_a_cache_gives_the_rows_of_the_full_pass():
    torch.manual_seed(2)
    layer = RotaryMultiHeadAttention(16, 4, num_kv_heads=2).eval()
    x = torch.randn(2, 8, 16)
    full, _ = layer(x, x, x, causal_mask(8))
    first, _, cache = layer.extend(x[:, :5], None, causal_mask(5))
    rest, weights, cache = layer.extend(x[:, 5:], cache, causal_mask(8)[5:])
    assert torch.allclose(torch.cat([first, rest], dim=1), full, atol=1e-6)
    assert len(cache) == 8 and tuple(weights.shape) == (2, 4, 3, 8)
    one, _, _ = layer.extend(x[:, :1])  # the next call starts from position 0 again
    assert torch.allclose(one, full[:, :1], atol=1e-6)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: rotary_positions(torch.zeros(3, 5)), "even number of features"),
        (lambda: rotary_positions(torch.zeros(4)), "at least 2 dimensions"),
        (lambda: rotary_positions(torch.zeros(2, 4, dtype=torch.long)), "floating-point"),
        (lambda: rotary_positions([[0.0, 1.0]]), "torch.Tensor"),
        (lambda: rotary_positions(torch.zeros(2, 4), start=-1), "start"),
        (lambda: rotary_positions(torch.zeros(2, 4), base=0.0), "base"),
        (lambda: RotaryMultiHeadAttention(12, 4), "d_k = d_model / num_heads = 12 / 4 = 3 must be even"),
        (lambda: RotaryMultiHeadAttention(16, 4, base=-1.0), "base"),
    ],
)
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()
