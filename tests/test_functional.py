"""attn.functional against torch's own attention, gradcheck, and the properties attention must have."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import attn

ATOL = 1e-6


def qkv(*batch, Tq=5, Tk=7, d_k=8, d_v=4, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*batch, Tq, d_k, generator=g, dtype=dtype),
        torch.randn(*batch, Tk, d_k, generator=g, dtype=dtype),
        torch.randn(*batch, Tk, d_v, generator=g, dtype=dtype),
    )


# ---------------------------------------------------------------- softmax


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_softmax_is_stable_for_huge_logits(dtype):
    x = torch.tensor([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=dtype)
    p = attn.softmax(x)
    assert p.dtype == dtype
    assert torch.isfinite(p).all()
    torch.testing.assert_close(p.float(), torch.tensor([[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]]), atol=1e-2, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("temperature", [1e-6, 0.1, 3.0, 1e6])
def test_softmax_temperature_is_stable(dtype, temperature):
    x = torch.tensor([1e4, -1e4, 5.0, 1e4 - 64], dtype=dtype)
    p = attn.softmax(x, temperature=temperature)
    assert torch.isfinite(p).all() and float(p.float().sum()) == pytest.approx(1.0, abs=1e-2)


def test_softmax_matches_torch():
    x = torch.randn(4, 6, 9, generator=torch.Generator().manual_seed(1))
    for dim in (0, 1, -1):
        torch.testing.assert_close(attn.softmax(x, dim=dim), torch.softmax(x, dim=dim), atol=ATOL, rtol=0)
    torch.testing.assert_close(attn.softmax(x, temperature=0.5), torch.softmax(x / 0.5, -1), atol=ATOL, rtol=0)


def test_softmax_temperature_limits():
    x = torch.tensor([0.3, 2.0, -1.0, 1.9])
    torch.testing.assert_close(attn.softmax(x, temperature=1e-3), F.one_hot(x.argmax(), 4).float())
    torch.testing.assert_close(attn.softmax(x, temperature=1e5), torch.full((4,), 0.25), atol=1e-4, rtol=0)
    # Lower temperature, sharper distribution: the top weight grows monotonically.
    tops = [float(attn.softmax(x, temperature=t).max()) for t in (10.0, 1.0, 0.3, 0.1)]
    assert tops == sorted(tops)


def test_softmax_empty_row_is_zero_and_has_clean_gradient():
    x = torch.tensor([[float("-inf")] * 3, [0.0, float("-inf"), 1.0]], requires_grad=True)
    p = attn.softmax(x)
    assert torch.equal(p[0], torch.zeros(3))
    assert p[1, 1] == 0
    (p * torch.arange(3.0)).sum().backward()
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("temperature", [0, -1.0, float("inf"), float("nan"), "hot", True])
def test_softmax_rejects_bad_temperature(temperature):
    with pytest.raises(ValueError, match="temperature"):
        attn.softmax(torch.zeros(3), temperature=temperature)


def test_softmax_gradcheck():
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True, generator=torch.Generator().manual_seed(2))
    assert torch.autograd.gradcheck(lambda t: attn.softmax(t, temperature=0.7), (x,))


# ---------------------------------------------------------------- scores


def test_dot_and_cosine_scores():
    q, k, _ = qkv(2)
    torch.testing.assert_close(attn.dot_product_scores(q, k), torch.einsum("bqd,bkd->bqk", q, k))
    cos = attn.cosine_scores(q, k)
    ref = F.cosine_similarity(q[:, :, None, :], k[:, None, :, :], dim=-1)
    torch.testing.assert_close(cos, ref, atol=ATOL, rtol=0)
    # Cosine ignores length, the dot product does not.
    torch.testing.assert_close(attn.cosine_scores(q, 10 * k), cos, atol=ATOL, rtol=0)
    torch.testing.assert_close(attn.dot_product_scores(q, 10 * k), 10 * attn.dot_product_scores(q, k))


def test_additive_scores_match_the_loop_definition():
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 3, 5, generator=g), torch.randn(2, 4, 6, generator=g)
    W_q, W_k, v = torch.randn(7, 5, generator=g), torch.randn(7, 6, generator=g), torch.randn(7, generator=g)
    scores = attn.additive_scores(q, k, W_q, W_k, v)
    assert scores.shape == (2, 3, 4)
    for b in range(2):
        for i in range(3):
            for j in range(4):
                expected = v @ torch.tanh(W_q @ q[b, i] + W_k @ k[b, j])
                assert float(scores[b, i, j]) == pytest.approx(float(expected), abs=1e-5)


def test_additive_scores_bad_shapes():
    q, k = torch.randn(3, 5), torch.randn(4, 6)
    with pytest.raises(ValueError, match=r"W_k must have shape \(d_a, 6\).*got \(7, 5\)"):
        attn.additive_scores(q, k, torch.randn(7, 5), torch.randn(7, 5), torch.randn(7))
    with pytest.raises(ValueError, match="share d_a"):
        attn.additive_scores(q, k, torch.randn(7, 5), torch.randn(7, 6), torch.randn(8))


# ---------------------------------------------------------------- attention vs torch


@pytest.mark.parametrize("batch", [(), (2,), (2, 4)], ids=["unbatched", "batched", "heads"])
def test_sdpa_matches_torch_without_mask(batch):
    q, k, v = qkv(*batch)
    out, weights = attn.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=ATOL, rtol=0)
    assert weights.shape == (*batch, 5, 7)


@pytest.mark.parametrize("mask_shape", [(7,), (5, 7), (2, 1, 5, 7), (2, 4, 5, 7), (2, 1, 1, 7)])
def test_sdpa_matches_torch_with_boolean_mask(mask_shape):
    q, k, v = qkv(2, 4)
    mask = torch.rand(mask_shape, generator=torch.Generator().manual_seed(4)) > 0.3
    out, weights = attn.scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.expand(2, 4, 5, 7))  # torch wants >= 2-D
    has_key = mask.expand(2, 4, 5, 7).any(-1, keepdim=True)  # torch gives NaN or 0 there; we give 0
    torch.testing.assert_close(out, torch.where(has_key, ref, 0.0), atol=ATOL, rtol=0)
    assert torch.all(weights.masked_select(~mask.expand_as(weights)) == 0)


def test_sdpa_matches_torch_causal():
    q, k, v = qkv(3, 2, Tq=6, Tk=6)
    out, weights = attn.scaled_dot_product_attention(q, k, v, attn.causal_mask(6))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=ATOL, rtol=0)
    assert torch.all(weights.triu(diagonal=1) == 0)


def test_sdpa_custom_scale_matches_torch():
    q, k, v = qkv(2)
    out, _ = attn.scaled_dot_product_attention(q, k, v, scale=0.05)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, scale=0.05), atol=ATOL, rtol=0)


def test_sdpa_padding_mask_zero_weight_on_padding():
    q, k, v = qkv(3, Tq=4, Tk=6)
    lengths = torch.tensor([6, 3, 1])
    _, weights = attn.scaled_dot_product_attention(q, k, v, attn.padding_mask(lengths, 6)[:, None, :])
    for b, n in enumerate(lengths.tolist()):
        assert torch.all(weights[b, :, n:] == 0)
        torch.testing.assert_close(weights[b].sum(-1), torch.ones(4))


def test_fully_masked_rows_give_zero_weights_output_and_gradients():
    q, k, v = (t.requires_grad_() for t in qkv(2))
    mask = torch.ones(2, 5, 7, dtype=torch.bool)
    mask[0, 1] = False
    out, weights = attn.scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(weights[0, 1], torch.zeros(7)) and torch.equal(out[0, 1], torch.zeros(4))
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    assert torch.equal(q.grad[0, 1], torch.zeros(8))


def test_sdpa_gradcheck():
    q, k, v = (t.requires_grad_() for t in qkv(2, Tq=3, Tk=4, d_k=5, d_v=2, dtype=torch.float64))
    mask = torch.tensor([[True, True, False, True]])
    assert torch.autograd.gradcheck(lambda a, b, c: attn.scaled_dot_product_attention(a, b, c, mask)[0], (q, k, v))
    assert torch.autograd.gradcheck(lambda a, b, c: attn.scaled_dot_product_attention(a, b, c)[1], (q, k, v))


def test_gradients_match_torch():
    q, k, v = (t.requires_grad_() for t in qkv(2, 3))
    mask = attn.causal_mask(7)[:5]
    attn.scaled_dot_product_attention(q, k, v, mask)[0].square().sum().backward()
    ours = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask).square().sum().backward()
    for a, t in zip(ours, (q, k, v), strict=True):
        torch.testing.assert_close(a, t.grad, atol=1e-5, rtol=0)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda q, k, v: (q, k[..., :3], v), r"same d_k.*query \(2, 5, 8\).*key \(2, 7, 3\)"),
        (lambda q, k, v: (q, k, v[:, :6]), r"key has length Tk=7 but value has length 6"),
        (lambda q, k, v: (q, k, v, torch.ones(2, 5, 7)), r"mask must have dtype torch.bool.*float32"),
        (lambda q, k, v: (q, k, v, torch.ones(5, 6, dtype=torch.bool)), r"mask of shape \(5, 6\) does not"),
        (lambda q, k, v: (q, k, v, torch.ones(3, 2, 5, 7, dtype=torch.bool)), r"mask of shape \(3, 2, 5, 7\)"),
        (lambda q, k, v: (q[None].expand(3, 2, 5, 8), k[None, :, :1].expand(2, 2, 1, 8), v[:, :1]), r"batch"),
        (lambda q, k, v: (q[0, 0], k, v), r"query must have at least 2 dimensions, got shape \(8,\)"),
        (lambda q, k, v: (q.numpy(), k, v), r"query must be a torch.Tensor, got ndarray"),
        (lambda q, k, v: (q, k, v, None, float("nan")), r"scale must be a finite number"),
        (
            lambda q, k, v: (q, k, torch.zeros(3, 7, 8)),
            r"query \(2, 5, 8\), key \(2, 7, 8\) and value \(3, 7, 8\) do not broadcast",
        ),
    ],
)
def test_bad_input_names_argument_and_shapes(make, message):
    with pytest.raises(ValueError, match=message):
        attn.scaled_dot_product_attention(*make(*qkv(2)))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: attn.softmax(torch.tensor([1, 2, 3])), r"x must be a floating-point tensor, got dtype torch.int64"),
        (
            lambda: attn.softmax(torch.zeros(2, 3), dim=2),
            r"dim must be an int in \[-2, 1\] for x of shape \(2, 3\), got 2",
        ),
        (
            lambda: attn.scaled_dot_product_attention(torch.zeros(2, 3), torch.zeros(4, 3), torch.zeros(4, 2).double()),
            r"query, key and value must share a dtype, got query torch.float32, key torch.float32, value torch.float64",
        ),
        (lambda: attn.cosine_scores(torch.zeros(2, 3), torch.zeros(4, 3).half()), r"query and key must share a dtype"),
    ],
)
def test_bad_dtypes_and_dims(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_no_keys_at_all_gives_zero_output():
    out, weights = attn.scaled_dot_product_attention(torch.ones(2, 3), torch.ones(0, 3), torch.ones(0, 5))
    assert weights.shape == (2, 0) and torch.equal(out, torch.zeros(2, 5))


def test_temperature_may_be_a_one_element_tensor():
    x = torch.tensor([1.0, 2.0])
    torch.testing.assert_close(attn.softmax(x, temperature=torch.tensor(2.0)), attn.softmax(x, temperature=2.0))


def test_attend_rejects_value_of_wrong_length():
    with pytest.raises(ValueError, match=r"value has length Tk=3 but the scores cover Tk=4"):
        attn.attend(torch.zeros(2, 4), torch.zeros(3, 5))


# ---------------------------------------------------------------- properties


@st.composite
def attention_problem(draw):
    Tq, Tk, d_k, d_v = (draw(st.integers(1, n)) for n in (6, 8, 6, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    q, k, v = qkv(2, Tq=Tq, Tk=Tk, d_k=d_k, d_v=d_v, seed=seed)
    scale = draw(st.floats(0.1, 5.0))
    mask = torch.rand(2, Tq, Tk, generator=torch.Generator().manual_seed(seed)) < draw(st.floats(0.0, 1.0))
    return q * scale, k, v, mask


@given(attention_problem())
def test_rows_sum_to_one_or_zero_and_masked_weights_are_exactly_zero(problem):
    q, k, v, mask = problem
    out, weights = attn.scaled_dot_product_attention(q, k, v, mask)
    sums = weights.sum(-1)
    alive = mask.any(-1)
    torch.testing.assert_close(sums[alive], torch.ones_like(sums[alive]), atol=1e-5, rtol=0)
    assert torch.all(sums[~alive] == 0) and torch.all(out[~alive] == 0)
    assert torch.all(weights[~mask] == 0)
    assert torch.all(weights >= 0)


@given(attention_problem(), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_leaves_output_unchanged(problem, rng):
    q, k, v, mask = problem
    perm = torch.tensor(rng.sample(range(k.shape[-2]), k.shape[-2]))
    out, weights = attn.scaled_dot_product_attention(q, k, v, mask)
    out_p, weights_p = attn.scaled_dot_product_attention(q, k[:, perm], v[:, perm], mask[..., perm])
    torch.testing.assert_close(out_p, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights_p, weights[..., perm], atol=1e-6, rtol=0)


@given(attention_problem(), st.randoms(use_true_random=False))
def test_permuting_queries_permutes_output(problem, rng):
    q, k, v, mask = problem
    perm = torch.tensor(rng.sample(range(q.shape[-2]), q.shape[-2]))
    out, weights = attn.scaled_dot_product_attention(q, k, v, mask)
    out_p, weights_p = attn.scaled_dot_product_attention(q[:, perm], k, v, mask[:, perm])
    torch.testing.assert_close(out_p, out[:, perm], atol=1e-6, rtol=0)
    torch.testing.assert_close(weights_p, weights[:, perm], atol=1e-6, rtol=0)


@given(st.lists(st.floats(-50, 50), min_size=1, max_size=12), st.floats(0.05, 20.0))
def test_softmax_is_a_distribution_and_permutation_equivariant(values, temperature):
    x = torch.tensor(values)
    p = attn.softmax(x, temperature=temperature)
    assert torch.all(p >= 0) and math.isclose(float(p.sum()), 1.0, abs_tol=1e-5)
    perm = torch.randperm(len(values), generator=torch.Generator().manual_seed(len(values)))
    torch.testing.assert_close(attn.softmax(x[perm], temperature=temperature), p[perm])
    assert p[x.argmax()] == p.max()  # softmax is monotone: the largest logit gets the largest weight


# ---------------------------------------------------------------- more edge cases and references


def test_weights_match_a_masked_torch_softmax_reference():
    q, k, v = qkv(2, 3)
    mask = torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(5)) > 0.4
    _, weights = attn.scaled_dot_product_attention(q, k, v, mask)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(8)
    reference = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    alive = mask.expand_as(weights).any(-1)
    torch.testing.assert_close(weights[alive], reference[alive], atol=ATOL, rtol=0)


def test_all_true_mask_equals_no_mask():
    q, k, v = qkv(2, 3)
    no_mask = attn.scaled_dot_product_attention(q, k, v)
    all_true = attn.scaled_dot_product_attention(q, k, v, torch.ones(5, 7, dtype=torch.bool))
    for a, b in zip(no_mask, all_true, strict=True):
        assert torch.equal(a, b)


def test_tiny_temperature_gives_one_hot_not_nan():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        p = attn.softmax(torch.tensor([1.0, 2.0, 3.0], dtype=dtype), temperature=1e-50)
        assert torch.equal(p.float(), torch.tensor([0.0, 0.0, 1.0])), dtype


def test_tensor_temperature_is_differentiable():
    tau = torch.tensor(2.0, requires_grad=True)
    p = attn.softmax(torch.tensor([1.0, 2.0, 4.0]), temperature=tau)
    p[2].backward()
    assert tau.grad is not None and tau.grad < 0  # a hotter softmax gives the top score less weight
    with pytest.raises(ValueError, match="temperature must be a positive"):
        attn.softmax(torch.zeros(3), temperature=torch.tensor(-1.0))


def test_numpy_numbers_are_accepted():
    np = pytest.importorskip("numpy")
    x = torch.tensor([1.0, 2.0])
    torch.testing.assert_close(attn.softmax(x, temperature=np.float32(0.5)), attn.softmax(x, temperature=0.5))
    q, k, v = qkv()
    torch.testing.assert_close(
        attn.scaled_dot_product_attention(q, k, v, scale=np.int64(1))[0],
        attn.scaled_dot_product_attention(q, k, v, scale=1.0)[0],
    )


def test_plus_infinity_is_rejected():
    with pytest.raises(ValueError, match=r"x contains \+inf"):
        attn.softmax(torch.tensor([float("inf"), 1.0]))


def test_cosine_of_a_zero_vector_is_zero_in_half_precision():
    cos = attn.cosine_scores(torch.zeros(1, 4).half(), torch.ones(2, 4).half())
    assert torch.equal(cos, torch.zeros(1, 2, dtype=torch.float16))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: attn.scaled_dot_product_attention(torch.ones(3, 0), torch.ones(5, 0), torch.ones(5, 2)), "d_k >= 1"),
        (lambda: attn.scaled_dot_product_attention(*qkv(), scale=10**400), "scale must be a finite number"),
        (lambda: attn.scaled_dot_product_attention(*qkv(), scale="big"), "scale must be a real number, got str"),
        (lambda: attn.softmax(torch.zeros(3), dim=None), r"dim must be an int .* got None"),
        (lambda: attn.softmax(torch.zeros(3), dim=0.5), r"dim must be an int .* got 0.5"),
        (
            lambda: attn.scaled_dot_product_attention(*qkv(), torch.ones(5, 7, dtype=torch.bool, device="meta")),
            "mask is on meta but the scores are on cpu",
        ),
        (
            lambda: attn.additive_scores(
                torch.ones(3, 5), torch.ones(4, 6), torch.ones(7, 5).double(), torch.ones(7, 6), torch.ones(7)
            ),
            r"query, key, W_q, W_k and v must share a dtype",
        ),
    ],
)
def test_more_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Scores straight from hypothesis: ties, zeros, large magnitudes; several batch shapes; broadcast masks.
score_values = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 1e4, -1e4]), st.floats(-1e4, 1e4, width=32))


@st.composite
def scores_value_mask(draw):
    batch = draw(st.sampled_from([(), (1,), (3,), (2, 2)]))
    Tq, Tk, d_v = draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 3))
    shape = (*batch, Tq, Tk)
    n = math.prod(shape)
    scores = torch.tensor(draw(st.lists(score_values, min_size=n, max_size=n))).reshape(shape)
    value = torch.tensor(draw(st.lists(st.floats(-10, 10, width=32), min_size=Tk * d_v, max_size=Tk * d_v)))
    mask_shape = draw(st.sampled_from([(Tk,), (Tq, Tk), shape, (*batch, 1, Tk)]))
    mask = torch.tensor(draw(st.lists(st.booleans(), min_size=math.prod(mask_shape), max_size=math.prod(mask_shape))))
    return scores, value.reshape(Tk, d_v), mask.reshape(mask_shape)


@given(scores_value_mask())
def test_attend_properties_on_adversarial_scores(problem):
    scores, value, mask = problem
    out, weights = attn.attend(scores, value, mask)
    full_mask = mask.expand_as(scores)
    alive = full_mask.any(-1)
    assert torch.isfinite(weights).all() and torch.isfinite(out).all()
    assert torch.all(weights[~full_mask] == 0) and torch.all(weights >= 0)
    torch.testing.assert_close(weights.sum(-1)[alive], torch.ones_like(weights.sum(-1)[alive]), atol=1e-5, rtol=0)
    assert torch.all(weights.sum(-1)[~alive] == 0)
    reference = torch.softmax(scores.masked_fill(~full_mask, float("-inf")), dim=-1)
    torch.testing.assert_close(weights[alive], reference[alive], atol=1e-6, rtol=0)
    # Tied scores get tied weights.
    same = (scores.unsqueeze(-1) == scores.unsqueeze(-2)) & full_mask.unsqueeze(-1) & full_mask.unsqueeze(-2)
    assert torch.all((weights.unsqueeze(-1) == weights.unsqueeze(-2))[same])


@given(
    a=st.lists(st.sampled_from([1, 2, 3]), max_size=4),
    b=st.lists(st.sampled_from([1, 2, 3]), max_size=4),
)
def test_shape_broadcasting_agrees_with_torch(a, b):
    from attn._checks import broadcast_shapes

    try:
        expected = tuple(torch.broadcast_shapes(tuple(a), tuple(b)))
    except RuntimeError:
        expected = None
    assert broadcast_shapes(tuple(a), tuple(b)) == expected


def test_content_addressing_is_the_ntm_equation_written_out():
    g = torch.Generator().manual_seed(4)
    key, memory = torch.randn(3, 5, generator=g), torch.randn(3, 6, 5, generator=g)
    read, w = attn.content_addressing(key, memory, 3.0)
    for b in range(3):
        cos = torch.stack([F.cosine_similarity(key[b], row, dim=0) for row in memory[b]])
        expected = torch.exp(3.0 * cos) / torch.exp(3.0 * cos).sum()
        assert torch.allclose(w[b], expected, atol=1e-6)
        assert torch.allclose(read[b], expected @ memory[b], atol=1e-6)


def test_content_addressing_sharpness_runs_from_uniform_to_one_row():
    memory = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    _, uniform = attn.content_addressing(torch.tensor([1.0, 0.2]), memory, 0.0)
    assert torch.allclose(uniform, torch.full((3,), 1 / 3))
    _, sharp = attn.content_addressing(torch.tensor([1.0, 0.2]), memory, 200.0)
    assert sharp.argmax() == 0 and sharp[0] > 0.999
    beta = torch.tensor(2.0, requires_grad=True)  # a learned sharpness gets a gradient
    attn.content_addressing(torch.tensor([1.0, 0.2]), memory, beta)[1][0].backward()
    assert beta.grad is not None and beta.grad > 0


@given(st.floats(0, 50), st.integers(0, 1000))
def test_content_addressing_weights_sum_to_one(strength, seed):
    g = torch.Generator().manual_seed(seed)
    _, w = attn.content_addressing(torch.randn(4, generator=g), torch.randn(7, 4, generator=g), strength)
    assert torch.isclose(w.sum(), torch.tensor(1.0), atol=1e-5) and (w >= 0).all()


def test_content_addressing_rejects_bad_arguments():
    with pytest.raises(ValueError, match="strength must be >= 0, got -1"):
        attn.content_addressing(torch.ones(2), torch.ones(3, 2), -1)
    with pytest.raises(
        ValueError, match="strength must broadcast to the key's leading dimensions \\(\\), got shape \\(2,\\)"
    ):
        attn.content_addressing(torch.ones(2), torch.ones(3, 2), torch.ones(2))
    with pytest.raises(ValueError, match="strength must be finite and >= 0, got values from nan"):
        attn.content_addressing(torch.ones(2), torch.ones(3, 2), torch.tensor(float("nan")))
    with pytest.raises(ValueError, match=r"key and memory must have the same W, got key \(3,\) \(W=3\) and memory"):
        attn.content_addressing(torch.ones(3), torch.ones(3, 2), 1.0)


def test_dropout_changes_the_output_but_not_the_weights_returned():
    g = torch.Generator().manual_seed(0)
    scores, value = torch.randn(2, 5, 6, generator=g), torch.randn(2, 6, 3, generator=g)
    plain, weights = attn.attend(scores, value)
    torch.manual_seed(1)
    dropped, same_weights = attn.attend(scores, value, dropout=0.5)
    assert torch.equal(weights, same_weights)
    torch.manual_seed(1)
    kept = torch.nn.functional.dropout(weights, 0.5)  # the same draw: zeros, survivors scaled by 2
    assert torch.allclose(dropped, kept @ value) and not torch.allclose(dropped, plain)
    for bad in (-0.1, 1.0, True, "0.5"):
        with pytest.raises(ValueError, match="dropout must be a probability in"):
            attn.attend(scores, value, dropout=bad)


def test_checks_run_at_the_door_and_in_the_callers_code_never_in_the_librarys_loops():
    """A model's forward checks its input once; the attention of its layers runs unchecked; a user's hook inside
    that forward is the user's code, and what it calls is checked (attn._checks.checked)."""
    import sys

    from attn.transformer import LanguageModel, LanguageModelConfig

    calls = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "check_attention":
            calls.append(frame.f_code.co_name)

    model = LanguageModel(LanguageModelConfig(20, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=8))
    tokens = torch.randint(1, 20, (2, 5))
    sys.setprofile(profile)
    try:
        model(tokens)  # every layer's attention returns its weights: scaled_dot_product_attention, unchecked
        assert calls == []
        x = torch.randn(2, 3, 4)
        attn.scaled_dot_product_attention(x, x, x)  # called by the user: checked
        assert calls == ["check_attention"]
    finally:
        sys.setprofile(None)
    refused = []

    def hook(module, args):
        try:
            attn.softmax(args[0], temperature=-1.0)
        except ValueError as error:
            refused.append(str(error))

    model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(hook)
    model(tokens)
    assert refused == ["temperature must be a positive finite number, got -1.0"]
