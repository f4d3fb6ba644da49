"""Exact attention in tiles with the online softmax: the output of ``softmax(Q Kᵀ · scale) V`` computed one
``(block_q, block_k)`` tile of scores at a time, never holding the ``(Tq, Tk)`` matrix.

The online softmax (Milakov & Gimelshein 2018, Algorithm 3) keeps, per query row, a running maximum ``m`` and a
running sum ``ℓ = Σ exp(s - m)``; when a later tile brings a larger maximum, everything summed so far is rescaled
by ``e^{m - m'}``. FlashAttention (Dao et al. 2022, Algorithm 1) carries the unnormalised output ``O`` along with
them, and its backward pass (Algorithm 2 / Algorithm 4) recomputes the tiles from ``Q, K, V`` and the saved
``logsumexp`` instead of storing the weights: O(T) extra memory instead of O(T²). Masks follow
:mod:`attn.masks`: boolean, ``True`` = may attend; a row with nothing to attend to gets a zero output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.autograd.function import once_differentiable

from attn._checks import broadcast_shapes, check_positive_int, require_tensor, shape_of
from attn.functional import _check_sdpa_args, _finite_number

__all__ = [
    "OnlineSoftmaxState",
    "TraceStep",
    "online_softmax_update",
    "tiled_attention",
    "online_softmax_trace",
    "hbm_traffic",
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
        """``L = m + log ℓ = log Σ_j exp(s_j)`` (FlashAttention Algorithm 2, line 13), -inf for an empty row."""
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


def online_softmax_update(
    state_max: torch.Tensor,
    state_sum: torch.Tensor,
    state_out: torch.Tensor,
    scores_tile: torch.Tensor,
    value_tile: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One tile of the online softmax (Milakov & Gimelshein 2018, Alg. 3; FlashAttention Alg. 1, lines 10-12).

    ``m' = max(m, rowmax(S))``, ``ℓ' = e^{m - m'} ℓ + rowsum(e^{S - m'})``, ``O' = e^{m - m'} O + e^{S - m'} V``:
    state_max m and state_sum ℓ ``(..., Tq)``, state_out O ``(..., Tq, d_v)`` (unnormalised: the output is
    ``O / ℓ`` after the last tile), scores_tile S ``(..., Tq, n)`` (``-inf`` = masked), value_tile V
    ``(..., n, d_v)``. Rows that have seen only ``-inf`` keep m = -inf, ℓ = 0, O = 0 (no NaN).
    """
    new_max = torch.maximum(state_max, scores_tile.amax(dim=-1))  # (..., Tq)
    shift = _safe_max(new_max)  # m', with 0 where it is -inf (..., Tq)
    rescale = torch.exp(state_max - shift)  # e^{m - m'} (..., Tq)
    P = (scores_tile - shift.unsqueeze(-1)).exp_()  # e^{S - m'} (..., Tq, n)
    new_sum = rescale * state_sum + P.sum(dim=-1)  # ℓ' (..., Tq)
    new_out = rescale.unsqueeze(-1) * state_out + P @ value_tile  # O'
    return new_max, new_sum, new_out


# ------------------------------------------------------------------------------------------------------ tiles


def _tile_mask(mask: torch.Tensor | None, rows: slice, cols: slice) -> torch.Tensor | None:
    """The mask's ``(rows, cols)`` tile; a dimension of size 1 broadcasts, so it is kept whole."""
    if mask is None:
        return None
    return mask[..., rows if mask.shape[-2] > 1 else slice(None), cols if mask.shape[-1] > 1 else slice(None)]


def _scores_tile(q_i: torch.Tensor, k_j: torch.Tensor, mask_ij: torch.Tensor | None) -> torch.Tensor:
    """``S_ij = (Q_i · scale) K_jᵀ`` with masked entries -inf (FlashAttention Alg. 1, line 9): ``(..., bq, bk)``;
    ``q_i`` comes scaled (a ``(block_q, d_k)`` product instead of one over the ``(block_q, block_k)`` tile)."""
    S = q_i @ k_j.transpose(-2, -1)  # (..., block_q, block_k)
    return S if mask_ij is None else S.masked_fill_(~mask_ij, _NEG_INF)


def _forward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float, bq: int, bk: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FlashAttention's forward (Alg. 1, loops in the order of FlashAttention-2): for each query block, every key
    block once. Returns ``O (..., Tq, d_v)``, ``m (..., Tq)``, ``ℓ (..., Tq)``."""
    *batch, Tq, _ = q.shape
    Tk, d_v = v.shape[-2:]
    out = q.new_zeros(*batch, Tq, d_v)  # (..., Tq, d_v)
    row_max = q.new_full((*batch, Tq), _NEG_INF)  # (..., Tq)
    row_sum = q.new_zeros(*batch, Tq)  # (..., Tq)
    for i in range(0, Tq, bq):
        rows = slice(i, i + bq)
        q_i = q[..., rows, :] * scale  # (..., block_q, d_k)
        m, ell, O = row_max[..., rows], row_sum[..., rows], out[..., rows, :]
        for j in range(0, Tk, bk):
            cols = slice(j, j + bk)
            S = _scores_tile(q_i, k[..., cols, :], _tile_mask(mask, rows, cols))  # (..., block_q, block_k)
            m, ell, O = online_softmax_update(m, ell, O, S, v[..., cols, :])
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
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FlashAttention's backward by recomputation (Alg. 2 / Alg. 4): ``P = exp(S - L)``, ``dV += Pᵀ dO``,
    ``dP = dO Vᵀ``, ``dS = P ∘ (dP - D)`` with ``D = rowsum(dO ∘ O)``, ``dQ += dS K``, ``dK += dSᵀ Q`` (times scale)."""
    Tq, Tk = q.shape[-2], k.shape[-2]
    D = (d_out * out).sum(dim=-1)  # (..., Tq)
    L = lse.masked_fill(lse == _NEG_INF, float("inf"))  # empty rows: P = exp(S - inf) = 0, no gradient
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for j in range(0, Tk, bk):
        cols = slice(j, j + bk)
        k_j, v_j = k[..., cols, :], v[..., cols, :]  # (..., block_k, d_k), (..., block_k, d_v)
        dk_j, dv_j = dk[..., cols, :], dv[..., cols, :]
        for i in range(0, Tq, bq):
            rows = slice(i, i + bq)
            q_i, do_i = q[..., rows, :] * scale, d_out[..., rows, :]  # (..., block_q, d_k), (..., block_q, d_v)
            S = _scores_tile(q_i, k_j, _tile_mask(mask, rows, cols))  # (..., block_q, block_k)
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
    def forward(ctx, q, k, v, mask, scale, bq, bk):
        out, row_max, row_sum = _forward(q, k, v, mask, scale, bq, bk)
        ctx.save_for_backward(q, k, v, mask, out, OnlineSoftmaxState(row_max, row_sum).logsumexp)
        ctx.blocks = scale, bq, bk
        ctx.mark_non_differentiable(row_max, row_sum)
        return out, row_max, row_sum

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out, _d_max, _d_sum):
        q, k, v, mask, out, lse = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, mask, out, lse, d_out.contiguous(), *ctx.blocks)
        return dq, dk, dv, None, None, None, None


def tiled_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    block_q: int = 64,
    block_k: int = 64,
    scale: float | None = None,
) -> tuple[torch.Tensor, OnlineSoftmaxState]:
    """``softmax(Q Kᵀ · scale) V`` in ``(block_q, block_k)`` tiles (FlashAttention, Dao et al. 2022, Alg. 1).

    query ``(..., Tq, d_k)``, key ``(..., Tk, d_k)``, value ``(..., Tk, d_v)``, mask bool broadcastable to
    ``(..., Tq, Tk)`` (``True`` = may attend) -> output ``(..., Tq, d_v)`` and the :class:`OnlineSoftmaxState`
    (``row_max``, ``row_sum``, ``logsumexp``) of every query row. Exact: equal to
    :func:`torch.nn.functional.scaled_dot_product_attention` up to rounding, for any block sizes. No tensor
    larger than one ``(..., block_q, block_k)`` tile of scores is made, and the backward pass recomputes the
    tiles (Alg. 2) rather than storing the weights. Fully masked rows give a zero output and zero gradients.
    """
    _check_sdpa_args(query, key, value, mask, 0.0)
    bq, bk = check_positive_int("block_q", block_q), check_positive_int("block_k", block_k)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else _finite_number("scale", scale)
    dtype = query.dtype
    if dtype in _LOW_PRECISION:  # accumulate in float32, as the fused kernels do
        query, key, value = query.float(), key.float(), value.float()
    batch = broadcast_shapes(broadcast_shapes(query.shape[:-2], key.shape[:-2]), value.shape[:-2])
    q = query.expand(*batch, *query.shape[-2:])  # (..., Tq, d_k), a view
    k = key.expand(*batch, *key.shape[-2:])  # (..., Tk, d_k)
    v = value.expand(*batch, *value.shape[-2:])  # (..., Tk, d_v)
    if mask is not None and mask.dim() < 2:
        mask = mask.view(*(1,) * (2 - mask.dim()), *mask.shape)  # (1, Tk) or (1, 1)
    out, row_max, row_sum = _TiledAttention.apply(q, k, v, mask, scale, bq, bk)
    return out.to(dtype), OnlineSoftmaxState(row_max, row_sum)


# ------------------------------------------------------------------------------------------ teaching helpers


def online_softmax_trace(scores: torch.Tensor, block: int) -> list[TraceStep]:
    """The online softmax of one row of ``scores`` ``(T,)``, read ``block`` keys at a time (Milakov & Gimelshein
    2018, Alg. 3): after each tile, m, ℓ and the weights ``exp(s_j - m) / ℓ`` of every key seen so far. When a
    tile raises the maximum, the earlier weights shrink; the last step's weights are ``softmax(scores)``."""
    require_tensor("scores", scores, 1)
    if scores.dim() != 1:
        raise ValueError(f"scores must be one row (T,), got shape {shape_of(scores)}")
    if bool(torch.isposinf(scores).any() | torch.isnan(scores).any()):
        raise ValueError(f"scores must be finite or -inf (masked), got {scores.tolist()}")
    block = check_positive_int("block", block)
    m, ell = scores.new_full((), _NEG_INF), scores.new_zeros(())
    no_out = scores.new_zeros(0)  # the trace follows m and ℓ only: O and V have zero columns
    steps = []
    for start in range(0, scores.shape[0], block):
        stop = min(start + block, scores.shape[0])
        m, ell, _ = online_softmax_update(m, ell, no_out, scores[start:stop], scores.new_zeros(stop - start, 0))
        weights = (scores[:stop] - _safe_max(m)).exp() / (ell if ell > 0 else 1.0)  # (stop,)
        steps.append(TraceStep(start, stop, float(m), float(ell), weights))
    return steps


def hbm_traffic(T: int, d: int, block_q: int, block_k: int, bytes_per_float: int = 4) -> dict[str, float]:
    """Bytes moved between slow (HBM) and fast (SRAM) memory by one attention forward (Dao et al. 2022, §3.2,
    Theorem 2), counting every float read or written once per transfer, for Q, K, V of shape ``(T, d)``.

    - standard (Alg. 0): read Q, K, write S; read S, write P; read P, V, write O:
      ``4 T d + 4 T²`` floats, Θ(T d + T²);
    - tiled (Alg. 1, query blocks outside): Q read and O written once, each of the ``n_q = ⌈T / block_q⌉`` query
      blocks reads all of K and V, and the logsumexp L (T floats) is written for the backward pass:
      ``2 T d + 2 n_q T d + T`` floats, Θ(T² d / block_q).

    Returns ``standard`` and ``tiled`` (bytes), ``ratio`` = standard / tiled, and ``fast_memory``: the bytes one
    tile step needs in fast memory (Q_i, O_i, K_j, V_j, S_ij, m_i, ℓ_i): ``2 block_q d + 2 block_k d + block_q
    block_k + 2 block_q``. ``block_k`` changes only this working set, not the traffic.
    """
    T, d = check_positive_int("T", T), check_positive_int("d", d)
    bq, bk = check_positive_int("block_q", block_q), check_positive_int("block_k", block_k)
    size = check_positive_int("bytes_per_float", bytes_per_float)
    n_q = -(-T // bq)  # ⌈T / block_q⌉
    standard = 4 * T * d + 4 * T * T
    tiled = 2 * T * d + 2 * n_q * T * d + T
    fast = 2 * bq * d + 2 * bk * d + bq * bk + 2 * bq
    return {"standard": standard * size, "tiled": tiled * size, "ratio": standard / tiled, "fast_memory": fast * size}
