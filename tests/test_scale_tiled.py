"""attn.scale.tiled: tiled attention with the online softmax against torch's attention, its gradients, its
memory claim in miniature, causal and sliding-window masks built inside the tiles (against the dense masks of
attn.masks, and the tiles they skip counted), the online softmax step by step, and the HBM traffic count."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

import attn
import attn.scale.tiled as tiled_module
from attn.masks import causal_mask, padding_mask, sliding_window_mask
from attn.scale.tiled import (
    OnlineSoftmaxState,
    hbm_traffic,
    online_softmax_trace,
    online_softmax_update,
    tile_work,
    tiled_attention,
)

TOL = {torch.float32: {"atol": 1e-5, "rtol": 1e-5}, torch.float64: {"atol": 1e-12, "rtol": 1e-12}}


def qkv(*batch, Tq=5, Tk=7, d_k=8, d_v=4, dtype=torch.float32, seed=0, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(*batch, T, d, generator=g, dtype=dtype).requires_grad_(requires_grad)
        for T, d in ((Tq, d_k), (Tk, d_k), (Tk, d_v))
    )


def reference(q, k, v, mask=None, scale=None):
    """torch's attention with rows that may attend to nothing set to zero (torch may give NaN there)."""
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    if mask is None:
        return out
    alive = mask.any(-1, keepdim=True).expand(*out.shape[:-1], 1)  # (..., Tq, 1)
    return torch.where(alive, out, torch.zeros_like(out))


def make_mask(kind, B, Tq, Tk, seed=0):
    if kind is None:
        return None
    if kind == "causal":
        return attn.causal_mask(max(Tq, Tk))[:Tq, :Tk]  # (Tq, Tk), shared by the batch
    if kind == "padding":
        lengths = torch.randint(1, Tk + 1, (B,), generator=torch.Generator().manual_seed(seed))
        return attn.padding_mask(lengths, Tk)[:, None, None, :]  # (B, 1, 1, Tk)
    return torch.rand(B, 1, Tq, Tk, generator=torch.Generator().manual_seed(seed)) < 0.6  # (B, 1, Tq, Tk)


# ---------------------------------------------------------------- equal to torch's attention


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mask_kind", [None, "causal", "padding", "random"])
@pytest.mark.parametrize(
    ("Tq", "Tk", "block_q", "block_k"),
    [(16, 16, 4, 4), (13, 29, 4, 8), (29, 13, 8, 5), (7, 9, 64, 64), (33, 33, 1, 32), (40, 17, 16, 1)],
)
def test_equals_torch_attention(dtype, mask_kind, Tq, Tk, block_q, block_k):
    B, H = 2, 3
    q, k, v = qkv(B, H, Tq=Tq, Tk=Tk, d_k=8, d_v=5, dtype=dtype)
    mask = make_mask(mask_kind, B, Tq, Tk)
    out, state = tiled_attention(q, k, v, mask, block_q=block_q, block_k=block_k)
    assert out.shape == (B, H, Tq, 5) and out.dtype == dtype
    assert state.row_max.shape == state.row_sum.shape == (B, H, Tq)
    torch.testing.assert_close(out, reference(q, k, v, mask), **TOL[dtype])


def test_equals_torch_with_a_scale_and_broadcast_batches():
    q, _, _ = qkv(2, 3, Tq=11, Tk=6)
    _, k, v = qkv(1, 3, Tq=11, Tk=6, seed=1)  # keys and values shared by the batch
    out, _ = tiled_attention(q, k, v, block_q=4, block_k=4, scale=0.3)
    torch.testing.assert_close(out, reference(q, k, v, scale=0.3), **TOL[torch.float32])


def test_unbatched_and_low_precision():
    q, k, v = qkv(Tq=9, Tk=10)
    torch.testing.assert_close(tiled_attention(q, k, v, block_q=4, block_k=3)[0], reference(q, k, v), atol=1e-5,
                               rtol=1e-5)  # fmt: skip
    out, _ = tiled_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), block_q=4, block_k=3)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), reference(q, k, v), atol=3e-2, rtol=3e-2)


@st.composite
def tiled_problem(draw):
    batch = draw(st.sampled_from([(), (1,), (2,), (2, 3)]))
    Tq, Tk, d_k, d_v = (draw(st.integers(1, n)) for n in (20, 20, 8, 6))
    block_q, block_k = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    seed = draw(st.integers(0, 2**31 - 1))
    q, k, v = qkv(*batch, Tq=Tq, Tk=Tk, d_k=d_k, d_v=d_v, seed=seed, dtype=torch.float64)
    p = draw(st.sampled_from([None, 0.0, 0.3, 0.8, 1.0]))
    mask = None if p is None else torch.rand(*batch, Tq, Tk, generator=torch.Generator().manual_seed(seed)) < p
    return q * draw(st.floats(0.1, 5.0)), k, v, mask, block_q, block_k


@given(tiled_problem())
def test_property_equals_torch_for_any_shape_and_blocks(problem):
    q, k, v, mask, block_q, block_k = problem
    out, _ = tiled_attention(q, k, v, mask, block_q=block_q, block_k=block_k)
    torch.testing.assert_close(out, reference(q, k, v, mask), **TOL[torch.float64])


@given(tiled_problem(), st.integers(1, 24), st.integers(1, 24))
def test_property_output_does_not_depend_on_the_blocks(problem, other_q, other_k):
    q, k, v, mask, block_q, block_k = problem
    out, state = tiled_attention(q, k, v, mask, block_q=block_q, block_k=block_k)
    out2, state2 = tiled_attention(q, k, v, mask, block_q=other_q, block_k=other_k)
    torch.testing.assert_close(out2, out, **TOL[torch.float64])
    torch.testing.assert_close(state2.logsumexp, state.logsumexp, **TOL[torch.float64])
    torch.testing.assert_close(state2.row_max, state.row_max, **TOL[torch.float64])


@pytest.mark.parametrize("mask_kind", [None, "causal", "random"])
def test_logsumexp_equals_torch_logsumexp_of_masked_scaled_scores(mask_kind):
    q, k, v = qkv(2, 2, Tq=12, Tk=19, dtype=torch.float64)
    mask = make_mask(mask_kind, 2, 12, 19)
    _, state = tiled_attention(q, k, v, mask, block_q=5, block_k=4)
    assert isinstance(state, OnlineSoftmaxState)
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)  # (2, 2, 12, 19)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    torch.testing.assert_close(state.logsumexp, torch.logsumexp(scores, -1), **TOL[torch.float64])
    torch.testing.assert_close(state.row_max, scores.amax(-1), **TOL[torch.float64])


def test_fully_masked_rows_give_zero_output_and_zero_gradients():
    q, k, v = qkv(2, Tq=6, Tk=9, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(2, 6, 9, generator=torch.Generator().manual_seed(3)) < 0.5
    mask[0, 2] = False
    mask[1, :, :] = False  # the whole second batch element
    out, state = tiled_attention(q, k, v, mask, block_q=4, block_k=4)
    assert torch.equal(out[0, 2], torch.zeros(4, dtype=torch.float64)) and torch.equal(out[1], torch.zeros_like(out[1]))
    assert state.row_sum[0, 2] == 0 and state.logsumexp[0, 2] == float("-inf")
    (out * torch.randn_like(out)).sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    assert torch.equal(q.grad[0, 2], torch.zeros(8, dtype=torch.float64)) and torch.equal(
        q.grad[1], torch.zeros_like(q.grad[1])
    )
    assert not k.grad[1].any() and not v.grad[1].any()
    torch.testing.assert_close(out, reference(q, k, v, mask), **TOL[torch.float64])


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("mask_kind", [None, "causal", "random"])
def test_gradcheck(mask_kind):
    q, k, v = qkv(2, 1, Tq=5, Tk=7, d_k=3, d_v=2, dtype=torch.float64, requires_grad=True)
    mask = make_mask(mask_kind, 2, 5, 7, seed=4)
    if mask is not None:
        mask = mask.clone()
        mask[..., 1, :] = False  # an empty row too

    def f(q, k, v):
        return tiled_attention(q, k, v, mask, block_q=2, block_k=3)[0]

    assert torch.autograd.gradcheck(f, (q, k, v))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mask_kind", [None, "causal", "padding"])
def test_gradients_equal_torch(dtype, mask_kind):
    q, k, v = qkv(2, 2, Tq=70, Tk=70, d_k=16, d_v=8, dtype=dtype, seed=5, requires_grad=True)
    mask = make_mask(mask_kind, 2, 70, 70)
    d_out = torch.randn(2, 2, 70, 8, dtype=dtype, generator=torch.Generator().manual_seed(6))
    out, _ = tiled_attention(q, k, v, mask, block_q=16, block_k=32)
    grads = torch.autograd.grad(out, (q, k, v), d_out)
    expected = torch.autograd.grad(reference(q, k, v, mask), (q, k, v), d_out)
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else TOL[dtype]
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want, **tol)


def test_gradients_reach_broadcast_inputs():
    q, _, _ = qkv(3, Tq=6, Tk=5, dtype=torch.float64, requires_grad=True)
    _, k, v = qkv(1, Tq=6, Tk=5, dtype=torch.float64, seed=2, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, v: tiled_attention(q, k, v, block_q=4, block_k=2)[0], (q, k, v))


# ---------------------------------------------------------------- causal and window masks built inside the tiles


def dense_index_mask(Tq, Tk, causal, window):
    """The (Tq, Tk) mask that causal / window stand for, from attn.masks (aligned at the first position)."""
    T = max(Tq, Tk)
    if window is not None:
        return sliding_window_mask(T, window, causal=causal)[:Tq, :Tk]
    if causal:
        return causal_mask(T)[:Tq, :Tk]
    return torch.ones(Tq, Tk, dtype=torch.bool)


def attn_reference(q, k, v, mask, scale=None):
    """attn's own attention, which stores the (Tq, Tk) weights (zero output on rows with nothing to see)."""
    return attn.scaled_dot_product_attention(q, k, v, mask, scale=scale)[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("causal", "window"), [(True, None), (True, 1), (True, 5), (False, 3), (False, 1), (True, 99)])
@pytest.mark.parametrize(
    ("Tq", "Tk", "block_q", "block_k"), [(24, 24, 4, 4), (23, 23, 8, 5), (13, 29, 4, 8), (29, 13, 8, 5), (9, 9, 64, 64)]
)
def test_causal_and_window_equal_the_dense_mask(dtype, causal, window, Tq, Tk, block_q, block_k):
    q, k, v = qkv(2, 3, Tq=Tq, Tk=Tk, d_k=8, d_v=5, dtype=dtype, seed=7, requires_grad=True)
    mask = dense_index_mask(Tq, Tk, causal, window)
    out, state = tiled_attention(q, k, v, block_q=block_q, block_k=block_k, causal=causal, window=window)
    expected = attn_reference(q, k, v, mask)
    torch.testing.assert_close(out, expected, **TOL[dtype])
    scores = (q @ k.transpose(-2, -1) / math.sqrt(8)).masked_fill(~mask, float("-inf"))  # (2, 3, Tq, Tk)
    torch.testing.assert_close(state.logsumexp, torch.logsumexp(scores, -1), **TOL[dtype])
    d_out = torch.randn(out.shape, dtype=dtype, generator=torch.Generator().manual_seed(8))
    grads = torch.autograd.grad(out, (q, k, v), d_out)
    want = torch.autograd.grad(expected, (q, k, v), d_out)
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else TOL[dtype]
    for got, w in zip(grads, want, strict=True):
        torch.testing.assert_close(got, w, **tol)


def test_window_with_causal_is_the_library_sliding_window_mask():
    """window=w alone is the symmetric band |i - j| < w; with causal, i - w < j <= i: sliding_window_mask's two."""
    q, k, v = qkv(2, Tq=16, Tk=16, dtype=torch.float64, seed=3)
    for causal in (True, False):
        out, _ = tiled_attention(q, k, v, block_q=3, block_k=5, causal=causal, window=4)
        expected = attn_reference(q, k, v, sliding_window_mask(16, 4, causal=causal))
        torch.testing.assert_close(out, expected, **TOL[torch.float64])
    symmetric, _ = tiled_attention(q, k, v, block_q=3, block_k=5, window=4)
    causal, _ = tiled_attention(q, k, v, block_q=3, block_k=5, causal=True, window=4)
    assert not torch.allclose(symmetric[:, :-1], causal[:, :-1])  # the two bands differ (but for the last row)


def test_a_padding_mask_applies_on_top_of_causal():
    B, T = 3, 21
    q, k, v = qkv(B, 2, Tq=T, Tk=T, dtype=torch.float64, seed=9, requires_grad=True)
    padding = padding_mask(torch.tensor([21, 7, 1]), T)[:, None, None, :]  # (B, 1, 1, T)
    out, _ = tiled_attention(q, k, v, padding, block_q=4, block_k=6, causal=True, window=6)
    expected = attn_reference(q, k, v, padding & sliding_window_mask(T, 6))
    torch.testing.assert_close(out, expected, **TOL[torch.float64])
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    for got, want in zip(grads, torch.autograd.grad(expected.square().sum(), (q, k, v)), strict=True):
        torch.testing.assert_close(got, want, **TOL[torch.float64])


def test_rows_with_no_key_in_their_window_give_zero_output_and_gradient():
    q, k, v = qkv(2, Tq=12, Tk=4, dtype=torch.float64, requires_grad=True)
    out, state = tiled_attention(q, k, v, block_q=5, block_k=3, causal=True, window=3)  # rows 6.. see no key
    assert torch.equal(out[:, 6:], torch.zeros_like(out[:, 6:])) and bool((state.row_sum[:, 6:] == 0).all())
    torch.testing.assert_close(out, attn_reference(q, k, v, dense_index_mask(12, 4, True, 3)), **TOL[torch.float64])
    out.sum().backward()
    assert torch.equal(q.grad[:, 6:], torch.zeros_like(q.grad[:, 6:])) and torch.isfinite(k.grad).all()


def test_gradcheck_causal_window():
    q, k, v = qkv(2, Tq=7, Tk=9, d_k=3, d_v=2, dtype=torch.float64, requires_grad=True)
    for causal, window in ((True, None), (True, 3), (False, 2)):
        assert torch.autograd.gradcheck(
            lambda q, k, v, c=causal, w=window: tiled_attention(q, k, v, block_q=2, block_k=3, causal=c, window=w)[0],
            (q, k, v),
        )


@st.composite
def windowed_problem(draw):
    batch = draw(st.sampled_from([(), (2,), (2, 3)]))
    Tq, Tk, d_k, d_v = (draw(st.integers(1, n)) for n in (24, 24, 6, 5))
    block_q, block_k = draw(st.integers(1, 26)), draw(st.integers(1, 26))
    causal = draw(st.booleans())
    window = draw(st.one_of(st.none(), st.integers(1, 30)))
    seed = draw(st.integers(0, 2**31 - 1))
    q, k, v = qkv(*batch, Tq=Tq, Tk=Tk, d_k=d_k, d_v=d_v, seed=seed, dtype=torch.float64, requires_grad=True)
    return q, k, v, block_q, block_k, causal, window


@given(windowed_problem())
def test_property_causal_and_window_equal_the_dense_mask_with_gradients(problem):
    q, k, v, block_q, block_k, causal, window = problem
    mask = dense_index_mask(q.shape[-2], k.shape[-2], causal, window)
    out, _ = tiled_attention(q, k, v, block_q=block_q, block_k=block_k, causal=causal, window=window)
    expected = attn_reference(q, k, v, mask)
    torch.testing.assert_close(out, expected, **TOL[torch.float64])
    d_out = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for got, want in zip(
        torch.autograd.grad(out, (q, k, v), d_out), torch.autograd.grad(expected, (q, k, v), d_out), strict=True
    ):
        torch.testing.assert_close(got, want, **TOL[torch.float64])


@given(windowed_problem())
def test_property_index_mask_equals_the_same_mask_given_as_a_tensor(problem):
    """Skipping tiles changes nothing: the output and the statistics equal those of the dense mask, tiled."""
    q, k, v, block_q, block_k, causal, window = problem
    mask = dense_index_mask(q.shape[-2], k.shape[-2], causal, window)
    with torch.no_grad():
        out, state = tiled_attention(q, k, v, block_q=block_q, block_k=block_k, causal=causal, window=window)
        out2, state2 = tiled_attention(q, k, v, mask, block_q=block_q, block_k=block_k)
    torch.testing.assert_close(out, out2, **TOL[torch.float64])
    torch.testing.assert_close(state.logsumexp, state2.logsumexp, **TOL[torch.float64])


# ---------------------------------------------------------------- the work: tiles computed and skipped


def count_tiles(fn):
    """The calls of the online softmax's kernel (one per tile computed) while ``fn`` runs."""
    calls = []
    real = tiled_module._online_softmax_update

    def counting(*args):
        calls.append(args[3].shape[-2:])
        return real(*args)

    tiled_module._online_softmax_update = counting
    try:
        fn()
    finally:
        tiled_module._online_softmax_update = real
    return len(calls)


def causal_window_tiles(n, b, w):
    """Closed form for T = n b, square blocks b: query block i sees key blocks i - ⌈(w - 1) / b⌉ .. i."""
    c = -(-(w - 1) // b)
    return sum(min(i, c) + 1 for i in range(n))


@pytest.mark.parametrize(("T", "b"), [(64, 8), (60, 8), (33, 4), (16, 16), (8, 1)])
@pytest.mark.parametrize(("causal", "window"), [(False, None), (True, None), (True, 1), (True, 9), (False, 5)])
def test_tiles_computed_match_tile_work(T, b, causal, window):
    q, k, v = qkv(1, Tq=T, Tk=T, d_k=4, d_v=4)
    work = tile_work(T, T, b, b, causal=causal, window=window)
    computed = count_tiles(lambda: tiled_attention(q, k, v, block_q=b, block_k=b, causal=causal, window=window))
    assert computed == work["tiles"] <= work["all_tiles"] == math.ceil(T / b) ** 2
    assert work["visible"] == int(dense_index_mask(T, T, causal, window).sum()) <= work["scores"]
    n = math.ceil(T / b)
    if causal and window is None:
        assert work["tiles"] == n * (n + 1) // 2
    if causal and window is not None and T % b == 0:
        assert work["tiles"] == causal_window_tiles(n, b, window)
    if not causal and window is None:
        assert work["tiles"] == n * n and work["scores"] == T * T


def test_tile_work_with_unequal_lengths_and_blocks_counts_the_tiles_computed():
    for Tq, Tk, bq, bk, causal, window in [
        (13, 29, 4, 8, True, None),
        (29, 13, 8, 5, True, 4),
        (20, 7, 3, 2, False, 3),
    ]:
        q, k, v = qkv(Tq=Tq, Tk=Tk, d_k=4, d_v=4)
        computed = count_tiles(
            lambda q=q, k=k, v=v, bq=bq, bk=bk, c=causal, w=window: tiled_attention(
                q, k, v, block_q=bq, block_k=bk, causal=c, window=w
            )
        )
        assert computed == tile_work(Tq, Tk, bq, bk, causal=causal, window=window)["tiles"]


@pytest.mark.parametrize(("causal", "window"), [(False, None), (True, None), (True, 24)])
def test_flop_counter_agrees_with_tile_work(causal, window):
    B, H, T, d_k, d_v = 2, 3, 96, 8, 4
    q, k, v = qkv(B, H, Tq=T, Tk=T, d_k=d_k, d_v=d_v, requires_grad=True)
    work = tile_work(T, T, 16, 16, causal=causal, window=window, d_k=d_k, d_v=d_v)
    with FlopCounterMode(display=False) as forward:
        out, _ = tiled_attention(q, k, v, block_q=16, block_k=16, causal=causal, window=window)
    with FlopCounterMode(display=False) as backward:
        out.sum().backward()
    assert forward.get_total_flops() == B * H * work["flops"]
    assert backward.get_total_flops() == B * H * work["backward_flops"]
    if not causal:
        assert work["flops"] == 2 * T * T * (d_k + d_v)  # every score: Q Kᵀ and P V


def test_work_grows_as_t_squared_causal_and_as_t_with_a_window():
    tiles = {(T, w): tile_work(T, T, 64, 64, causal=True, window=w)["tiles"] for T in (1024, 4096) for w in (None, 256)}
    assert tiles[4096, None] / tiles[1024, None] > 14  # n (n + 1) / 2: about 16x for 4x the length
    assert tiles[4096, 256] / tiles[1024, 256] < 4.5  # (T / b)(w / b + 1): about 4x
    assert tile_work(4096, 4096, 64, 64)["tiles"] / tiles[4096, None] == pytest.approx(2, rel=0.02)


def test_no_tensor_of_tq_by_tk_elements_with_the_causal_flag():
    T = 512
    q, k, v = qkv(1, 1, Tq=T, Tk=T, d_k=16, d_v=16, requires_grad=True)
    with LargestOutput() as forward:
        out, _ = tiled_attention(q, k, v, block_q=64, block_k=64, causal=True, window=100)
    with LargestOutput() as backward:
        out.sum().backward()
    assert forward.largest < T * T / 16 and backward.largest < T * T / 16


# ---------------------------------------------------------------- the online softmax


def test_one_update_step_by_hand():
    m, ell = torch.tensor([1.0, float("-inf")]), torch.tensor([2.0, 0.0])
    O = torch.tensor([[3.0], [0.0]])
    S = torch.tensor([[0.0, 2.0], [float("-inf"), 1.0]])
    V = torch.tensor([[10.0], [20.0]])
    m2, ell2, O2 = online_softmax_update(m, ell, O, S, V)
    e = math.exp
    torch.testing.assert_close(m2, torch.tensor([2.0, 1.0]))
    torch.testing.assert_close(ell2, torch.tensor([e(-1) * 2 + e(-2) + 1, 1.0]))
    torch.testing.assert_close(O2, torch.tensor([[e(-1) * 3 + e(-2) * 10 + 20], [20.0]]))


def test_update_keeps_rows_with_only_masked_scores_empty():
    inf = float("inf")
    m2, ell2, O2 = online_softmax_update(torch.tensor([-inf]), torch.zeros(1), torch.zeros(1, 2),
                                         torch.full((1, 3), -inf), torch.ones(3, 2))  # fmt: skip
    assert m2.item() == -inf and ell2.item() == 0 and torch.equal(O2, torch.zeros(1, 2))


def test_update_refuses_what_it_cannot_use_as_the_trace_does():
    """A score of +inf or NaN made NaN here while online_softmax_trace refused it; shapes are named."""
    inf = float("inf")
    m, ell, O, V = torch.tensor([-inf]), torch.zeros(1), torch.zeros(1, 2), torch.ones(3, 2)
    for bad in (torch.tensor([[0.0, inf, 1.0]]), torch.tensor([[0.0, float("nan"), 1.0]])):
        with pytest.raises(ValueError, match=r"scores_tile must be finite or -inf \(masked\)"):
            online_softmax_update(m, ell, O, bad, V)
        with pytest.raises(ValueError, match=r"scores must be finite or -inf"):
            online_softmax_trace(bad[0], 2)
    with pytest.raises(ValueError, match=r"value_tile must be \(3, 2\) for scores_tile \(1, 3\)"):
        online_softmax_update(m, ell, O, torch.zeros(1, 3), torch.ones(2, 2))
    with pytest.raises(ValueError, match="state_sum must be finite and >= 0"):
        online_softmax_update(torch.zeros(1), -torch.ones(1), O, torch.zeros(1, 3), V)
    with pytest.raises(ValueError, match="state_max must be a torch.Tensor"):
        online_softmax_update(None, ell, O, torch.zeros(1, 3), V)


@given(st.lists(st.floats(-30, 30), min_size=1, max_size=20), st.integers(1, 8))
def test_trace_ends_at_the_softmax(values, block):
    scores = torch.tensor(values, dtype=torch.float64)
    steps = online_softmax_trace(scores, block)
    assert len(steps) == math.ceil(len(values) / block)
    assert [s.stop for s in steps][-1] == len(values) and steps[0].start == 0
    torch.testing.assert_close(steps[-1].weights, torch.softmax(scores, 0), **TOL[torch.float64])
    assert steps[-1].row_max == max(values)
    assert math.isclose(steps[-1].row_max + math.log(steps[-1].row_sum), float(torch.logsumexp(scores, 0)))


def test_trace_corrects_earlier_weights_when_the_maximum_grows():
    steps = online_softmax_trace(torch.tensor([1.0, 2.0, 5.0, 0.0]), 2)
    first, second = steps
    assert (first.start, first.stop, second.start, second.stop) == (0, 2, 2, 4)
    assert first.row_max == 2.0 and second.row_max == 5.0
    torch.testing.assert_close(first.weights, torch.softmax(torch.tensor([1.0, 2.0]), 0))
    assert torch.all(second.weights[:2] < first.weights)  # tile 1's weights shrink once tile 2 brings 5
    torch.testing.assert_close(second.weights, torch.softmax(torch.tensor([1.0, 2.0, 5.0, 0.0]), 0))


def test_trace_with_masked_scores():
    steps = online_softmax_trace(torch.tensor([float("-inf"), float("-inf"), 0.0]), 2)
    assert steps[0].row_max == float("-inf") and steps[0].row_sum == 0 and torch.equal(steps[0].weights, torch.zeros(2))
    torch.testing.assert_close(steps[1].weights, torch.tensor([0.0, 0.0, 1.0]))


# ---------------------------------------------------------------- memory: no (Tq, Tk) tensor


class LargestOutput(TorchDispatchMode):
    """Records the largest number of elements of any tensor an op returns."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        sizes = [t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        self.largest = max([self.largest, *sizes])
        return out


@pytest.mark.parametrize("causal", [False, True])
def test_no_tensor_of_tq_by_tk_elements_is_made(causal):
    T = 512
    q, k, v = qkv(1, 1, Tq=T, Tk=T, d_k=64, d_v=64, requires_grad=True)
    mask = attn.causal_mask(T) if causal else None
    with LargestOutput() as forward:
        out, _ = tiled_attention(q, k, v, mask, block_q=64, block_k=64)
    with LargestOutput() as backward:
        out.sum().backward()
    assert forward.largest < T * T / 4 and backward.largest < T * T / 4
    with LargestOutput() as standard:
        attn.scaled_dot_product_attention(q, k, v, mask)
    assert standard.largest >= T * T  # the recorder does see the weights of the standard algorithm


# ---------------------------------------------------------------- bad inputs


def test_bad_inputs_name_the_argument():
    q, k, v = qkv(2, Tq=4, Tk=6)
    with pytest.raises(ValueError, match=r"same d_k.*\(2, 4, 8\).*\(2, 6, 3\)"):
        tiled_attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match=r"mask must have dtype torch.bool"):
        tiled_attention(q, k, v, torch.ones(4, 6))
    with pytest.raises(ValueError, match=r"mask of shape \(4, 5\) does not broadcast.*\(2, 4, 6\)"):
        tiled_attention(q, k, v, torch.ones(4, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"block_q must be a positive int, got 0"):
        tiled_attention(q, k, v, block_q=0)
    with pytest.raises(ValueError, match=r"block_k must be a positive int"):
        tiled_attention(q, k, v, block_k=2.5)
    with pytest.raises(ValueError, match=r"value has length 5"):
        tiled_attention(q, k, v[:, :5])
    with pytest.raises(ValueError, match=r"scale must be a finite number"):
        tiled_attention(q, k, v, scale=float("nan"))
    with pytest.raises(ValueError, match=r"scores must be one row"):
        online_softmax_trace(torch.zeros(2, 3), 2)
    with pytest.raises(ValueError, match=r"block must be a positive int"):
        online_softmax_trace(torch.zeros(3), 0)
    with pytest.raises(ValueError, match=r"T must be a positive int"):
        hbm_traffic(0, 4, 2, 2)
    with pytest.raises(ValueError, match=r"causal must be a bool, got 1"):
        tiled_attention(q, k, v, causal=1)
    with pytest.raises(ValueError, match=r"window must be a positive int, got 0"):
        tiled_attention(q, k, v, window=0)
    with pytest.raises(ValueError, match=r"window must be a positive int, got 2.0"):
        tiled_attention(q, k, v, causal=True, window=2.0)
    with pytest.raises(ValueError, match=r"Tk must be a positive int"):
        tile_work(4, 0, 2, 2)
    with pytest.raises(ValueError, match=r"window must be a positive int"):
        tile_work(4, 4, 2, 2, window=-1)
    with pytest.raises(ValueError, match=r"d_v=3 given without d_k"):
        tile_work(4, 4, 2, 2, d_v=3)


# ---------------------------------------------------------------- HBM traffic


def test_hbm_traffic_by_hand():
    # T = 4, d = 2, one byte a float. Standard: read Q, K (8 + 8), write S (16); read S (16), write P (16);
    # read P (16), V (8), write O (8): 96. Tiled with block_q = 2: two query blocks, each reads its Q_i (4),
    # all of K and V (16) and writes its O_i (4): 48, plus L written (4): 52.
    traffic = hbm_traffic(4, 2, 2, 2, bytes_per_float=1)
    assert traffic["standard"] == 96 and traffic["tiled"] == 52
    assert traffic["ratio"] == pytest.approx(96 / 52)
    assert traffic["fast_memory"] == 2 * 2 * 2 + 2 * 2 * 2 + 2 * 2 + 2 * 2
    assert hbm_traffic(4, 2, 2, 2)["tiled"] == 4 * 52  # float32
    assert hbm_traffic(5, 2, 2, 7, bytes_per_float=1)["tiled"] == 2 * 5 * 2 + 2 * 3 * 5 * 2 + 5  # ⌈5/2⌉ = 3 blocks


def test_hbm_traffic_flash1_by_hand():
    # FlashAttention's Alg. 1 (key/value blocks outside), T = 4, d = 2, block_k = 2, one byte a float: O, ℓ, m
    # initialised in HBM (8 + 4 + 4); K and V read once (16); each of the 2 key blocks reads Q, O (8 + 8), ℓ, m
    # (4 + 4) and writes O, ℓ, m (8 + 4 + 4): 40 a block.
    traffic = hbm_traffic(4, 2, 2, 2, bytes_per_float=1)
    assert traffic["flash1"] == 16 + 16 + 2 * 40
    assert traffic["flash2"] == traffic["tiled"] == 52
    assert hbm_traffic(4, 2, 2, 1, bytes_per_float=1)["flash1"] == 16 + 16 + 4 * 40  # 4 key blocks
    assert hbm_traffic(4, 2, 1, 2, bytes_per_float=1)["flash1"] == traffic["flash1"]  # block_q does not matter


def test_hbm_traffic_loop_orders_scale_with_their_outer_blocks():
    # flash1 rereads Q and O once per key block, flash2 rereads K and V once per query block: both Θ(T² d / b)
    base = hbm_traffic(4096, 64, 128, 128)
    assert hbm_traffic(4096, 64, 128, 256)["flash1"] < base["flash1"]
    assert hbm_traffic(4096, 64, 128, 256)["flash2"] == base["flash2"]
    assert hbm_traffic(4096, 64, 256, 128)["flash2"] < base["flash2"]
    assert base["flash2"] < base["flash1"] < base["standard"]  # 2 T d per block against 3 T d + 4 T


def test_hbm_traffic_grows_as_t_squared_d_over_block():
    small, big = hbm_traffic(1024, 64, 128, 128), hbm_traffic(2048, 64, 128, 128)
    assert big["tiled"] / small["tiled"] == pytest.approx(4, rel=0.1)
    assert hbm_traffic(2048, 64, 256, 128)["tiled"] < big["tiled"]  # bigger query blocks: K and V read fewer times
