"""Attributions (attn.analysis) on toy answer functions whose right answers are known by hand, Jain & Wallace's
counterfactual attention on toy readouts, and the answer functions of the memory network, the translator and the
ViT (attn.memn2n.explain, attn.seq2seq.explain, attn.vision.explain) against their models' own forward passes."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attn.analysis import (
    MapScores,
    adversarial_attention,
    attention_x_gradient,
    average_precision,
    decision_flip,
    deletion_area,
    deletion_curve,
    gradient_x_input,
    js_divergence,
    map_order,
    mass_on_truth,
    occlusion,
    permuted_attention,
    random_map,
    rank_of_truth,
    score_map,
    total_variation,
)
from attn.data.babi import BabiTensors
from attn.data.scenes import make_scenes
from attn.data.translation import Batch
from attn.memn2n import MemN2N, MemN2NConfig
from attn.memn2n.explain import answer_distribution, answer_probability, supporting_mask
from attn.seq2seq import Seq2Seq, Seq2SeqConfig
from attn.seq2seq.explain import word_attention, word_probability
from attn.training import seeded
from attn.vision import ViT, ViTConfig
from attn.vision import explain as vision_explain


def close(actual, expected, atol=1e-6, rtol=1e-6):
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


def lengths_mask(lengths, N):
    """``(B, N)`` bool: the first ``lengths[b]`` elements of row b."""
    return torch.arange(N)[None, :] < torch.as_tensor(lengths)[:, None]


def random_valid(B, N, g):
    """A ``(B, N)`` mask of real elements: a random length in [1, N] per row (padding at the end)."""
    return lengths_mask(torch.randint(1, N + 1, (B,), generator=g), N)


def distributions(B, N, g, dtype=torch.float64, sharp=2.0):
    return (torch.randn(B, N, generator=g, dtype=dtype) * sharp).softmax(-1)


def padding_free(answer, valid):
    """``answer`` that also checks it is never asked to keep a padded element."""

    def checked(scale):
        assert scale.shape == valid.shape and scale.dtype == torch.float32
        assert not scale[~valid].any(), "a padded element was kept"
        return answer(scale)

    return checked


# ---------------------------------------------------------------- occlusion and gradient x input


@given(st.integers(1, 4), st.integers(1, 6), st.data())
def test_occlusion_is_nonzero_only_at_the_one_element_the_answer_reads(B, N, data):
    k = data.draw(st.integers(0, N - 1))
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 2**16)))
    x = torch.zeros(B, N, 3)
    x[:, k] = torch.randn(B, 3, generator=g) + 3.0  # only element k carries anything
    w = torch.rand(3, generator=g) + 0.5
    valid = lengths_mask(torch.full((B,), N), N)

    def answer(scale):  # sigmoid(w . Σ_i scale_i x_i): reads element k only
        return torch.sigmoid(((scale[..., None] * x) * w).sum((-1, -2)) - 1.0)

    drops = occlusion(padding_free(answer, valid), valid)
    assert drops.shape == (B, N)
    others = torch.arange(N) != k
    assert torch.equal(drops[:, others], torch.zeros(B, N - 1))
    close(drops[:, k], answer(torch.ones(B, N)) - answer(torch.ones(B, N) * others))
    assert bool((drops[:, k] > 0).all())  # the answer needs element k


@settings(max_examples=30)
@given(st.integers(1, 4), st.integers(1, 7), st.integers(1, 3), st.integers(0, 2**16), st.floats(-3, 3))
def test_gradient_x_input_and_occlusion_of_a_linear_answer_are_w_times_x(B, N, D, seed, bias):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, N, D, generator=g, dtype=torch.float64) * 2
    w = torch.randn(N, D, generator=g, dtype=torch.float64)
    valid = random_valid(B, N, g)

    def answer(scale):  # Σ_i w_i . (scale_i x_i) + b: linear in each element's scale
        return ((scale[..., None] * x) * w).sum((-1, -2)) + bias

    expected = (w * x).sum(-1) * valid  # (B, N): w_i . x_i at the real elements, 0 at padding
    grad = gradient_x_input(padding_free(answer, valid), valid)
    assert grad.shape == (B, N)
    close(grad, expected.float(), atol=1e-5, rtol=1e-5)  # the scale is float32: so is its gradient
    close(occlusion(padding_free(answer, valid), valid), expected, atol=1e-12, rtol=1e-12)


def test_gradient_x_input_is_zero_at_padding_even_where_the_answer_would_use_it():
    valid = torch.tensor([[True, True, False]])
    grad = gradient_x_input(lambda scale: (scale * torch.tensor([1.0, 2.0, 3.0])).sum(-1), valid)
    assert torch.equal(grad, torch.tensor([[1.0, 2.0, 0.0]]))


# ---------------------------------------------------------------- attention x gradient


def test_attention_x_gradient_is_the_positive_part_of_a_times_its_gradient():
    g = torch.Generator().manual_seed(0)
    A = distributions(3, 5, g, dtype=torch.float32).requires_grad_(True)
    v = torch.randn(5, generator=g)
    p = torch.sigmoid((A * v).sum(-1))  # (B,)
    by_hand = (A * (p * (1 - p))[:, None] * v).clamp(min=0)  # dp/dA_i = p (1 - p) v_i
    relevance = attention_x_gradient(A, p)
    assert isinstance(relevance, torch.Tensor) and not relevance.requires_grad
    close(relevance, by_hand.detach())
    assert bool((relevance >= 0).all()) and bool((relevance == 0).any())  # negative products clamped
    close(attention_x_gradient(A, p), relevance)  # the graph is kept: it may be asked again


def test_attention_x_gradient_takes_a_list_and_gives_zeros_to_unused_weights():
    g = torch.Generator().manual_seed(1)
    A1, A2, unused = (distributions(2, 4, g, dtype=torch.float32).requires_grad_(True) for _ in range(3))
    v1, v2 = torch.randn(4, generator=g), torch.randn(4, generator=g)
    p = torch.sigmoid((A1 * v1).sum(-1) * (A2 * v2).sum(-1))
    s = (p * (1 - p))[:, None]
    expected = [
        (A1 * s * v1 * (A2 * v2).sum(-1, keepdim=True)).clamp(min=0).detach(),
        (A2 * s * v2 * (A1 * v1).sum(-1, keepdim=True)).clamp(min=0).detach(),
        torch.zeros(2, 4),
    ]
    for weights in ([A1, A2, unused], (A1, A2, unused)):
        relevance = attention_x_gradient(weights, p)
        assert isinstance(relevance, list) and len(relevance) == 3
        for got, want in zip(relevance, expected, strict=True):
            close(got, want)
    close(attention_x_gradient([A1], p)[0], expected[0])  # a one-element list gives a list


@pytest.mark.parametrize(
    "weights, probability, match",
    [
        (torch.full((2, 3), 1 / 3), torch.zeros(2), "weights must be attention tensors on the graph"),
        ([torch.full((2, 3), 1 / 3)], torch.zeros(2), "weights must be attention tensors on the graph"),
        ([], torch.zeros(2), "weights must be attention tensors"),
        ("weights", torch.zeros(2), "weights must be attention tensors"),
        ([torch.ones(2, 3, requires_grad=True), "x"], torch.zeros(2), "weights must be attention tensors"),
        (torch.ones(2, 3, requires_grad=True), torch.zeros(3), r"probability must be \(B,\) = \(2,\)"),
        (torch.ones(2, 3, requires_grad=True), torch.zeros(2, 1), "probability must be"),
        (torch.ones(2, 3, requires_grad=True), [0.5, 0.5], "probability must be"),
    ],
)
def test_attention_x_gradient_errors(weights, probability, match):
    with pytest.raises(ValueError, match=match):
        attention_x_gradient(weights, probability)


# ---------------------------------------------------------------- deletion


def one_element_answer(k, low=0.1, high=0.9):
    """p = low + (high - low) scale_k: only element k matters."""
    return lambda scale: low + (high - low) * scale[:, k]


def test_deletion_curve_starts_at_the_full_answer_and_a_perfect_map_drops_at_once():
    valid = torch.tensor([[True] * 5, [True, True, True, False, False]])
    k = 1
    answer = padding_free(one_element_answer(k), valid)
    perfect = torch.zeros(2, 5)
    perfect[:, k] = 1.0
    curve = deletion_curve(answer, map_order(perfect, valid), valid)
    assert curve.shape == (2, 6)
    close(curve[:, 0], answer(valid.float()))
    close(curve, torch.tensor([[0.9] + [0.1] * 5] * 2))  # drops at step 1; padded steps keep the value
    worst = deletion_curve(answer, map_order(-perfect, valid), valid)  # element k removed last among the real
    close(worst, torch.tensor([[0.9] * 5 + [0.1], [0.9] * 3 + [0.1] * 3]))
    # the area over each row's own n real elements, as a fraction of the full probability
    close(deletion_area(curve, valid), torch.tensor([(0.5 + 0.1 * 4) / 5, (0.5 + 0.1 * 2) / 3]) / 0.9)
    close(deletion_area(worst, valid), torch.tensor([(0.9 * 4 + 0.5) / 5, (0.9 * 2 + 0.5) / 3]) / 0.9)
    assert bool((deletion_area(curve, valid) < deletion_area(worst, valid)).all())


@given(st.integers(1, 4), st.integers(1, 6), st.floats(1e-3, 1.0), st.integers(0, 2**16))
def test_deletion_area_of_a_constant_curve_is_one(B, N, value, seed):
    valid = random_valid(B, N, torch.Generator().manual_seed(seed))
    close(deletion_area(torch.full((B, N + 1), value), valid), torch.ones(B))


def test_deletion_area_refuses_what_is_not_a_fraction_of_the_full_answer():
    """A full answer of probability 0 has no fraction (it used to be divided by the smallest float: areas of 1e37);
    values outside [0, 1] or NaN are not a deletion curve."""
    valid = torch.ones(1, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"probability with every element kept is 0 in rows \[0\]"):
        deletion_area(torch.tensor([[0.0, 0.5, 0.2, 0.1]]), valid)
    for bad in (torch.tensor([[0.5, 1.5, 0.2, 0.1]]), torch.tensor([[0.5, float("nan"), 0.2, 0.1]])):
        with pytest.raises(ValueError, match=r"curve must hold probabilities in \[0, 1\]"):
            deletion_area(bad, valid)


@given(st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**16))
def test_deletion_curve_removes_every_real_element_once_in_map_order(B, N, seed):
    g = torch.Generator().manual_seed(seed)
    valid = random_valid(B, N, g)
    weights = torch.rand(N, generator=g) + 0.1
    scores = random_map(valid, g)

    def answer(scale):  # the share of the weight still kept: the curve shows exactly what was removed
        return (scale * weights).sum(-1) / (valid * weights).sum(-1)

    order = map_order(scores, valid)
    curve = deletion_curve(padding_free(answer, valid), order, valid)
    n = valid.sum(-1)
    for b in range(B):
        removed = weights[order[b, : int(n[b])]].cumsum(0) / (valid[b] * weights).sum()
        close(curve[b, 1 : int(n[b]) + 1], 1 - removed)
        close(curve[b, int(n[b]) :], torch.zeros(N + 1 - int(n[b])), atol=1e-6, rtol=0)


def test_decision_flip_is_the_share_removed_when_the_decision_first_changes():
    # row 0: 4 real elements, the decision changes once element 2 is gone (third in the order): 3 / 4;
    # row 1: 2 real elements, it never changes: 1; row 2: it changes at the first removal: 1 / 3
    valid = torch.tensor([[True] * 4, [True, True, False, False], [True, True, True, False]])
    order = torch.tensor([[0, 1, 2, 3], [1, 0, 2, 3], [2, 1, 0, 3]])
    calls = []

    def decides(scale):
        calls.append(scale.clone())
        assert not scale[~valid].any(), "a padded element was kept"
        return torch.stack([scale[0, 2] > 0, torch.tensor(True), scale[2, 2] > 0])

    close(decision_flip(decides, order, valid), torch.tensor([0.75, 1.0, 1 / 3]))
    assert len(calls) == 4  # one removal per call, up to the longest row's n (row 1 never changes)
    close(calls[0], torch.tensor([[0.0, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0]]))


def test_decision_flip_stops_once_every_decision_has_changed():
    valid = torch.ones(2, 6, dtype=torch.bool)
    calls = []

    def decides(scale):
        calls.append(1)
        return scale[:, 0] > 0  # changes when element 0 goes

    order = torch.tensor([[0, 1, 2, 3, 4, 5], [1, 0, 2, 3, 4, 5]])
    close(decision_flip(decides, order, valid), torch.tensor([1 / 6, 2 / 6]))
    assert len(calls) == 2
    with pytest.raises(ValueError, match="bools"):
        decision_flip(lambda s: s[:, 0], order, valid)
    with pytest.raises(ValueError, match="order must be"):
        decision_flip(decides, order.float(), valid)


# ---------------------------------------------------------------- agreement with the truth


def test_map_order_ranks_descending_ties_in_order_and_padding_last():
    valid = torch.tensor([[True, True, True, True, False], [True, True, False, False, False]])
    scores = torch.tensor([[0.1, 0.5, 0.1, 0.7, 9.0], [0.0, 0.0, 5.0, 5.0, 5.0]])
    assert map_order(scores, valid).tolist() == [[3, 1, 0, 2, 4], [0, 1, 2, 3, 4]]


def test_random_map_is_uniform_at_real_elements_zero_at_padding_and_seeded():
    valid = lengths_mask([3, 1, 5], 5)
    scores = random_map(valid, torch.Generator().manual_seed(4))
    assert bool(((scores >= 0) & (scores < 1)).all()) and bool((scores[~valid] == 0).all())
    assert bool((scores[valid] > 0).all())
    assert torch.equal(scores, random_map(valid, torch.Generator().manual_seed(4)))


def test_mass_and_rank_of_truth_on_hand_examples():
    valid = torch.tensor([[True] * 4, [True] * 4, [True, True, True, False], [True] * 4, [True] * 4])
    truth = torch.tensor(
        [
            [False, True, False, False],
            [False, False, True, False],  # a flat map: the truth ties with every other element
            [False, False, True, False],  # padding scores high: it counts for neither
            [True, False, False, True],  # two true elements: the better one is ranked
            [False, True, False, False],  # no positive mass at all
        ]
    )
    scores = torch.tensor(
        [
            [0.5, 0.3, 0.2, 0.0],
            [1.0, 1.0, 1.0, 1.0],
            [0.2, -0.4, 0.2, 9.0],
            [0.1, 0.4, 0.3, 0.2],
            [-1.0, -2.0, 0.0, -3.0],
        ]
    )
    close(mass_on_truth(scores, truth, valid), torch.tensor([0.3, 0.25, 0.5, 0.3 / 1.0, 0.0]))
    assert rank_of_truth(scores, truth, valid).tolist() == [2, 4, 2, 3, 3]  # ties count against the map


def test_a_perfect_map_has_all_its_mass_on_the_truth_and_ranks_it_first():
    g = torch.Generator().manual_seed(2)
    valid = random_valid(6, 7, g)
    truth = (torch.rand(6, 7, generator=g) < 0.3) & valid
    truth[:, 0] = True
    perfect = truth.float() * (torch.rand(6, 7, generator=g) + 0.5)
    close(mass_on_truth(perfect, truth, valid), torch.ones(6))
    assert torch.equal(rank_of_truth(perfect, truth, valid), torch.ones(6, dtype=torch.long))
    flat = valid.float()
    n_false = (valid & ~truth).sum(-1)
    assert torch.equal(rank_of_truth(flat, truth, valid), n_false + 1)  # last among the real elements


def test_score_map_averages_the_agreement_and_deletion_scores():
    g = torch.Generator().manual_seed(8)
    valid = random_valid(5, 6, g)
    truth = lengths_mask(torch.ones(5, dtype=torch.long), 6)  # element 0, real in every row
    answer = padding_free(one_element_answer(0), valid)
    scores = random_map(valid, g)
    result = score_map(answer, scores, truth, valid)
    assert isinstance(result, MapScores)
    rank = rank_of_truth(scores, truth, valid).float()
    curve = deletion_curve(answer, map_order(scores, valid), valid)
    assert result.mass == pytest.approx(float(mass_on_truth(scores, truth, valid).mean()))
    assert result.rank == pytest.approx(float(rank.mean()))
    assert result.top1 == pytest.approx(float((rank == 1).float().mean()))
    assert result.deletion == pytest.approx(float(deletion_area(curve, valid).mean()))
    close(result.curve, curve.mean(0))
    perfect = score_map(answer, truth.float(), truth, valid)
    assert (perfect.mass, perfect.rank, perfect.top1) == (1.0, 1.0, 1.0)
    assert perfect.deletion <= result.deletion


# ---------------------------------------------------------------- total variation and Jensen-Shannon


pairs = st.tuples(st.integers(1, 4), st.integers(1, 8), st.integers(0, 2**16), st.floats(0.1, 6.0))


@given(pairs)
def test_total_variation_and_js_divergence_are_symmetric_bounded_and_zero_on_equal(args):
    B, N, seed, sharp = args
    g = torch.Generator().manual_seed(seed)
    p, q = distributions(B, N, g, sharp=sharp), distributions(B, N, g, sharp=sharp)
    for f, top in ((total_variation, 1.0), (js_divergence, math.log(2))):
        close(f(p, q), f(q, p), atol=1e-12, rtol=1e-12)
        close(f(p, p), torch.zeros(B, dtype=torch.float64), atol=1e-12, rtol=0)
        assert bool((f(p, q) >= -1e-12).all()) and bool((f(p, q) <= top + 1e-12).all())
    assert bool((js_divergence(p, q) <= math.log(2) * total_variation(p, q) + 1e-12).all())  # JSD <= TVD log 2


@given(st.integers(2, 8), st.integers(0, 2**16))
def test_disjoint_distributions_are_one_apart_and_log_2_apart(N, seed):
    g = torch.Generator().manual_seed(seed)
    split = int(torch.randint(1, N, (1,), generator=g))
    p = torch.cat([torch.rand(split, generator=g, dtype=torch.float64) + 0.1, torch.zeros(N - split)])
    q = torch.cat([torch.zeros(split), torch.rand(N - split, generator=g, dtype=torch.float64) + 0.1])
    p, q = p / p.sum(), q / q.sum()
    close(total_variation(p, q), torch.tensor(1.0, dtype=torch.float64))
    close(js_divergence(p, q), torch.tensor(math.log(2), dtype=torch.float64))


def test_js_divergence_against_its_definition_and_its_gradient_at_exact_zeros():
    p = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.7, 0.2, 0.1, 0.0]], requires_grad=True)
    q = torch.tensor([[0.0, 0.0, 1.0, 0.0], [0.1, 0.2, 0.3, 0.4]])
    m = (p.detach() + q) / 2

    def kl(a, b):
        return sum(float(x) * math.log(float(x) / float(y)) for x, y in zip(a, b, strict=True) if x > 0)

    expected = torch.tensor([(kl(p[i].detach(), m[i]) + kl(q[i], m[i])) / 2 for i in range(2)])
    jsd = js_divergence(p, q)
    close(jsd, expected)
    (grad,) = torch.autograd.grad(jsd.sum(), p)
    assert bool(torch.isfinite(grad).all())  # 0 log 0 = 0, with a finite gradient (also where both are 0)
    close(grad[1, :3], 0.5 * (p[1, :3] / m[1, :3]).log().detach())  # d JSD / d p_i = ½ log(p_i / m_i), p_i > 0


# ---------------------------------------------------------------- Jain & Wallace's counterfactual attention


def test_permuted_attention_keeps_each_rows_real_weights_and_its_padding():
    g = torch.Generator().manual_seed(3)
    valid = lengths_mask([5, 3, 1], 5)
    weights = distributions(3, 5, g, dtype=torch.float32).masked_fill(~valid, 0.0)
    weights = weights / weights.sum(-1, keepdim=True)
    seen = []

    def readout(a):
        seen.append(a.clone())
        return torch.stack([a[:, 0], 1 - a[:, 0]], dim=-1)  # reads the first weight only

    moved = permuted_attention(readout, weights, valid, 6, torch.Generator().manual_seed(0))
    assert moved.shape == (3, 6) and len(seen) == 7 and torch.equal(seen[0], weights)
    for shuffled, tvd in zip(seen[1:], moved.T, strict=True):
        assert torch.equal(shuffled[~valid], weights[~valid])
        for b in range(3):
            assert torch.equal(shuffled[b, valid[b]].sort().values, weights[b, valid[b]].sort().values)
        close(tvd, (shuffled[:, 0] - weights[:, 0]).abs())
    assert torch.equal(moved[2], torch.zeros(6))  # one real element: nothing to shuffle
    assert bool((moved[0] > 0).any())
    again = permuted_attention(readout, weights, valid, 6, torch.Generator().manual_seed(0))
    assert torch.equal(again, moved)


def test_permuted_attention_of_a_readout_ignoring_attention_moves_nothing():
    valid = torch.ones(4, 6, dtype=torch.bool)
    weights = distributions(4, 6, torch.Generator().manual_seed(0), dtype=torch.float32)
    moved = permuted_attention(lambda a: torch.full((4, 3), 1 / 3), weights, valid, 5, torch.Generator())
    assert torch.equal(moved, torch.zeros(4, 5))


def check_adversary(readout, weights, valid, adversary, jsd, tolerance=0.01):
    assert adversary.shape == weights.shape and jsd.shape == weights.shape[:1]
    assert bool((jsd >= 0).all()) and not adversary.requires_grad
    close(adversary.sum(-1), torch.ones(len(weights)), atol=1e-5, rtol=0)
    assert torch.equal(adversary[~valid], torch.zeros(int((~valid).sum())))
    assert bool((total_variation(readout(adversary), readout(weights)) <= tolerance + 1e-6).all())
    close(jsd, js_divergence(adversary, weights), atol=1e-6, rtol=1e-5)


def peaked_weights(B, N, lengths, g):
    """Sharp attention (one real element takes most of it), 0 at padding."""
    valid = lengths_mask(lengths, N)
    logits = (torch.randn(B, N, generator=g) * 4).masked_fill(~valid, -math.inf)
    return logits.softmax(-1), valid


def test_adversarial_attention_goes_far_where_the_output_ignores_attention():
    # sharp weights without exact zeros at real elements: an ascent started from them climbs to their own peak
    weights, valid = peaked_weights(8, 6, [6, 6, 5, 4, 3, 2, 6, 6], torch.Generator().manual_seed(0))
    weights[0] = torch.tensor([0.95, 0.01, 0.01, 0.01, 0.01, 0.01])

    def readout(a):
        return torch.full((len(a), 2), 0.5)

    adversary, jsd = adversarial_attention(readout, weights, valid)
    check_adversary(readout, weights, valid, adversary, jsd)
    # the farthest: all on the real element the weights give least (a vertex of the simplex)
    least = weights.masked_fill(~valid, math.inf).argmin(-1)
    farthest = js_divergence(torch.nn.functional.one_hot(least, 6).float(), weights)
    assert bool((jsd > 0.9 * farthest).all()), (jsd, farthest)
    assert float(jsd.mean()) > 0.5 and float(jsd.max()) < math.log(2)


def test_adversarial_attention_stays_put_where_the_output_is_the_attention():
    weights, valid = peaked_weights(6, 5, [5, 5, 4, 3, 2, 1], torch.Generator().manual_seed(6))

    def readout(a):
        return a

    adversary, jsd = adversarial_attention(readout, weights, valid, tolerance=0.01)
    check_adversary(readout, weights, valid, adversary, jsd)
    assert float(jsd.max()) < 0.01  # within TVD 0.01 of the weights themselves
    assert float(jsd[-1]) == 0.0  # one real element: no other attention exists


def test_adversarial_attention_through_a_linear_readout_keeps_its_output():
    g = torch.Generator().manual_seed(7)
    weights, valid = peaked_weights(5, 6, [6, 5, 4, 6, 3], g)
    W = torch.randn(6, 3, generator=g)

    def readout(a):
        return (a @ W).softmax(-1)

    adversary, jsd = adversarial_attention(readout, weights, valid, tolerance=0.02, steps=150, seed=1)
    check_adversary(readout, weights, valid, adversary, jsd, tolerance=0.02)
    again = adversarial_attention(readout, weights, valid, tolerance=0.02, steps=150, seed=1)
    assert torch.equal(again[0], adversary) and torch.equal(again[1], jsd)


# ---------------------------------------------------------------- errors of the attribution functions


VALID = torch.tensor([[True, True, False], [True, True, True]])


def flat_answer(scale):
    return scale.mean(-1)


@pytest.mark.parametrize(
    "call",
    [
        lambda valid: occlusion(flat_answer, valid),
        lambda valid: gradient_x_input(flat_answer, valid),
        lambda valid: map_order(torch.zeros(2, 3), valid),
        lambda valid: random_map(valid, torch.Generator()),
        lambda valid: deletion_curve(flat_answer, torch.zeros(2, 3, dtype=torch.long), valid),
        lambda valid: deletion_area(torch.ones(2, 4), valid),
        lambda valid: mass_on_truth(torch.zeros(2, 3), VALID, valid),
        lambda valid: rank_of_truth(torch.zeros(2, 3), VALID, valid),
        lambda valid: permuted_attention(lambda a: a, torch.zeros(2, 3), valid, 2, torch.Generator()),
        lambda valid: adversarial_attention(lambda a: a, torch.zeros(2, 3), valid),
    ],
)
@pytest.mark.parametrize(
    "valid, match",
    [
        (VALID.float(), r"valid must be a \(B, N\) bool mask"),
        (VALID[0], r"valid must be a \(B, N\) bool mask"),
        (VALID.tolist(), "valid must be a .* got list"),
        (torch.tensor([[True, False, False], [False, False, False]]), "valid marks no element in some row"),
    ],
)
def test_every_function_checks_valid(call, valid, match):
    with pytest.raises(ValueError, match=match):
        call(valid)


@pytest.mark.parametrize(
    "call",
    [
        lambda scores: map_order(scores, VALID),
        lambda scores: mass_on_truth(scores, VALID, VALID),
        lambda scores: rank_of_truth(scores, VALID, VALID),
    ],
)
@pytest.mark.parametrize("scores", [torch.zeros(2, 4), torch.zeros(3), torch.zeros(2, 3, dtype=torch.long), [0.0]])
def test_maps_must_be_float_and_shaped_like_valid(call, scores):
    with pytest.raises(ValueError, match=r"scores must be a float \(B, N\) map like valid \(2, 3\)"):
        call(scores)


@pytest.mark.parametrize("truth", [VALID.float(), VALID[:, :2], "truth"])
def test_truth_must_be_a_bool_mask_like_valid(truth):
    for f in (mass_on_truth, rank_of_truth):
        with pytest.raises(ValueError, match=r"truth must be a \(B, N\) bool mask like valid \(2, 3\)"):
            f(torch.zeros(2, 3), truth, VALID)


def test_rank_of_truth_needs_a_true_real_element_in_every_row():
    truth = torch.tensor([[False, False, True], [True, False, False]])  # row 0: only its padding
    with pytest.raises(ValueError, match="truth marks no real element in some row"):
        rank_of_truth(torch.zeros(2, 3), truth, VALID)
    close(mass_on_truth(torch.ones(2, 3), truth, VALID), torch.tensor([0.0, 1 / 3]))  # mass is simply 0 there


@pytest.mark.parametrize(
    "bad",
    [
        lambda scale: scale.mean(-1, keepdim=True),
        lambda scale: scale,
        lambda scale: scale.mean(-1)[:1],
        lambda scale: 0.5,
        lambda scale: scale.mean(-1).tolist(),
    ],
)
def test_the_answer_must_return_one_probability_per_example(bad):
    order = torch.arange(3).expand(2, 3)
    for call in (
        lambda: occlusion(bad, VALID),
        lambda: gradient_x_input(bad, VALID),
        lambda: deletion_curve(bad, order, VALID),
    ):
        with pytest.raises(ValueError, match=r"answer must return \(B,\) = \(2,\) probabilities"):
            call()


@pytest.mark.parametrize(
    "order", [torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.long), torch.zeros(3, dtype=torch.long), [[0]]]
)
def test_deletion_curve_needs_integer_orders(order):
    with pytest.raises(ValueError, match=r"order must be \(B, N\) = \(2, 3\) element indices"):
        deletion_curve(flat_answer, order, VALID)


@pytest.mark.parametrize("order", [torch.zeros(2, 3, dtype=torch.long), torch.tensor([[0, 1, 3], [2, 1, 0]])])
def test_an_order_must_be_a_permutation_of_the_elements(order):
    """An order that repeats an element (or names one that is not there) removed the wrong elements silently."""
    for call in (lambda: deletion_curve(lambda s: s.mean(-1), order, VALID),
                 lambda: decision_flip(lambda s: s.sum(-1) > 0, order, VALID)):  # fmt: skip
        with pytest.raises(
            ValueError, match=r"order must hold each element index 0 … 2 once per row \(map_order\); row 0 is"
        ):
            call()


def test_maps_must_be_finite_where_they_are_read():
    """A NaN sorts first: it would rank the truth best (and a NaN at padding is never read, so it is allowed)."""
    truth = torch.tensor([[True, False, False], [False, True, False]])
    valid = torch.tensor([[True, True, True], [True, True, False]])
    nan_map = torch.tensor([[float("nan"), 0.1, 0.2], [0.3, 0.1, 0.0]])
    for call in (rank_of_truth, mass_on_truth, average_precision):
        with pytest.raises(
            ValueError,
            match=r"scores must be finite at the real elements, got 1 NaN or infinite value\(s\), the first at row 0, ",
        ):
            call(nan_map, truth, valid)
    padded = torch.tensor([[0.5, 0.1, 0.2], [0.3, 0.1, float("nan")]])
    assert rank_of_truth(padded, truth, valid).tolist() == [1, 2]


def test_attention_x_gradient_refuses_weights_the_answer_never_used():
    A = torch.full((2, 3), 1 / 3, requires_grad=True)
    p = torch.sigmoid(torch.randn(2, requires_grad=True))
    with pytest.raises(ValueError, match="not on the graph of probability"):
        attention_x_gradient(A, p)


def test_the_answers_values_must_be_finite():
    with pytest.raises(ValueError, match="answer must return finite values"):
        occlusion(lambda s: s.sum(-1) / 0.0, VALID)


def test_random_map_needs_a_seeded_generator():
    with pytest.raises(ValueError, match="generator must be a torch.Generator"):
        random_map(VALID, None)


def test_divergences_take_distributions():
    p = torch.tensor([0.5, 0.5])
    for f in (total_variation, js_divergence):
        with pytest.raises(ValueError, match="q must be a distribution"):
            f(p, torch.tensor([2.0, -1.0]))
        with pytest.raises(ValueError, match="p and q must have shapes that broadcast"):
            f(p, torch.tensor([0.2, 0.3, 0.5]))
        with pytest.raises(ValueError, match="p must be a float tensor"):
            f([0.5, 0.5], p)


@pytest.mark.parametrize("curve", [torch.zeros(2, 3), torch.zeros(1, 4), [[1.0] * 4] * 2])
def test_deletion_area_needs_n_plus_one_columns(curve):
    with pytest.raises(ValueError, match=r"curve must be \(B, N \+ 1\) = \(2, 4\)"):
        deletion_area(curve, VALID)


@pytest.mark.parametrize("weights", [torch.zeros(2, 4), torch.zeros(2, 3, dtype=torch.long), "w"])
def test_counterfactual_attention_needs_weights_like_valid(weights):
    with pytest.raises(ValueError, match=r"weights must be \(B, N\) attention like valid \(2, 3\)"):
        permuted_attention(lambda a: a, weights, VALID, 2, torch.Generator())
    with pytest.raises(ValueError, match=r"weights must be \(B, N\) attention like valid \(2, 3\)"):
        adversarial_attention(lambda a: a, weights, VALID)


@pytest.mark.parametrize("permutations", [0, -1, True, 2.0])
def test_permuted_attention_needs_a_positive_count(permutations):
    with pytest.raises(ValueError, match="permutations must be a positive int"):
        permuted_attention(lambda a: a, torch.zeros(2, 3), VALID, permutations, torch.Generator())


@pytest.mark.parametrize(
    "keyword, value, match",
    [
        ("steps", 0, "steps must be a positive int"),
        ("steps", 1.5, "steps must be a positive int"),
        ("tolerance", 0.0, "tolerance must be a positive finite number"),
        ("tolerance", -0.1, "tolerance must be a positive finite number"),
        ("tolerance", math.nan, "tolerance must be a positive finite number"),
        ("lr", True, "lr must be a positive finite number"),
        ("lr", "0.1", "lr must be a positive finite number"),
        ("lr", math.inf, "lr must be a positive finite number"),
        ("penalty", -1, "penalty must be a positive finite number"),
        ("penalty", math.inf, "penalty must be a positive finite number"),
        ("seed", None, "seed must be an int"),
    ],
)
def test_adversarial_attention_checks_its_settings(keyword, value, match):
    with pytest.raises(ValueError, match=match):
        adversarial_attention(lambda a: a, torch.full((2, 3), 0.5), VALID, **{keyword: value})


# ---------------------------------------------------------------- the memory network


def make_memn2n(seed=0, **kw):
    config = dict(vocab_size=12, d=8, hops=3, memory_size=6) | kw
    with seeded(seed):
        return MemN2N(MemN2NConfig(**config)).eval()


def babi_batch(B=4, M=6, J=5, V=12, seed=0):
    """Random stories of 1..M sentences (the first batch row always full), queries, answers and supports."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, M + 1, (B,), generator=g)
    lengths[0] = M
    words = torch.randint(1, V, (B, M, J), generator=g)
    word_len = torch.randint(1, J + 1, (B, M), generator=g)
    story = words * (torch.arange(J) < word_len[..., None]) * lengths_mask(lengths, M)[..., None]
    query = torch.randint(1, V, (B, J), generator=g) * (torch.arange(J) < 3)
    answer = torch.randint(1, V, (B,), generator=g)
    supporting = torch.stack([torch.randint(0, int(n), (1,), generator=g)[0] for n in lengths])[:, None]
    return BabiTensors(story, query, answer, lengths, supporting)


MEMN2N_VARIANTS = [
    {},
    {"attend_empty": True},
    {"temporal": False, "encoding": "bow"},
    {"hops": 1},
]


@pytest.mark.parametrize("variant", MEMN2N_VARIANTS)
def test_memn2n_reads_the_same_with_its_own_attention_given_back(variant):
    model, data = make_memn2n(**variant), babi_batch()
    with torch.no_grad():
        out = model(data.story, data.query, data.lengths)
        given = model(data.story, data.query, data.lengths, attention=out.hop_attention)
    assert torch.equal(given.hop_attention, out.hop_attention)
    close(given.logits, out.logits)  # Σ_i p_i c_i written out against attend's matrix product


@pytest.mark.parametrize("variant", MEMN2N_VARIANTS)
def test_memn2n_scale_of_ones_changes_nothing_and_zero_erases_a_sentence(variant):
    model, data = make_memn2n(**variant), babi_batch()
    with torch.no_grad():
        out = model(data.story, data.query, data.lengths)
        ones = model(data.story, data.query, data.lengths, scale=torch.ones(4, 6))
        assert torch.equal(ones.logits, out.logits) and torch.equal(ones.hop_attention, out.hop_attention)
        erased = torch.ones(4, 6)
        erased[0, 2] = 0.0
        changed = model(data.story, data.query, data.lengths, scale=erased).logits
        assert not torch.allclose(changed[0], out.logits[0])
        assert torch.equal(changed[1:], out.logits[1:])  # other stories untouched
        padding = lengths_mask(data.lengths, 6).float() + torch.zeros(4, 6)
        padded = model(data.story, data.query, data.lengths, scale=padding).logits
        close(padded, out.logits)  # padded slots count for nothing anyway
        if not model.config.temporal:  # without T_A(i), erasing sentence i = replacing its words by padding
            story = data.story.clone()
            story[0, 2] = 0
            close(changed, model(story, data.query, data.lengths).logits)


def test_memn2n_scale_and_attention_are_differentiable():
    model, data = make_memn2n(), babi_batch()
    scale = torch.ones(4, 6, requires_grad=True)
    (grad,) = torch.autograd.grad(answer_probability(model, data, scale=scale).sum(), scale)
    assert bool(grad[0].ne(0).all())
    own = model(data.story, data.query, data.lengths).hop_attention.detach().requires_grad_(True)
    relevance = attention_x_gradient(own, answer_probability(model, data, attention=own))
    assert relevance.shape == (4, 3, 6) and bool((relevance >= 0).all()) and bool((relevance > 0).any())
    valid = lengths_mask(data.lengths, 6)
    assert torch.equal(relevance[~valid[:, None].expand_as(relevance)], torch.zeros(int((~valid).sum()) * 3))


@pytest.mark.parametrize(
    "keyword, value, match",
    [
        ("scale", torch.ones(4, 5), r"scale must be a float \(B, M\) = \(4, 6\) tensor, got \(4, 5\)"),
        ("scale", torch.ones(4, 6, dtype=torch.long), r"scale must be a float \(B, M\)"),
        ("scale", torch.ones(6), r"scale must be a float \(B, M\)"),
        ("scale", [[1.0] * 6] * 4, r"scale must be a float \(B, M\) = \(4, 6\) tensor, got list"),
        ("attention", torch.ones(4, 2, 6), r"attention must be a float \(B, K, M\) = \(4, 3, 6\) tensor"),
        ("attention", torch.ones(4, 6), r"attention must be a float \(B, K, M\)"),
        ("attention", torch.ones(4, 3, 6, dtype=torch.bool), r"attention must be a float \(B, K, M\)"),
    ],
)
def test_memn2n_checks_scale_and_attention(keyword, value, match):
    model, data = make_memn2n(), babi_batch()
    with pytest.raises(ValueError, match=match):
        model(data.story, data.query, data.lengths, **{keyword: value})


def test_memn2n_answer_probability_and_distribution_are_the_models_softmax():
    model, data = make_memn2n(), babi_batch()
    with torch.no_grad():
        out = model(data.story, data.query, data.lengths)
        softmax = out.logits.softmax(-1)
        close(answer_probability(model, data), softmax[torch.arange(4), data.answer])
        close(answer_distribution(model, data, out.hop_attention, out.hop_attention[:, -1]), softmax)
        uniform = lengths_mask(data.lengths, 6) / data.lengths[:, None]
        other = answer_distribution(model, data, out.hop_attention, uniform)
        assert other.shape == softmax.shape and not torch.allclose(other, softmax)
        expected = model(
            data.story,
            data.query,
            data.lengths,
            attention=torch.cat([out.hop_attention[:, :-1], uniform[:, None]], 1),
        ).logits.softmax(-1)
        close(other, expected)


def test_memn2n_attributions_run_on_a_padded_batch():
    model, data = make_memn2n(), babi_batch(seed=3)
    valid = lengths_mask(data.lengths, 6)
    answer = padding_free(lambda scale: answer_probability(model, data, scale=scale), valid)
    for attribution in (occlusion(answer, valid), gradient_x_input(answer, valid)):
        assert attribution.shape == (4, 6) and torch.equal(attribution[~valid], torch.zeros(int((~valid).sum())))
    curve = deletion_curve(answer, map_order(occlusion(answer, valid), valid), valid)
    with torch.no_grad():
        close(curve[:, 0], answer_probability(model, data))


def test_supporting_mask_marks_the_supporting_slots():
    story = torch.ones(3, 4, 2, dtype=torch.long)
    data = BabiTensors(
        story=story,
        query=torch.ones(3, 2, dtype=torch.long),
        answer=torch.ones(3, dtype=torch.long),
        lengths=torch.tensor([4, 3, 2]),
        supporting=torch.tensor([[0, 2], [1, -1], [-1, -1]]),  # row 2: its supports fell out of memory
    )
    expected = torch.tensor([[True, False, True, False], [False, True, False, False], [False, False, False, False]])
    assert torch.equal(supporting_mask(data), expected)
    assert supporting_mask(data[1:2]).tolist() == [[False, True, False, False]]


# ---------------------------------------------------------------- the translator


def make_translator(seed=0, attention="additive"):
    with seeded(seed):
        return Seq2Seq(Seq2SeqConfig(10, 9, d_embed=4, d_hidden=8, d_attn=4, attention=attention)).eval()


def translation_batch():
    """Three sentences of 5, 3 and 2 source words (the last one <eos>-like), targets of 4, 3 and 2 words."""
    source = torch.tensor([[3, 4, 5, 6, 2], [7, 8, 2, 0, 0], [9, 2, 0, 0, 0]])
    target_out = torch.tensor([[3, 4, 5, 2], [6, 7, 2, 0], [8, 2, 0, 0]])
    target_in = torch.tensor([[1, 3, 4, 5], [1, 6, 7, 0], [1, 8, 0, 0]])
    return Batch(source, torch.tensor([5, 3, 2]), target_in, target_out)


STEP = torch.tensor([2, 0, 1])


@pytest.mark.parametrize("attention", ["additive", "dot", "general"])
def test_word_probability_is_the_softmax_at_the_step_and_scale_of_ones_changes_nothing(attention):
    model, batch = make_translator(attention=attention), translation_batch()
    with torch.no_grad():
        logits = model(batch.source, batch.source_lengths, batch.target_in).logits
        expected = torch.stack([logits[b, t].softmax(-1)[batch.target_out[b, t]] for b, t in enumerate(STEP)])
        p = word_probability(model, batch, STEP)
        close(p, expected)
        assert torch.equal(word_probability(model, batch, STEP, torch.ones(3, 5)), p)
        erased = torch.ones(3, 5)
        erased[0, 1] = 0.0
        changed = word_probability(model, batch, STEP, erased)
        assert float(changed[0]) != float(p[0]) and torch.equal(changed[1:], p[1:])
        assert torch.equal(word_probability(model, batch, STEP), p)  # the hook is gone afterwards


def test_word_attention_gives_every_steps_weights_on_the_path_to_the_probability():
    model, batch = make_translator(), translation_batch()
    with torch.no_grad():
        out = model(batch.source, batch.source_lengths, batch.target_in)
        p = word_probability(model, batch, STEP)
    steps, probability = word_attention(model, batch, STEP)
    assert len(steps) == 4 and all(w.shape == (3, 5) and w.requires_grad for w in steps)
    assert torch.equal(torch.stack([w.detach() for w in steps], dim=1), out.alignments)
    close(probability.detach(), p)
    relevance = torch.stack(attention_x_gradient(steps, probability), dim=1)  # (B, T, S)
    later = torch.arange(4)[None, :] > STEP[:, None]  # (B, T): steps after each row's word cannot matter
    assert torch.equal(relevance[later], torch.zeros(int(later.sum()), 5))
    assert bool((relevance[torch.arange(3), STEP] > 0).any())
    assert len(model.attention._forward_hooks) == 0  # the hook is gone afterwards


def test_translator_attributions_run_and_stay_off_the_padding():
    model, batch = make_translator(), translation_batch()
    valid = lengths_mask(batch.source_lengths, 5)
    answer = padding_free(lambda scale: word_probability(model, batch, STEP, scale), valid)
    for attribution in (occlusion(answer, valid), gradient_x_input(answer, valid)):
        assert attribution.shape == (3, 5) and torch.equal(attribution[~valid], torch.zeros(int((~valid).sum())))
        assert bool(attribution[valid].ne(0).any())


@pytest.mark.parametrize(
    "step, match",
    [
        (torch.tensor([0, 1]), r"step must be \(B,\) = \(3,\) target positions"),
        (torch.tensor([0.0, 1.0, 1.0]), r"step must be \(B,\) = \(3,\) target positions"),
        ([0, 1, 1], r"step must be \(B,\) = \(3,\) target positions"),
        (torch.tensor([0, 4, 1]), r"step must be target positions in \[0, 4\)"),
        (torch.tensor([0, -1, 1]), r"step must be target positions in \[0, 4\)"),
    ],
)
def test_translator_explain_checks_the_step(step, match):
    model, batch = make_translator(), translation_batch()
    with pytest.raises(ValueError, match=match):
        word_probability(model, batch, step)
    with pytest.raises(ValueError, match=match):
        word_attention(model, batch, step)


# ---------------------------------------------------------------- the Vision Transformer


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(4, seed=3)


@pytest.mark.parametrize("stem", ["patch", "conv"])
def test_vit_answer_probability_is_the_softmax_and_scale_of_ones_changes_nothing(scenes, stem):
    with seeded(0):
        model = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, stem=stem, positions=stem == "patch")).eval()
    N = model.grid**2
    with torch.no_grad():
        logits = model(scenes.images, scenes.question).logits
        p = vision_explain.answer_probability(model, scenes)
        close(p, logits.softmax(-1)[torch.arange(4), scenes.answer])
        assert torch.equal(vision_explain.answer_probability(model, scenes, torch.ones(4, N)), p)
        erased = torch.ones(4, N)
        erased[1, 7] = 0.0
        changed = vision_explain.answer_probability(model, scenes, erased)
        assert float(changed[1]) != float(p[1]) and torch.equal(changed[[0, 2, 3]], p[[0, 2, 3]])
    assert len(model.stem._forward_hooks) == 0
    out, probability = vision_explain.answer_output(model, scenes)
    relevance = attention_x_gradient(out.attention, probability)
    assert [r.shape for r in relevance] == [(4, 2, 1 + N, 1 + N)] * 2
    valid = torch.ones(4, N, dtype=torch.bool)
    grad = gradient_x_input(lambda scale: vision_explain.answer_probability(model, scenes, scale), valid)
    assert grad.shape == (4, N) and bool(grad.ne(0).any())


@pytest.mark.parametrize("scale", [torch.ones(4, 35), torch.ones(3, 36), torch.ones(4, 6, 6), "ones"])
def test_vit_answer_checks_the_scale(scenes, scale):
    model = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32))
    with pytest.raises(ValueError, match=r"scale must be a float \(B, N\) = \(4, 36\) tensor, one per patch"):
        vision_explain.answer_probability(model, scenes, scale)


def test_gradient_x_input_of_an_answer_that_ignores_the_scales_is_zero():
    valid = torch.tensor([[True, True, False]])
    assert torch.equal(gradient_x_input(lambda s: torch.ones(1), valid), torch.zeros(1, 3))
    # depends on the scales only through a branch that is never taken: no gradient flows
    assert torch.equal(gradient_x_input(lambda s: s.sum(-1) * 0 + 0.5, valid), torch.zeros(1, 3))


def test_attention_x_gradient_refuses_a_probability_without_a_graph():
    weights = torch.softmax(torch.randn(2, 4), -1).requires_grad_(True)
    with torch.no_grad():
        p = (weights * torch.arange(4.0)).sum(-1)
    with pytest.raises(ValueError, match="without a graph"):
        attention_x_gradient(weights, p)
    with pytest.raises(ValueError, match="weights must be"):
        attention_x_gradient(torch.tensor(0.5, requires_grad=True), p)


def test_memn2n_refuses_attention_on_padded_slots():
    model, data = make_memn2n(), babi_batch()
    with torch.no_grad():
        own = model(data.story, data.query, data.lengths).hop_attention
    short = int(data.lengths.argmin())
    assert int(data.lengths[short]) < data.story.shape[1], "the batch needs a story shorter than the others"
    bad = own.clone()
    bad[short, :, -1] = 0.5
    with pytest.raises(ValueError, match="padded memory slots"):
        model(data.story, data.query, data.lengths, attention=bad)


def test_attribution_viewer_draws_the_truth_and_each_map_scaled_to_one():
    from attn.viz import attribution_viewer
    from attn.viz.attributions import _rows

    maps = {
        "a": torch.tensor([[0.2, -1.0, 0.4], [1.0, 3.0, 0.0]]),
        "b": torch.tensor([[0.0, 0.0, 0.0], [2.0, 1.0, 5.0]]),
    }
    truth = torch.tensor([[False, False, True], [True, False, False]])
    valid = torch.tensor([[True, True, True], [True, True, False]])
    rows = _rows({k: m[0] for k, m in maps.items()}, truth[0], valid[0])
    assert torch.allclose(rows, torch.tensor([[0.0, 0.0, 1.0], [0.5, 0.0, 1.0], [0.0, 0.0, 0.0]]))
    # the real inputs wherever they are (padding first, say), not the first n columns
    rows = _rows({k: m[1] for k, m in maps.items()}, truth[1], torch.tensor([False, True, True]))
    assert torch.allclose(rows, torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.2, 1.0]]))
    with pytest.raises(ValueError, match="map 'a' must be finite at the real inputs"):
        attribution_viewer({"a": maps["a"] * float("nan")}, truth, valid, [["x", "y", "z"]], ["one"])
    view = attribution_viewer(maps, truth, valid, [["x", "y", "z"], ["u", "v"]], ["one", "two"], element="word")
    assert "class='attn-viewer'" in view.html and "truth" in view.html and "word" in view.html
    with pytest.raises(ValueError, match="tokens\\[1\\] has 3 labels"):
        attribution_viewer(maps, truth, valid, [["x", "y", "z"], ["u", "v", "w"]], ["one", "two"])
    with pytest.raises(ValueError, match="map 'a' must be"):
        attribution_viewer({"a": maps["a"][:1]}, truth, valid, [["x", "y", "z"]], ["one"])
    with pytest.raises(ValueError, match="same number of examples"):
        attribution_viewer(maps, truth, valid, [["x", "y", "z"]], ["one", "two"])
    with pytest.raises(ValueError, match="valid must be"):
        attribution_viewer(maps, truth, valid.float(), [["x", "y", "z"]], ["one"])


# ---------------------------------------------------------------- agreement beyond the positive mass (chapter 13)


def test_average_precision_on_hand_examples():
    from attn.analysis import average_precision

    valid = torch.tensor([[True, True, True, True], [True, True, True, False]])
    truth = torch.tensor([[True, False, True, False], [False, True, False, False]])
    # row 0 ranks 0, 1, 2, 3: true at ranks 1 and 3 -> (1/1 + 2/3) / 2; row 1 ranks 2, 1, 0: true at rank 2 -> 1/2
    scores = torch.tensor([[4.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 9.0]])
    close(average_precision(scores, truth, valid), torch.tensor([(1 + 2 / 3) / 2, 0.5]))
    # only the order counts: a signed map and its positive part... and any monotone change
    close(average_precision(scores - 3.5, truth, valid), average_precision(scores.exp(), truth, valid))
    # ties count against the map: a flat map puts the true elements after the false ones
    flat = torch.ones(2, 4)
    close(average_precision(flat, truth, valid), torch.tensor([(1 / 3 + 2 / 4) / 2, 1 / 3]))
    # a perfect map scores 1
    close(average_precision(truth.float(), truth, valid), torch.ones(2))


def test_average_precision_of_random_maps_is_near_the_truths_share():
    from attn.analysis import average_precision

    g = torch.Generator().manual_seed(0)
    valid = torch.ones(4000, 20, dtype=torch.bool)
    truth = torch.zeros(4000, 20, dtype=torch.bool)
    truth[:, :5] = True
    ap = average_precision(torch.rand(4000, 20, generator=g), truth, valid).mean()
    # E[AP] of a random order of n = 20 with R = 5 true: (1/n) Σ_k [(R-1)/(n-1) + (n-R)/(n-1) / k]... computed exactly
    n, R = 20, 5
    exact = sum(((R - 1) / (n - 1)) * ((k - 1) / k) + 1 / k for k in range(1, n + 1)) / n
    assert abs(float(ap) - exact) < 0.01


def test_chance_and_excess_mass():
    from attn.analysis import chance_mass, excess_mass

    valid = torch.tensor([[True, True, True, True], [True, True, False, False]])
    truth = torch.tensor([[True, False, False, False], [True, True, False, False]])
    close(chance_mass(truth, valid), torch.tensor([0.25, 1.0]))
    flat = torch.ones(2, 4)
    close(excess_mass(flat, truth, valid), torch.tensor([0.0, 0.0]))
    perfect = truth.float()
    close(excess_mass(perfect, truth, valid), torch.tensor([1.0, 0.0]))  # a row whose truth is everything: 0
    off = torch.tensor([[0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    close(excess_mass(off, truth, valid)[0], torch.tensor(-1 / 3))  # (0 - 1/4) / (3/4)


def test_rank_correlation_against_its_definition():
    from attn.analysis import rank_correlation

    valid = torch.tensor([[True, True, True, True, True], [True, True, True, False, False]])
    a = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0], [3.0, 1.0, 2.0, 7.0, 7.0]])
    close(rank_correlation(a, a * 3 + 1, valid), torch.ones(2))
    close(rank_correlation(a, -a, valid), -torch.ones(2))
    b = torch.tensor([[2.0, 1.0, 4.0, 3.0, 5.0], [1.0, 2.0, 3.0, -5.0, 0.0]])
    # by hand: row 0 d = (1, 1, 1, 1, 0): 1 - 6 * 4 / (5 * 24) = 0.8; row 1 ranks (3, 1, 2) vs (1, 2, 3): -0.5
    close(rank_correlation(a, b, valid), torch.tensor([0.8, -0.5]))
    ties = torch.tensor([[1.0, 1.0, 2.0, 2.0, 3.0], [1.0, 1.0, 1.0, 0.0, 0.0]])
    r = rank_correlation(ties, a, valid)
    close(r[1], torch.tensor(0.0))  # a flat row correlates with nothing
    ranks_t, ranks_a = torch.tensor([1.5, 1.5, 3.5, 3.5, 5.0]), torch.arange(1.0, 6.0)
    pearson = torch.corrcoef(torch.stack([ranks_t, ranks_a]))[0, 1]
    close(r[0], pearson)


def test_integrated_gradients_is_complete_and_exact_for_a_linear_answer():
    from attn.analysis import integrated_gradients

    w = torch.tensor([[2.0, -1.0, 0.5], [1.0, 1.0, 1.0]])
    valid = torch.tensor([[True, True, True], [True, True, False]])
    close(integrated_gradients(lambda s: (s * w).sum(-1), valid, steps=3), w * valid)
    answer = lambda s: torch.sigmoid((s * w).sum(-1) * 2) ** 2  # noqa: E731
    ig = integrated_gradients(answer, valid, steps=200)
    gap = answer(valid.float()) - answer(torch.zeros(2, 3))
    close(ig.sum(-1), gap, atol=1e-4, rtol=0)
    assert torch.equal(ig[~valid], torch.zeros(1))
    with pytest.raises(ValueError, match="steps must be a positive int"):
        integrated_gradients(answer, valid, steps=0)


def test_score_map_reports_average_precision_and_excess_mass():
    from attn.analysis import average_precision, excess_mass

    valid = torch.tensor([[True, True, True, True]])
    truth = torch.tensor([[False, True, False, False]])
    scores = torch.tensor([[0.1, 0.5, 0.9, -1.0]])
    s = score_map(lambda scale: scale.sum(-1) / 4, scores, truth, valid)
    assert s.ap == pytest.approx(float(average_precision(scores, truth, valid)))
    assert s.excess == pytest.approx(float(excess_mass(scores, truth, valid)))
    assert s.ap == pytest.approx(0.5)


# ---------------------------------------------------------------- Chefer et al.'s relevance rollout


def test_relevance_rollout_against_a_hand_computation():
    from attn.vision.rollout import relevance_rollout

    A1 = torch.tensor([[[0.2, 0.0], [0.4, 0.6]], [[0.0, 0.2], [0.0, 0.2]]])[None]  # (1, H=2, 2, 2)
    A2 = torch.tensor([[[0.1, 0.3], [0.0, 0.0]], [[0.3, 0.1], [0.2, 0.0]]])[None]
    m1, m2 = A1.mean(1)[0], A2.mean(1)[0]  # [[0.1, 0.1], [0.2, 0.4]], [[0.2, 0.2], [0.1, 0.0]]
    R1 = torch.eye(2) + m1 @ torch.eye(2)  # [[1.1, 0.1], [0.2, 1.4]]
    R2 = R1 + m2 @ R1  # + [[0.26, 0.30], [0.11, 0.01]]
    got = relevance_rollout([A1, A2])
    close(got[0], R2)
    close(got[0], torch.tensor([[1.36, 0.40], [0.31, 1.41]]))
    # one layer of zeros leaves the identity; the order of the layers matters
    assert torch.equal(relevance_rollout([torch.zeros(3, 2, 4, 4)]), torch.eye(4).expand(3, 4, 4))
    assert not torch.allclose(relevance_rollout([A2, A1]), got)


@pytest.mark.parametrize(
    "relevances, match",
    [
        ([], "non-empty sequence"),
        (torch.ones(1, 2, 3, 3), "non-empty sequence"),
        ([torch.ones(1, 2, 3, 4)], r"must be \(B, H, T, T\)"),
        ([torch.ones(1, 2, 3, 3), torch.ones(1, 2, 4, 4)], r"must be \(B, H, T, T\) like the others"),
        ([-torch.ones(1, 2, 3, 3)], "negative entries"),
    ],
)
def test_relevance_rollout_checks_its_input(relevances, match):
    from attn.vision.rollout import relevance_rollout

    with pytest.raises(ValueError, match=match):
        relevance_rollout(relevances)


# ---------------------------------------------------------------- what a ViT token sees, and deleting tokens


def test_conv_stem_tokens_see_pixels_4i_minus_4_to_4i_plus_4():
    with seeded(0):
        model = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, stem="conv", positions=False))
    S, grid = model.config.image_size, model.grid
    for r, c in [(0, 0), (5, 17), (23, 23), (12, 3)]:
        pixels = torch.zeros(1, S, S, dtype=torch.bool)
        pixels[0, r, c] = True
        seen = vision_explain.seen_by_tokens(model, pixels).view(grid, grid)
        i, j = torch.arange(grid)[:, None], torch.arange(grid)[None, :]
        by_hand = (4 * i - 4 <= r) & (r <= 4 * i + 4) & (4 * j - 4 <= c) & (c <= 4 * j + 4)
        assert torch.equal(seen, by_hand), (r, c)
        # the stem's own gradient agrees: a token depends on the pixel iff it sees it
        image = torch.rand(1, 3, S, S, requires_grad=True)
        tokens = model.stem(image)[0].abs().sum(0)  # (grid, grid)
        for ti, tj in [(int(a), int(b)) for a, b in by_hand.nonzero()][:3]:
            (g,) = torch.autograd.grad(tokens[ti, tj], image, retain_graph=True)
            assert g[0, :, r, c].abs().sum() > 0


def test_object_tokens_with_the_patch_stem_are_the_target_cells(scenes):
    model = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, stem="patch"))
    assert torch.equal(vision_explain.object_tokens(model, scenes), scenes.target_cells(model.grid))
    conv = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, stem="conv", positions=False))
    asked, anything = vision_explain.object_tokens(conv, scenes), vision_explain.object_tokens(conv, scenes, "any")
    assert bool((asked <= anything).all()) and bool((scenes.target_cells(6) <= asked).all())
    assert int(asked.sum()) > int(scenes.target_cells(6).sum())
    with pytest.raises(ValueError, match="which must be 'asked' or 'any'"):
        vision_explain.object_tokens(conv, scenes, "all")
    with pytest.raises(ValueError, match=r"pixels must be a \(B, 24, 24\) bool mask"):
        vision_explain.seen_by_tokens(conv, torch.zeros(2, 6, 6, dtype=torch.bool))


def test_vit_delete_erase_is_the_model_on_the_kept_tokens_only(scenes):
    with seeded(0):
        model = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, stem="conv", positions=False)).eval()
    N = model.grid**2
    scale = torch.ones(4, N)
    scale[0, [3, 10, 20]] = 0.0
    scale[2, :30] = 0.0
    with torch.no_grad():
        got = vision_explain.answer_probability(model, scenes, scale, erase="delete")
        assert torch.equal(
            vision_explain.answer_probability(model, scenes, torch.ones(4, N), erase="delete"),
            vision_explain.answer_probability(model, scenes),
        )
        tokens = model.tokens(scenes.images)  # (B, N, d)
        cls = model.cls + model.question(scenes.question)[:, None]
        for b in range(4):
            x = torch.cat([cls[b : b + 1], tokens[b : b + 1, scale[b] > 0]], dim=1)  # the kept tokens only
            logits = model.head(model.encoder(x)[0][:, 0])
            close(got[b], logits.softmax(-1)[0, scenes.answer[b]], atol=1e-5, rtol=1e-5)
    assert len(model.encoder._forward_pre_hooks) == 0
    with pytest.raises(ValueError, match="needs a scale of 0"):
        vision_explain.answer_probability(model, scenes, torch.full((4, N), 0.5), erase="delete")
    with pytest.raises(ValueError, match="erase must be one of"):
        vision_explain.answer_probability(model, scenes, None, erase="blur")


@pytest.mark.parametrize("stem", ["patch", "conv"])
def test_vit_black_erase_runs_from_a_black_image_to_the_image(scenes, stem):
    with seeded(0):
        model = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, stem=stem, positions=stem == "patch")).eval()
    N = model.grid**2
    black = vision_explain.black_tokens(model)
    assert black.shape == (N, 16) and not black.requires_grad
    with torch.no_grad():
        on_black = model(torch.zeros_like(scenes.images), scenes.question).logits.softmax(-1)
        close(
            vision_explain.answer_probability(model, scenes, torch.zeros(4, N), erase="black"),
            on_black[torch.arange(4), scenes.answer],
        )  # s = 0: every token is a black patch's, exactly the model on a black image
        close(
            vision_explain.answer_probability(model, scenes, torch.ones(4, N), erase="black"),
            vision_explain.answer_probability(model, scenes),
        )  # s = 1: the image as it is
        if stem == "patch":  # a patch token sees its own pixels only: s_i = 0 is the image with patch i black
            scale = torch.ones(4, N)
            scale[:, 7] = 0.0
            blacked = scenes.images.clone()
            blacked[:, :, 4:8, 4:8] = 0.0  # patch 7 of the 6 x 6 grid: row 1, column 1
            expected = model(blacked, scenes.question).logits.softmax(-1)[torch.arange(4), scenes.answer]
            close(vision_explain.answer_probability(model, scenes, scale, erase="black"), expected)
    assert len(model.stem._forward_hooks) == 0


def test_vit_black_erase_gives_gradient_x_input_minus_baseline_and_complete_integrated_gradients(scenes):
    from attn.analysis import integrated_gradients

    with seeded(0):
        model = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, stem="conv", positions=False)).eval()
    N = model.grid**2
    valid = torch.ones(4, N, dtype=torch.bool)
    answer = lambda s: vision_explain.answer_probability(model, scenes, s, erase="black")  # noqa: E731
    # gradient x (input - baseline), from the gradient with respect to the tokens themselves
    with torch.no_grad():
        tokens, black = model.tokens(scenes.images), vision_explain.black_tokens(model)  # (B, N, d), (N, d)
    held = tokens.clone().requires_grad_(True)
    grid = held.transpose(1, 2).reshape(4, -1, model.grid, model.grid)  # the stem's (B, d, grid, grid)
    handle = model.stem.register_forward_hook(lambda module, args, out: grid)
    try:
        p = model(scenes.images, scenes.question).logits.softmax(-1)[torch.arange(4), scenes.answer]
    finally:
        handle.remove()
    (grad,) = torch.autograd.grad(p.sum(), held)
    close(gradient_x_input(answer, valid), ((tokens - black) * grad).sum(-1), atol=1e-6, rtol=1e-4)
    # integrated gradients from a non-zero baseline: the attributions add up to p(image) - p(black image)
    ig = integrated_gradients(answer, valid, steps=64)
    with torch.no_grad():
        gap = answer(torch.ones(4, N)) - answer(torch.zeros(4, N))
    assert float(gap.abs().max()) > 1e-3, "the test needs an answer that the baseline changes"
    close(ig.sum(-1), gap, atol=1e-4, rtol=0)


@pytest.mark.parametrize("variant", [{}, {"attend_empty": True}])
def test_memn2n_delete_erase_is_the_story_without_the_sentence_in_its_own_time(variant):
    from attn.memn2n.model import time_index

    model, data = make_memn2n(**variant), babi_batch()
    scale = torch.ones(4, 6)
    scale[0, 2] = 0.0
    with torch.no_grad():
        got = answer_probability(model, data, scale, erase="delete")
        close(answer_probability(model, data, torch.ones(4, 6), erase="delete"), answer_probability(model, data))
        keep = [0, 1, 3, 4, 5]
        story = torch.zeros_like(data.story[:1])
        story[0, :5] = data.story[0, keep]
        time = torch.zeros(1, 6, dtype=torch.long)
        time[0, :5] = time_index(data.lengths[:1], 6)[0, keep]
        logits = model(story, data.query[:1], torch.tensor([5]), time=time).logits
        close(got[0], logits.softmax(-1)[0, data.answer[0]])
        close(got[1:], answer_probability(model, data)[1:])
        empty = answer_probability(model, data, torch.zeros(4, 6), erase="delete")
        assert bool(torch.isfinite(empty).all())
    with pytest.raises(ValueError, match="needs a scale of 0"):
        answer_probability(model, data, torch.full((4, 6), 0.5), erase="delete")


def test_translator_mean_erase_replaces_the_embedding_by_the_vocabulary_mean():
    model, batch, step = make_translator(), translation_batch(), STEP
    B, S = batch.source.shape
    with torch.no_grad():
        p = word_probability(model, batch, step)
        close(word_probability(model, batch, step, torch.ones(B, S), erase="mean"), p)
        scale = torch.ones(B, S)
        scale[0, 1] = 0.0
        got = word_probability(model, batch, step, scale, erase="mean")
        mean = model.source_embedding.weight[1:].mean(0)
        handle = model.source_embedding.register_forward_hook(
            lambda m, a, out: torch.where(scale[..., None] > 0, out, mean)
        )
        try:
            expected = word_probability(model, batch, step)
        finally:
            handle.remove()
        close(got, expected)
        assert not torch.allclose(got[0], p[0])


def test_dependencies_mark_the_noun_and_determiner_of_articles_and_adjectives():
    from attn.data.translation import parse_english, render
    from attn.seq2seq.explain import dependencies

    pair = render(parse_english(["i", "know", "that", "fifty", "seven", "cats", "see", "the", "red", "old", "cats"]))
    # ich weiß dass sieben und fünfzig katzen die roten alten katzen sehen
    t = {w: i for i, w in enumerate(pair.target)}
    step = torch.tensor([t["roten"], t["die"], t["katzen"], t["sehen"]])
    marks, kinds = dependencies([pair] * 4, step, 12)
    words = [[pair.source[k] for k in row.nonzero().squeeze(1).tolist()] for row in marks]
    assert words == [["the", "red", "cats"], ["the", "cats"], ["cats"], ["see"]]
    assert kinds == ["agreeing", "agreeing", "other", "other"]
    pair = render(parse_english(["fifty", "nine", "black", "small", "dogs", "see", "the", "cat"]))
    step = torch.tensor([pair.target.index("kleine")])
    marks, kinds = dependencies([pair], step, 10)
    assert [pair.source[k] for k in marks[0].nonzero().squeeze(1).tolist()] == ["fifty", "nine", "small", "dogs"]
    with pytest.raises(ValueError, match="no true source word"):
        dependencies([render(parse_english(["twenty", "one", "dogs", "see", "the", "cat"]))], torch.tensor([1]), 10)
