"""Exact attention in tiles with the online softmax: the output of ``softmax(Q Kᵀ · scale) V`` computed one
``(block_q, block_k)`` tile of scores at a time, never holding the ``(Tq, Tk)`` matrix.

The online softmax (Milakov & Gimelshein 2018, Algorithm 3) keeps, per query row, a running maximum ``m`` and a
running sum ``ℓ = Σ exp(s - m)``; when a later tile brings a larger maximum, everything summed so far is rescaled
by ``e^{m - m'}``. FlashAttention (Dao et al. 2022, Algorithm 1) tiles attention this way with the key/value
blocks in the *outer* loop: each step reads every query block's ``O``, ``ℓ`` and ``m`` from slow memory and
writes them back, ``O`` normalised by ``ℓ`` at every step; its backward pass (Algorithm 4) recomputes the tiles
from ``Q, K, V``, ``ℓ`` and ``m``. The kernel here follows FlashAttention-2 (Dao 2023, Algorithm 1): the query
blocks are the *outer* loop, the output stays unnormalised (``O / ℓ`` once, after the last key block), and only
the logsumexp ``L = m + log ℓ`` is stored for the backward pass (Algorithm 2), which recomputes ``P = e^{S - L}``:
O(T) extra memory instead of O(T²). Masks follow :mod:`attn.masks`: boolean, ``True`` = may attend; a row with
nothing to attend to gets a zero output. A causal or sliding-window mask can be given as ``causal=`` and
``window=`` instead: it is then built from the indices inside each tile, and the tiles it hides entirely are
skipped (:func:`tile_work` counts them), so the work falls from ``Tq Tk`` scores to about ``Tq Tk / 2``
(causal) or ``Tq · w`` (a window of ``w``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
from torch.autograd.function import once_differentiable

from attn._checks import (
    broadcast_shapes,
    check,
    check_attention,
    check_positive_int,
    checked,
    overflow_error,
    require_tensor,
    shape_of,
)

__all__ = [
    "OnlineSoftmaxState",
    "TraceStep",
    "online_softmax_update",
    "tiled_attention",
    "online_softmax_trace",
    "hbm_traffic",
    "tile_work",
]

_LOW_PRECISION = (torch.float16, torch.bfloat16)
_NEG_INF = float("-inf")


@dataclass(frozen=True)
class OnlineSoftmaxState:
    """The online softmax's statistics after the last tile: ``row_max`` m and ``row_sum`` ℓ = Σ_j exp(s_j - m),
    both ``(..., Tq)``; a row with nothing to attend to has m = -inf and ℓ = 0."""

    row_max: torch.Tensor
    row_sum: torch.Tensor

    @property
    def logsumexp(self) -> torch.Tensor:
        """``L = m + log ℓ = log Σ_j exp(s_j)`` (FlashAttention-2, Dao 2023, Alg. 1 line 13), -inf for an empty
        row."""
        return self.row_max + self.row_sum.log()


@dataclass(frozen=True)
class TraceStep:
    """One tile of :func:`online_softmax_trace`: the keys ``[start, stop)`` just read, the running ``row_max`` m
    and ``row_sum`` ℓ after them, and the normalised ``weights`` ``exp(s_j - m) / ℓ`` of the keys ``[0, stop)``."""

    start: int
    stop: int
    row_max: float
    row_sum: float
    weights: torch.Tensor


def _safe_max(row_max: torch.Tensor) -> torch.Tensor:
    """The maximum used to shift the exponents: -inf (a row with nothing seen yet) replaced by 0, so that
    ``exp(-inf - 0) = 0`` instead of ``exp(-inf + inf) = NaN``."""
    return row_max.masked_fill(row_max == _NEG_INF, 0.0)


def _online_softmax_update_args(
    state_max: torch.Tensor,
    state_sum: torch.Tensor,
    state_out: torch.Tensor,
    scores_tile: torch.Tensor,
    value_tile: torch.Tensor,
) -> None:
    """The shapes :func:`online_softmax_update` documents, and values it can use: scores finite or -inf (masked),
    m finite or -inf, ℓ finite and >= 0."""
    for name, x, dims in (("state_max", state_max, 1), ("state_sum", state_sum, 1), ("state_out", state_out, 2),
                          ("scores_tile", scores_tile, 2), ("value_tile", value_tile, 2)):  # fmt: skip
        require_tensor(name, x, dims)
    lead, (Tq, n), d_v = tuple(scores_tile.shape[:-2]), scores_tile.shape[-2:], value_tile.shape[-1]
    _check_shape("state_max", state_max, (*lead, Tq), scores_tile)
    _check_shape("state_sum", state_sum, (*lead, Tq), scores_tile)
    _check_shape("state_out", state_out, (*lead, Tq, d_v), scores_tile)
    _check_shape("value_tile", value_tile, (*lead, n, d_v), scores_tile)
    _check_finite_or_masked("scores_tile", scores_tile)
    _check_finite_or_masked("state_max", state_max)
    check(bool(((state_sum >= 0) & torch.isfinite(state_sum)).all()), lambda: "state_sum must be finite and >= 0 "
          f"(a running sum of exponentials), got {state_sum.tolist()}")  # fmt: skip


def _check_shape(name: str, x: torch.Tensor, want: tuple[int, ...], scores_tile: torch.Tensor) -> None:
    check(tuple(x.shape) == want, lambda: f"{name} must be {want} for scores_tile {shape_of(scores_tile)} "
          f"(..., Tq, n), got {shape_of(x)}")  # fmt: skip


def _check_finite_or_masked(name: str, x: torch.Tensor) -> None:
    check(not bool((torch.isposinf(x) | torch.isnan(x)).any()),
          lambda: f"{name} must be finite or -inf (masked), got +inf or NaN (shape {shape_of(x)})")  # fmt: skip


@checked(_online_softmax_update_args)
def online_softmax_update(
    state_max: torch.Tensor,
    state_sum: torch.Tensor,
    state_out: torch.Tensor,
    scores_tile: torch.Tensor,
    value_tile: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One tile of the online softmax (Milakov & Gimelshein 2018, Alg. 3; FlashAttention-2, Dao 2023, Alg. 1
    lines 9-10).

    ``m' = max(m, rowmax(S))``, ``ℓ' = e^{m - m'} ℓ + rowsum(e^{S - m'})``, ``O' = e^{m - m'} O + e^{S - m'} V``:
    state_max m and state_sum ℓ ``(..., Tq)``, state_out O ``(..., Tq, d_v)`` (unnormalised, as in
    FlashAttention-2: the output is ``O / ℓ`` after the last tile; FlashAttention's Alg. 1 line 12 divides by ℓ'
    at every step instead), scores_tile S ``(..., Tq, n)`` (``-inf`` = masked), value_tile V ``(..., n, d_v)``.
    Rows that have seen only ``-inf`` keep m = -inf, ℓ = 0, O = 0 (no NaN). Runs the kernel
    :func:`_online_softmax_update`, which the tile loop calls directly (:func:`tiled_attention` checks its own
    arguments once).
    """
    return _online_softmax_update(state_max, state_sum, state_out, scores_tile, value_tile)


def _online_softmax_update(
    state_max: torch.Tensor,
    state_sum: torch.Tensor,
    state_out: torch.Tensor,
    scores_tile: torch.Tensor,
    value_tile: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The kernel of :func:`online_softmax_update` (its arguments unchecked): ``m' = max(m, rowmax(S))``,
    ``ℓ' = e^{m - m'} ℓ + rowsum(e^{S - m'})``, ``O' = e^{m - m'} O + e^{S - m'} V``."""

    new_max = torch.maximum(state_max, scores_tile.amax(dim=-1))  # (..., Tq)
    shift = _safe_max(new_max)  # m', with 0 where it is -inf (..., Tq)
    rescale = torch.exp(state_max - shift)  # e^{m - m'} (..., Tq)
    P = (scores_tile - shift.unsqueeze(-1)).exp_()  # e^{S - m'} (..., Tq, n)
    new_sum = rescale * state_sum + P.sum(dim=-1)  # ℓ' (..., Tq)
    new_out = rescale.unsqueeze(-1) * state_out + P @ value_tile  # O'
    return new_max, new_sum, new_out


# ------------------------------------------------------------------------------------------------------ tiles


def _visible_keys(i0: int, i1: int, Tk: int, causal: bool, window: int | None) -> tuple[int, int]:
    """The keys ``[lo, hi)`` that at least one query of ``[i0, i1)`` may see: query i sees key j when ``j <= i``
    (``causal``) and ``i - window < j`` (``window``; without ``causal`` also ``j < i + window``). Every key in
    the range is seen by some query of the block (the band is contiguous), so a key block outside it is skipped
    and one inside it is not all masked."""
    lo, hi = 0, Tk
    if causal:
        hi = min(hi, i1)
    if window is not None:
        lo = max(lo, i0 - window + 1)
        if not causal:
            hi = min(hi, i1 - 1 + window)
    return lo, hi


def _seeing_queries(j0: int, j1: int, Tq: int, causal: bool, window: int | None) -> tuple[int, int]:
    """The queries ``[lo, hi)`` of which at least one key of ``[j0, j1)`` is seen (the transpose of
    :func:`_visible_keys`, for the backward pass's key-block-outer loop)."""
    lo, hi = 0, Tq
    if causal:
        lo = max(lo, j0)
    if window is not None:
        hi = min(hi, j1 - 1 + window)
        if not causal:
            lo = max(lo, j0 - window + 1)
    return lo, hi


def _blocks(lo: int, hi: int, size: int, T: int) -> range:
    """The starts of the ``size``-blocks of ``[0, T)`` that overlap ``[lo, hi)``."""
    return range((lo // size) * size, min(hi, T), size) if lo < hi else range(0)


def _index_mask(
    i0: int, i1: int, j0: int, j1: int, causal: bool, window: int | None, device: torch.device, cache: dict
) -> torch.Tensor | None:
    """The causal / window mask of the tile ``[i0, i1) × [j0, j1)`` built from the indices ``(i1 - i0, j1 - j0)``
    (True = may attend), or None when the tile is seen whole. Tiles with the same shape and offset ``j0 - i0``
    share one mask (``cache``)."""
    whole = (not causal or j1 - 1 <= i0) and (
        window is None or (j0 > i1 - 1 - window and (causal or j1 - 1 < i0 + window))
    )
    if whole:
        return None
    key = (i1 - i0, j1 - j0, j0 - i0)
    if key not in cache:
        i = torch.arange(i0, i1, device=device)[:, None]  # (block_q, 1)
        j = torch.arange(j0, j1, device=device)[None, :]  # (1, block_k)
        ok = torch.ones(i1 - i0, j1 - j0, dtype=torch.bool, device=device)  # (block_q, block_k)
        if causal:
            ok &= j <= i
        if window is not None:
            ok &= j > i - window
            if not causal:
                ok &= j < i + window
        cache[key] = ok
    return cache[key]


def _tile_mask(mask: torch.Tensor | None, rows: slice, cols: slice) -> torch.Tensor | None:
    """The mask's ``(rows, cols)`` tile; a dimension of size 1 broadcasts, so it is kept whole."""
    if mask is None:
        return None
    return mask[..., rows if mask.shape[-2] > 1 else slice(None), cols if mask.shape[-1] > 1 else slice(None)]


def _both(given: torch.Tensor | None, index: torch.Tensor | None) -> torch.Tensor | None:
    """The tile of the given mask and the one built from indices, together (either may be None)."""
    if given is None or index is None:
        return index if given is None else given
    return given & index


def _scores_tile(q_i: torch.Tensor, k_j: torch.Tensor, mask_ij: torch.Tensor | None) -> torch.Tensor:
    """``S_ij = (Q_i · scale) K_jᵀ`` with masked entries -inf (FlashAttention-2 Alg. 1, line 8): ``(..., bq, bk)``;
    ``q_i`` comes scaled (a ``(block_q, d_k)`` product instead of one over the ``(block_q, block_k)`` tile)."""
    S = q_i @ k_j.transpose(-2, -1)  # (..., block_q, block_k)
    return S if mask_ij is None else S.masked_fill_(~mask_ij, _NEG_INF)


def _forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    bq: int,
    bk: int,
    causal: bool = False,
    window: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FlashAttention-2's forward (Dao 2023, Alg. 1): for each query block (outer loop), the key blocks it may
    see (inner loop), the output divided by ℓ once at the end. Returns ``O (..., Tq, d_v)``, ``m (..., Tq)``,
    ``ℓ (..., Tq)``."""
    *batch, Tq, _ = q.shape
    Tk, d_v = v.shape[-2:]
    out = q.new_zeros(*batch, Tq, d_v)  # (..., Tq, d_v)
    row_max = q.new_full((*batch, Tq), _NEG_INF)  # (..., Tq)
    row_sum = q.new_zeros(*batch, Tq)  # (..., Tq)
    cache: dict = {}
    for i in range(0, Tq, bq):
        i1 = min(i + bq, Tq)
        rows = slice(i, i1)
        q_i = q[..., rows, :] * scale  # (..., block_q, d_k)
        m, ell, O = row_max[..., rows], row_sum[..., rows], out[..., rows, :]
        for j in _blocks(*_visible_keys(i, i1, Tk, causal, window), bk, Tk):  # the tiles not all masked
            j1 = min(j + bk, Tk)
            cols = slice(j, j1)
            mask_ij = _both(_tile_mask(mask, rows, cols), _index_mask(i, i1, j, j1, causal, window, q.device, cache))
            S = _scores_tile(q_i, k[..., cols, :], mask_ij)  # (..., block_q, block_k)
            m, ell, O = _online_softmax_update(m, ell, O, S, v[..., cols, :])
        out[..., rows, :] = O / ell.masked_fill(ell == 0, 1.0).unsqueeze(-1)  # O / ℓ; empty rows stay 0
        row_max[..., rows], row_sum[..., rows] = m, ell
    return out, row_max, row_sum


def _backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    out: torch.Tensor,
    lse: torch.Tensor,
    d_out: torch.Tensor,
    scale: float,
    bq: int,
    bk: int,
    causal: bool = False,
    window: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FlashAttention-2's backward by recomputation (Dao 2023, Alg. 2; key blocks outside, as in FlashAttention's
    Alg. 4, but from the logsumexp L rather than ℓ and m): ``P = exp(S - L)``, ``dV += Pᵀ dO``, ``dP = dO Vᵀ``,
    ``dS = P ∘ (dP - D)`` with ``D = rowsum(dO ∘ O)``, ``dQ += dS K``, ``dK += dSᵀ Q`` (times scale); the tiles
    the forward pass skipped are skipped here too."""
    Tq, Tk = q.shape[-2], k.shape[-2]
    D = (d_out * out).sum(dim=-1)  # (..., Tq)
    L = lse.masked_fill(lse == _NEG_INF, float("inf"))  # empty rows: P = exp(S - inf) = 0, no gradient
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    cache: dict = {}
    for j in range(0, Tk, bk):
        j1 = min(j + bk, Tk)
        cols = slice(j, j1)
        k_j, v_j = k[..., cols, :], v[..., cols, :]  # (..., block_k, d_k), (..., block_k, d_v)
        dk_j, dv_j = dk[..., cols, :], dv[..., cols, :]
        for i in _blocks(*_seeing_queries(j, j1, Tq, causal, window), bq, Tq):
            i1 = min(i + bq, Tq)
            rows = slice(i, i1)
            q_i, do_i = q[..., rows, :] * scale, d_out[..., rows, :]  # (..., block_q, d_k), (..., block_q, d_v)
            mask_ij = _both(_tile_mask(mask, rows, cols), _index_mask(i, i1, j, j1, causal, window, q.device, cache))
            S = _scores_tile(q_i, k_j, mask_ij)  # (..., block_q, block_k)
            P = S.sub_(L[..., rows].unsqueeze(-1)).exp_()  # (..., block_q, block_k)
            dv_j += P.transpose(-2, -1) @ do_i  # (..., block_k, d_v)
            dP = do_i @ v_j.transpose(-2, -1)  # (..., block_q, block_k)
            dS = P.mul_(dP.sub_(D[..., rows].unsqueeze(-1)))  # (..., block_q, block_k)
            dq[..., rows, :] += (dS @ k_j).mul_(scale)  # (..., block_q, d_k)
            dk_j += dS.transpose(-2, -1) @ q_i  # (..., block_k, d_k); q_i carries the scale
    return dq, dk, dv


class _TiledAttention(torch.autograd.Function):
    """Forward without autograd's graph; saves only Q, K, V, the mask, O and L (O(T) beyond the inputs)."""

    @staticmethod
    def forward(ctx, q, k, v, mask, scale, bq, bk, causal, window):
        out, row_max, row_sum = _forward(q, k, v, mask, scale, bq, bk, causal, window)
        ctx.save_for_backward(q, k, v, mask, out, OnlineSoftmaxState(row_max, row_sum).logsumexp)
        ctx.blocks = scale, bq, bk, causal, window
        ctx.mark_non_differentiable(row_max, row_sum)
        return out, row_max, row_sum

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out, _d_max, _d_sum):
        q, k, v, mask, out, lse = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, mask, out, lse, d_out.contiguous(), *ctx.blocks)
        return dq, dk, dv, None, None, None, None, None, None


def _check_index_mask(causal: object, window: object) -> None:
    check(isinstance(causal, bool), f"causal must be a bool, got {causal!r}")
    if window is not None:
        check_positive_int("window", window)


def _tiled_args(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None, *,
                block_q: int = 64, block_k: int = 64, scale: float | None = None, causal: bool = False,
                window: int | None = None) -> None:  # fmt: skip
    check_attention(query, key, value, mask, scale, 0.0)
    check_positive_int("block_q", block_q)
    check_positive_int("block_k", block_k)
    _check_index_mask(causal, window)


def _no_overflow(result: tuple[torch.Tensor, OnlineSoftmaxState], query: torch.Tensor, key: torch.Tensor, *args,
                 **kwargs) -> None:  # fmt: skip
    """As :func:`attn.scaled_dot_product_attention`: an overflowed or NaN score is an error, not a NaN output."""
    out, state = result
    overflowed = ~(torch.isfinite(state.row_max) | (state.row_max == _NEG_INF)) | state.row_sum.isnan()  # (..., Tq)
    if not out.is_meta and bool(overflowed.any()):
        raise overflow_error(query, key)


@checked(_tiled_args, after=_no_overflow)
def tiled_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    block_q: int = 64,
    block_k: int = 64,
    scale: float | None = None,
    causal: bool = False,
    window: int | None = None,
) -> tuple[torch.Tensor, OnlineSoftmaxState]:
    """``softmax(Q Kᵀ · scale) V`` in ``(block_q, block_k)`` tiles (FlashAttention-2, Dao 2023, Alg. 1 and 2).

    query ``(..., Tq, d_k)``, key ``(..., Tk, d_k)``, value ``(..., Tk, d_v)``, mask bool broadcastable to
    ``(..., Tq, Tk)`` (``True`` = may attend) -> output ``(..., Tq, d_v)`` and the :class:`OnlineSoftmaxState`
    (``row_max``, ``row_sum``, ``logsumexp``) of every query row. Exact: equal to
    :func:`torch.nn.functional.scaled_dot_product_attention` up to rounding, for any block sizes. No tensor
    larger than one ``(..., block_q, block_k)`` tile of scores is made, and the backward pass recomputes the
    tiles rather than storing the weights. Fully masked rows give a zero output and zero gradients.

    ``causal=True``: query i sees key j only if ``j <= i`` (:func:`attn.masks.causal_mask`, aligned at the
    first position, as torch's ``is_causal``; a decoder whose queries follow ``Tk - Tq`` cached keys needs
    ``j <= i + Tk - Tq``: give that as ``mask``); ``window=w``: only if ``i - w < j`` as well
    (:func:`attn.masks.sliding_window_mask` with ``causal=True``), or ``|i - j| < w`` without ``causal``
    (``sliding_window_mask(T, w, causal=False)``).
    These masks are built from the indices inside each tile, never as a ``(Tq, Tk)`` tensor, and a tile they
    hide entirely is not computed (forward and backward): :func:`tile_work` counts the tiles that are. A
    ``mask`` given as well (padding, say) applies on top; a tile that only ``mask`` hides is still computed.
    """
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    dtype = query.dtype
    if dtype in _LOW_PRECISION:  # accumulate in float32, as the fused kernels do
        query, key, value = query.float(), key.float(), value.float()
    # the door checked that the batches broadcast: neither shape is None
    qk = cast(tuple[int, ...], broadcast_shapes(query.shape[:-2], key.shape[:-2]))
    batch = cast(tuple[int, ...], broadcast_shapes(qk, value.shape[:-2]))
    q = query.expand(*batch, *query.shape[-2:])  # (..., Tq, d_k), a view
    k = key.expand(*batch, *key.shape[-2:])  # (..., Tk, d_k)
    v = value.expand(*batch, *value.shape[-2:])  # (..., Tk, d_v)
    if mask is not None and mask.dim() < 2:
        mask = mask.view(*(1,) * (2 - mask.dim()), *mask.shape)  # (1, Tk) or (1, 1)
    out, row_max, row_sum = _TiledAttention.apply(q, k, v, mask, scale, block_q, block_k, causal, window)
    return out.to(dtype), OnlineSoftmaxState(row_max, row_sum)


def _tile_work_args(Tq: int, Tk: int, block_q: int, block_k: int, *, causal: bool = False, window: int | None = None,
                    d_k: int | None = None, d_v: int | None = None) -> None:  # fmt: skip
    check_positive_int("Tq", Tq)
    check_positive_int("Tk", Tk)
    check_positive_int("block_q", block_q)
    check_positive_int("block_k", block_k)
    _check_index_mask(causal, window)
    if d_k is not None:
        check_positive_int("d_k", d_k)
    check(d_v is None or d_k is not None, lambda: f"d_v={d_v!r} given without d_k: give d_k (the FLOPs need both)")
    if d_v is not None:
        check_positive_int("d_v", d_v)


@checked(_tile_work_args)
def tile_work(
    Tq: int,
    Tk: int,
    block_q: int,
    block_k: int,
    *,
    causal: bool = False,
    window: int | None = None,
    d_k: int | None = None,
    d_v: int | None = None,
) -> dict[str, int]:
    """The work of one head of :func:`tiled_attention` with these sizes and ``causal`` / ``window`` (the same
    loops, without the arithmetic). Returns

    - ``tiles``: the ``(block_q, block_k)`` tiles computed (each one call of :func:`_online_softmax_update` in
      the forward pass; the backward pass computes the same tiles), ``all_tiles`` = ``⌈Tq / block_q⌉ ⌈Tk /
      block_k⌉``, the tiles without skipping;
    - ``scores``: the score entries in the computed tiles (``tiles · block_q · block_k`` where the blocks divide
      the lengths), and ``visible``: the entries the mask lets through (the least any tiling computes);
    - with ``d_k`` (``d_v`` defaults to it): ``flops``, the forward pass's matrix-product FLOPs ``2 · scores ·
      (d_k + d_v)`` (``S = Q Kᵀ`` and ``P V``; what :class:`torch.utils.flop_counter.FlopCounterMode` counts;
      the exponentials and the masking are not counted), and ``backward_flops`` ``2 · scores · (3 d_k + 2 d_v)``
      (S recomputed, dV, dP, dQ, dK).

    Causal with ``Tq = Tk = T`` and square blocks ``b``: ``n (n + 1) / 2`` of the ``n²`` tiles, ``n = ⌈T / b⌉``;
    a causal window ``w`` with ``b`` dividing ``T``: ``Σ_i (min(i, ⌈(w - 1) / b⌉) + 1)``, about ``(T / b)(w / b
    + 1)``, linear in ``T``.
    """
    Tq, Tk, bq, bk = int(Tq), int(Tk), int(block_q), int(block_k)
    tiles = scores = 0
    for i in range(0, Tq, bq):
        i1 = min(i + bq, Tq)
        for j in _blocks(*_visible_keys(i, i1, Tk, causal, window), bk, Tk):
            tiles += 1
            scores += (i1 - i) * (min(j + bk, Tk) - j)
    visible = 0
    for i in range(Tq):  # the keys query i sees, one row at a time
        lo, hi = _visible_keys(i, i + 1, Tk, causal, window)
        visible += max(0, hi - lo)
    work = {"tiles": tiles, "all_tiles": -(-Tq // bq) * -(-Tk // bk), "scores": scores, "visible": visible}
    if d_k is not None:
        d_k, d_v = int(d_k), int(d_k if d_v is None else d_v)
        work["flops"] = 2 * scores * (d_k + d_v)
        work["backward_flops"] = 2 * scores * (3 * d_k + 2 * d_v)
    return work


# ------------------------------------------------------------------------------------------ teaching helpers


def _online_softmax_trace_args(scores: torch.Tensor, block: int) -> None:
    require_tensor("scores", scores, 1)
    check(scores.dim() == 1, lambda: f"scores must be one row (T,), got shape {shape_of(scores)}")
    check(not bool(torch.isposinf(scores).any() | torch.isnan(scores).any()),
          lambda: f"scores must be finite or -inf (masked), got {scores.tolist()}")  # fmt: skip
    check_positive_int("block", block)


@checked(_online_softmax_trace_args)
def online_softmax_trace(scores: torch.Tensor, block: int) -> list[TraceStep]:
    """The online softmax of one row of ``scores`` ``(T,)``, read ``block`` keys at a time (Milakov & Gimelshein
    2018, Alg. 3): after each tile, m, ℓ and the weights ``exp(s_j - m) / ℓ`` of every key seen so far. When a
    tile raises the maximum, the earlier weights shrink; the last step's weights are ``softmax(scores)``."""
    block = int(block)
    m, ell = scores.new_full((), _NEG_INF), scores.new_zeros(())
    no_out = scores.new_zeros(0)  # the trace follows m and ℓ only: O and V have zero columns
    steps = []
    for start in range(0, scores.shape[0], block):
        stop = min(start + block, scores.shape[0])
        m, ell, _ = _online_softmax_update(m, ell, no_out, scores[start:stop], scores.new_zeros(stop - start, 0))
        weights = (scores[:stop] - _safe_max(m)).exp() / (ell if ell > 0 else 1.0)  # (stop,)
        steps.append(TraceStep(start, stop, float(m), float(ell), weights))
    return steps


def _hbm_traffic_args(T: int, d: int, block_q: int, block_k: int, bytes_per_float: int = 4) -> None:
    check_positive_int("T", T)
    check_positive_int("d", d)
    check_positive_int("block_q", block_q)
    check_positive_int("block_k", block_k)
    check_positive_int("bytes_per_float", bytes_per_float)


@checked(_hbm_traffic_args)
def hbm_traffic(T: int, d: int, block_q: int, block_k: int, bytes_per_float: int = 4) -> dict[str, float]:
    """Bytes moved between slow (HBM) and fast (SRAM) memory by one head's attention forward pass, for Q, K, V
    and O of shape ``(T, d)``: the count behind Dao et al. 2022, Theorem 2, for both loop orders.

    - ``standard`` (Dao et al. 2022, Alg. 0): read Q, K, write S; read S, write P; read P, V, write O:
      ``4 T d + 4 T²`` floats, Θ(T d + T²);
    - ``flash1``, FlashAttention (Dao et al. 2022, Alg. 1), **key/value blocks outside**: O, ℓ, m initialised
      in HBM (``T d + 2 T``); K and V read once (``2 T d``); each of the ``n_k = ⌈T / block_k⌉`` key blocks reads
      every Q_i, O_i, ℓ_i, m_i and writes O_i, ℓ_i, m_i back (``3 T d + 4 T``): ``3 T d + 2 T + n_k (3 T d +
      4 T)`` floats, Θ(T² d / block_k);
    - ``flash2`` (= ``tiled``, what :func:`tiled_attention` does), FlashAttention-2 (Dao 2023, Alg. 1),
      **query blocks outside**: Q read and O written once, each of the ``n_q = ⌈T / block_q⌉`` query blocks
      reads all of K and V, and the logsumexp L (T floats) is written for the backward pass: ``2 T d + 2 n_q T d
      + T`` floats, Θ(T² d / block_q).

    What it leaves out: the backward pass (its own loops: Dao et al. 2022, Alg. 4; Dao 2023, Alg. 2); a mask (none is
    read; a causal mask that skips tiles, as ``tiled_attention(causal=True)`` does, roughly halves the K, V
    reads of ``flash2``); dropout; more than one head or batch element (multiply); caches (every transfer is
    counted, although K and V blocks read by several query blocks may be served from a GPU's L2 cache); and the
    extra passes over S a real softmax makes (Alg. 0 reads S once). Each float is ``bytes_per_float`` bytes:
    4 (float32, the default, the dtype of this book's measurements); the papers' kernels run in float16 /
    bfloat16 (2).

    Returns ``standard``, ``flash1``, ``flash2`` and ``tiled`` (bytes), ``ratio`` = standard / tiled, and
    ``fast_memory``: the bytes one tile step needs in fast memory (Q_i, O_i, K_j, V_j, S_ij, m_i, ℓ_i): ``2
    block_q d + 2 block_k d + block_q block_k + 2 block_q``, the same for both loop orders.
    """
    T, d, bq, bk, size = int(T), int(d), int(block_q), int(block_k), int(bytes_per_float)
    n_q, n_k = -(-T // bq), -(-T // bk)  # ⌈T / block_q⌉, ⌈T / block_k⌉
    standard = 4 * T * d + 4 * T * T
    flash1 = (T * d + 2 * T) + 2 * T * d + n_k * (3 * T * d + 4 * T)
    flash2 = 2 * T * d + 2 * n_q * T * d + T
    fast = 2 * bq * d + 2 * bk * d + bq * bk + 2 * bq
    return {
        "standard": standard * size,
        "flash1": flash1 * size,
        "flash2": flash2 * size,
        "tiled": flash2 * size,
        "ratio": standard / flash2,
        "fast_memory": fast * size,
    }
