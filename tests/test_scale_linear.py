"""Linear attention as a fast-weight memory (attn.scale.linear): the masked product equals the recurrence, the state
does not grow, and the delta rule overwrites."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn.scale.linear import (
    FastWeights,
    causal_linear_attention,
    chunked_linear_attention,
    decayed_linear_attention,
    delta_rule_attention,
    elu_feature_map,
    linear_attention_step,
    recurrent_linear_attention,
)


def _qkv(*batch, T=5, d_k=3, d_v=4, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*batch, T, d, generator=g, dtype=dtype) for d in (d_k, d_k, d_v))


def test_elu_feature_map_is_elu_plus_one_and_positive():
    x = torch.tensor([-1.0, 0.0, 2.0])
    assert torch.allclose(elu_feature_map(x), torch.tensor([1 / torch.e, 1.0, 3.0]))
    assert bool((elu_feature_map(x) > 0).all())
    assert elu_feature_map(torch.tensor([-30.0])) >= 0  # exp(-30) - 1 + 1 rounds to 0 in float32: the eps


@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    T=st.integers(1, 8),
    d_k=st.integers(1, 5),
    d_v=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    identity=st.booleans(),
)
def test_recurrence_equals_masked_product(batch, T, d_k, d_v, seed, identity):
    q, k, v = _qkv(*batch, T=T, d_k=d_k, d_v=d_v, seed=seed)
    feature_map = None if identity else elu_feature_map
    masked, weights = causal_linear_attention(q, k, v, feature_map=feature_map)
    recurrent, state = recurrent_linear_attention(q, k, v, feature_map=feature_map)
    assert masked.shape == recurrent.shape == (*batch, T, d_v) and weights.shape == (*batch, T, T)
    torch.testing.assert_close(recurrent, masked, atol=1e-10, rtol=1e-10)
    assert state.S.shape == (*batch, d_k, d_v) and state.z.shape == (*batch, d_k)


def test_recurrence_equals_masked_product_in_float32():
    q, k, v = _qkv(2, 3, T=40, d_k=8, d_v=6, dtype=torch.float32)
    masked, _ = causal_linear_attention(q, k, v)
    recurrent, _ = recurrent_linear_attention(q, k, v)
    torch.testing.assert_close(recurrent, masked, atol=1e-5, rtol=1e-5)


def test_weights_are_causal_and_rows_sum_to_one():
    q, k, v = _qkv(2, T=7)
    out, weights = causal_linear_attention(q, k, v)
    assert bool((weights >= 0).all())
    assert not weights.triu(1).any()  # nothing from the future
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 7, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(out, weights @ v)
    assert torch.allclose(out[..., 0, :], v[..., 0, :])  # the first token sees only itself


def test_identity_feature_map_is_the_unnormalised_masked_product():
    q, k, v = _qkv(T=6)
    out, weights = causal_linear_attention(q, k, v, feature_map=None)
    torch.testing.assert_close(weights, (q @ k.T).tril())
    torch.testing.assert_close(out, (q @ k.T).tril() @ v)


def test_a_row_without_mass_gets_zero_weights_not_nan():
    q, k, v = _qkv(T=4)
    q0 = -q.abs()  # relu(q0) = 0: no mass anywhere
    out, weights = causal_linear_attention(q0, k, v, feature_map=torch.relu)
    assert not weights.any() and not out.any() and not out.isnan().any()


def test_state_size_does_not_grow_with_T():
    shapes = set()
    for T in (1, 10, 200):
        _, state = recurrent_linear_attention(*_qkv(2, T=T))
        _, delta = delta_rule_attention(*_qkv(2, T=T), beta=0.5)
        shapes |= {(state.S.shape, state.z.shape), (delta.S.shape, delta.z.shape)}
    assert shapes == {(torch.Size([2, 3, 4]), torch.Size([2, 3]))}


def test_step_by_step_with_carried_state_equals_one_call():
    q, k, v = _qkv(2, T=9)
    whole, final = recurrent_linear_attention(q, k, v)
    state, steps = None, []
    for t in range(9):
        y, state = linear_attention_step(q[:, t], k[:, t], v[:, t], state)
        steps.append(y)
    torch.testing.assert_close(torch.stack(steps, 1), whole, atol=1e-12, rtol=0)
    first, state = recurrent_linear_attention(q[:, :4], k[:, :4], v[:, :4])
    rest, state = recurrent_linear_attention(q[:, 4:], k[:, 4:], v[:, 4:], state)
    torch.testing.assert_close(torch.cat([first, rest], 1), whole, atol=1e-12, rtol=0)
    torch.testing.assert_close(state.S, final.S)
    torch.testing.assert_close(state.z, final.z)


def test_delta_rule_in_pieces_equals_one_call():
    q, k, v = _qkv(3, T=8)
    beta = torch.rand(3, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    whole, final = delta_rule_attention(q, k, v, beta)
    first, state = delta_rule_attention(q[:, :5], k[:, :5], v[:, :5], beta[:, :5])
    rest, state = delta_rule_attention(q[:, 5:], k[:, 5:], v[:, 5:], beta[:, 5:], state)
    torch.testing.assert_close(torch.cat([first, rest], 1), whole, atol=1e-12, rtol=0)
    torch.testing.assert_close(state.S, final.S)


def test_empty_sequence_returns_an_empty_output_and_the_state():
    q, k, v = _qkv(2, T=0)
    out, state = recurrent_linear_attention(q, k, v)
    assert out.shape == (2, 0, 4) and not state.S.any()
    out, _ = delta_rule_attention(q, k, v, 1.0)
    assert out.shape == (2, 0, 4)


def _orthonormal(n, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.linalg.qr(torch.randn(d, n, generator=g, dtype=torch.float64)).Q.T  # (n, d)


def test_delta_rule_overwrites_where_linear_attention_adds():
    keys = _orthonormal(2, 4)  # k_a, k_b
    values = torch.eye(3, dtype=torch.float64)  # v1, v2, v3
    key = torch.stack([keys[0], keys[1], keys[0]])  # write a -> v1, b -> v2, a -> v3
    _, delta = delta_rule_attention(key, key, values, beta=1.0, feature_map=None)
    _, linear = recurrent_linear_attention(key, key, values, feature_map=None)
    torch.testing.assert_close(keys @ delta.S, torch.stack([values[2], values[1]]), atol=1e-12, rtol=0)
    torch.testing.assert_close(keys @ linear.S, torch.stack([values[0] + values[2], values[1]]), atol=1e-12, rtol=0)


@given(d=st.integers(1, 12), data=st.data())
def test_delta_rule_retrieves_exactly_from_orthonormal_keys(d, data):
    n = data.draw(st.integers(1, d))
    keys = _orthonormal(n, d, seed=data.draw(st.integers(0, 1000)))
    values = torch.randn(n, 3, dtype=torch.float64)
    out, state = delta_rule_attention(keys, keys, values, beta=1.0, feature_map=None)
    torch.testing.assert_close(out, values, atol=1e-10, rtol=0)  # each read right after its write
    torch.testing.assert_close(keys @ state.S, values, atol=1e-10, rtol=0)  # and all of them at the end


def test_delta_rule_beta_zero_writes_nothing_and_beta_may_vary_per_token():
    q, k, v = _qkv(2, T=5)
    out, state = delta_rule_attention(q, k, v, beta=0.0)
    assert not out.any() and not state.S.any()
    beta = torch.tensor([1.0, 0.0, 0.5, 0.25, 1.0], dtype=torch.float64)  # (T,) broadcasts over the batch
    out, _ = delta_rule_attention(q, k, v, beta)
    torch.testing.assert_close(out, delta_rule_attention(q, k, v, beta.expand(2, 5))[0])


def test_delta_rule_keys_and_queries_are_sum_normalised():
    q, k, v = _qkv(T=3)
    out, _ = delta_rule_attention(q, k, v, beta=1.0)
    scaled, _ = delta_rule_attention(q, k, v, beta=1.0, feature_map=lambda x: 7 * elu_feature_map(x))
    torch.testing.assert_close(out, scaled)  # φ and 7φ give the same normalised features


def test_gradients_flow_without_nan():
    q, k, v = (x.requires_grad_() for x in _qkv(2, T=6))
    beta = torch.full((2, 6), 0.7, dtype=torch.float64, requires_grad=True)
    loss = causal_linear_attention(q, k, v)[0].sum() + recurrent_linear_attention(q, k, v)[0].sum()
    loss = loss + delta_rule_attention(q, k, v, beta)[0].sum()
    loss.backward()
    for x in (q, k, v, beta):
        assert x.grad is not None and bool(torch.isfinite(x.grad).all()) and x.grad.abs().sum() > 0


def test_gradients_of_the_masked_product_and_the_recurrence_agree():
    q, k, v = _qkv(T=5)
    grads = []
    for attention in (causal_linear_attention, recurrent_linear_attention):
        inputs = [x.clone().requires_grad_() for x in (q, k, v)]
        (attention(*inputs)[0] ** 2).sum().backward()
        grads.append([x.grad for x in inputs])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


@given(
    T=st.integers(0, 12),
    chunk=st.integers(1, 14),
    seed=st.integers(0, 2**16),
    identity=st.booleans(),
)
def test_chunked_form_equals_the_masked_product_and_the_recurrence(T, chunk, seed, identity):
    q, k, v = _qkv(2, T=T, d_k=3, d_v=4, seed=seed)
    feature_map = None if identity else elu_feature_map
    chunked, state = chunked_linear_attention(q, k, v, chunk, feature_map=feature_map)
    recurrent, expected = recurrent_linear_attention(q, k, v, feature_map=feature_map)
    assert chunked.shape == (2, T, 4)
    torch.testing.assert_close(chunked, recurrent, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(state.S, expected.S, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(state.z, expected.z, atol=1e-10, rtol=1e-10)


def test_chunked_form_continues_from_a_state():
    q, k, v = _qkv(T=10)
    whole, _ = chunked_linear_attention(q, k, v, 4)
    first, state = chunked_linear_attention(q[:6], k[:6], v[:6], 4)
    rest, _ = chunked_linear_attention(q[6:], k[6:], v[6:], 3, state=state)
    torch.testing.assert_close(torch.cat([first, rest]), whole, atol=1e-12, rtol=1e-12)


def test_decay_one_is_linear_attention_and_a_decay_fades_old_writes():
    q, k, v = _qkv(2, T=8)
    for feature_map in (None, elu_feature_map):
        same, _ = decayed_linear_attention(q, k, v, 1.0, feature_map=feature_map)
        plain, _ = recurrent_linear_attention(q, k, v, feature_map=feature_map)
        torch.testing.assert_close(same, plain, atol=1e-12, rtol=1e-12)
    # S_T = Σ_j γ^(T-1-j) k_j v_jᵀ: the masked product with the weights scaled by γ^(i - j)
    gamma, T = 0.7, 8
    out, state = decayed_linear_attention(q, k, v, gamma, feature_map=None)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    fade = (gamma ** (i - j).clamp_min(0).double()).tril()  # (T, T)
    torch.testing.assert_close(out, ((q @ k.transpose(-2, -1)) * fade) @ v, atol=1e-12, rtol=1e-12)
    expected = (k.transpose(-2, -1) * fade[-1]) @ v  # (2, d_k, d_v)
    torch.testing.assert_close(state.S, expected, atol=1e-12, rtol=1e-12)


def test_a_decayed_sum_reads_a_rewritten_key_nearer_its_new_value():
    # one unit key written with v1, then with v2: the plain sum returns v1 + v2, the decayed one γ v1 + v2
    k = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    out, _ = decayed_linear_attention(k, k, v, 0.5, feature_map=None)
    torch.testing.assert_close(out[-1], torch.tensor([0.5, 1.0], dtype=torch.float64))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: decayed_linear_attention(*_qkv(), gamma=0.0), r"gamma must be a number in \(0, 1\], got 0.0"),
        (lambda: decayed_linear_attention(*_qkv(), gamma=1.5), r"gamma must be a number in \(0, 1\], got 1.5"),
        (lambda: decayed_linear_attention(*_qkv(), gamma=True), r"gamma must be a number in \(0, 1\], got True"),
        (lambda: chunked_linear_attention(*_qkv(), chunk=0), "chunk must be a positive int, got 0"),
        (lambda: chunked_linear_attention(*_qkv(), chunk=2.0), "chunk must be a positive int, got 2.0"),
        (lambda: chunked_linear_attention(_qkv(T=4)[0], *_qkv()[1:], chunk=2), r"same length T"),
        (lambda: causal_linear_attention([1.0], *_qkv()[1:]), "query must be a torch.Tensor, got list"),
        (lambda: causal_linear_attention(*_qkv()[:2], torch.ones(5, 2, dtype=torch.long)), "value must be a float"),
        (lambda: causal_linear_attention(torch.ones(4), *_qkv()[1:]), r"query must have at least 2 dim.*\(4,\)"),
        (
            lambda: causal_linear_attention(_qkv(d_k=2)[0], *_qkv()[1:]),
            r"query and key must share d_k.*\(5, 2\).*\(5, 3\)",
        ),
        (lambda: causal_linear_attention(_qkv(T=4)[0], *_qkv()[1:]), r"same length T.*\(4, 3\), key \(5, 3\)"),
        (lambda: causal_linear_attention(_qkv()[0].float(), *_qkv()[1:]), "must share a dtype, got torch.float32"),
        (lambda: causal_linear_attention(_qkv(2)[0], _qkv(3)[1], _qkv(2)[2]), r"batch\) dim.*\(2, 5, 3\).*\(3, 5, 3\)"),
        (lambda: causal_linear_attention(*_qkv(), eps=0), "eps must be a positive finite number, got 0"),
        (lambda: causal_linear_attention(*_qkv(), feature_map=3), "feature_map must be a callable or None, got int"),
        (lambda: causal_linear_attention(*_qkv(), feature_map=lambda x: x.sum(-1)), r"feature_map must map query"),
        (lambda: recurrent_linear_attention(*_qkv(), state="S"), "state must be a FastWeights or None, got str"),
        (
            lambda: recurrent_linear_attention(*_qkv(), state=FastWeights(torch.zeros(3, 5), torch.zeros(3))),
            r"state must have S \(\.\.\., 3, 4\) and z \(\.\.\., 3\).*got S \(3, 5\)",
        ),
        (
            lambda: recurrent_linear_attention(*_qkv(), state=FastWeights(torch.zeros(3, 4), torch.zeros(3))),
            "must share the dtype torch.float64",
        ),
        (lambda: linear_attention_step(None, *_qkv()[1:]), "q_t must be a torch.Tensor, got NoneType"),
        (lambda: linear_attention_step(torch.ones(3), torch.ones(2), torch.ones(4)), r"q_t and k_t must share d_k"),
        (lambda: delta_rule_attention(*_qkv(), beta=1.5), r"beta must be in \[0, 1\], got values from 1.5 to 1.5"),
        (lambda: delta_rule_attention(*_qkv(), beta=float("nan")), r"beta must be in \[0, 1\]"),
        (
            lambda: delta_rule_attention(*_qkv(), beta=torch.ones(4)),
            r"one value per token, shape \(5,\), got shape \(4,\)",
        ),
        (lambda: delta_rule_attention(*_qkv(), beta="1"), "beta must be a number or a tensor of shape"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
