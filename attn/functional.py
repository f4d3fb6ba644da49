"""The core of every attention mechanism: scores -> mask -> softmax -> weighted sum of values.

Every function here is plain (no parameters held) and returns ``(output, weights)`` where the weights
matter, so that the pictures in the book show exactly what ``forward`` computed. Masks follow the one
convention of :mod:`attn.masks`: boolean, ``True`` = may attend.
"""

from __future__ import annotations

import math
import numbers

import torch

from attn._checks import (
    broadcast_shapes,
    check,
    check_attention,
    check_dropout,
    check_finite_number,
    check_mask,
    check_positive_number,
    check_query_key,
    check_same_dtype,
    check_shapes,
    checked,
    describe,
    overflow_error,
    require_tensor,
    shape_of,
)

__all__ = [
    "softmax",
    "dot_product_scores",
    "cosine_scores",
    "additive_scores",
    "attend",
    "content_addressing",
    "scaled_dot_product_attention",
]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


# ------------------------------------------------------------------------------- the checks at each door


def _softmax_args(x: torch.Tensor, dim: int = -1, temperature: float | torch.Tensor = 1.0) -> None:
    require_tensor("x", x, 1)
    n = x.dim()
    check(not isinstance(dim, bool) and isinstance(dim, numbers.Integral) and -n <= dim < n,
          lambda: f"dim must be an int in [{-n}, {n - 1}] for x of shape {shape_of(x)}, got {dim!r}")  # fmt: skip
    if isinstance(temperature, torch.Tensor):
        t = temperature
        check(t.numel() == 1 and t.is_floating_point(),
              lambda: f"a tensor temperature must be one float, got {t.dtype} {shape_of(t)}")  # fmt: skip
        temperature = t.item()
    check_positive_number("temperature", temperature)
    check(
        not bool(torch.isposinf(x).any()), lambda: f"x contains +inf (shape {shape_of(x)}): softmax is undefined there"
    )


def _cosine_args(query: torch.Tensor, key: torch.Tensor, eps: float = 1e-8) -> None:
    check_query_key(query, key)
    check_positive_number("eps", eps)


def _content_args(key: torch.Tensor, memory: torch.Tensor, strength: float | torch.Tensor = 1.0) -> None:
    check_shapes(key=(key, "... W"), memory=(memory, "... N W"))
    if not isinstance(strength, torch.Tensor):
        check(check_finite_number("strength", strength) >= 0, f"strength must be >= 0, got {strength}")
    strength = torch.as_tensor(strength, dtype=key.dtype, device=key.device)
    check(not strength.numel() or bool(((strength >= 0) & torch.isfinite(strength)).all()),
          lambda: f"strength must be finite and >= 0, got values from {float(strength.min()):.4g} "
          f"to {float(strength.max()):.4g} (shape {tuple(strength.shape)})")  # fmt: skip
    check(broadcast_shapes(tuple(strength.shape), tuple(key.shape[:-1])) == tuple(key.shape[:-1]),
          f"strength must broadcast to the key's leading dimensions {tuple(key.shape[:-1])}, got shape "
          f"{tuple(strength.shape)}")  # fmt: skip


def _content_overflow(result: tuple[torch.Tensor, torch.Tensor], key: torch.Tensor, memory: torch.Tensor,
                      strength: float | torch.Tensor = 1.0) -> None:  # fmt: skip
    check(bool(torch.isfinite(result[1]).all()), lambda: f"strength is too large for {key.dtype}: β · cos(k, M_i) "
          f"overflows (β up to {float(torch.as_tensor(strength).max()):.4g})")  # fmt: skip


def _projection_args(name: str, W: object, x_name: str, x: torch.Tensor) -> None:
    """``W (d_a, d)`` for the input ``x (..., T, d)``."""
    d, got = x.shape[-1], describe(W)
    check(isinstance(W, torch.Tensor) and W.dim() == 2 and W.shape[1] == d,
          lambda: f"{name} must have shape (d_a, {d}) to match {x_name} {shape_of(x)}, got {got}")  # fmt: skip


def _additive_args(
    query: torch.Tensor, key: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, v: torch.Tensor
) -> None:
    check_shapes(query=(query, "... Tq d_q"), key=(key, "... Tk d_k"))
    _projection_args("W_q", W_q, "query", query)
    _projection_args("W_k", W_k, "key", key)
    require_tensor("W_q", W_q, 2)
    require_tensor("W_k", W_k, 2)
    require_tensor("v", v, 1)
    check(
        W_q.shape[0] == W_k.shape[0] and v.shape == (W_q.shape[0],),
        f"W_q, W_k and v must share d_a: got W_q {shape_of(W_q)}, W_k {shape_of(W_k)}, v {shape_of(v)}",
    )
    check_same_dtype(query=query, key=key, W_q=W_q, W_k=W_k, v=v)


def _attend_args(
    scores: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None, dropout: float = 0.0
) -> None:
    check_dropout(dropout)
    require_tensor("scores", scores, 2)
    require_tensor("value", value, 2)
    check(scores.shape[-1] == value.shape[-2],
          f"value has length Tk={value.shape[-2]} but the scores cover Tk={scores.shape[-1]} keys "
          f"(scores {shape_of(scores)}, value {shape_of(value)})")  # fmt: skip
    check_same_dtype(scores=scores, value=value)
    check_shapes(scores=(scores, "... Tq Tk"), value=(value, "... Tk d_v"))
    if mask is not None:
        check_mask(mask, shape_of(scores), scores.device)
    # -inf is a key not to attend to; +inf is a score that overflowed
    check(
        not bool(torch.isposinf(scores).any()),
        f"scores contain +inf (shape {shape_of(scores)}): did they overflow? Scale them down",
    )


def _no_overflow(result: tuple[torch.Tensor, torch.Tensor], query: torch.Tensor, key: torch.Tensor, *args,
                 **kwargs) -> None:  # fmt: skip
    """Scores that overflowed or are NaN (an infinite or NaN query or key, or a scale that makes them overflow)
    leave a row of NaN weights: the same words from every kernel (see :func:`overflow_error`)."""
    weights = result[1]
    if weights.shape[-1] and bool(weights[..., 0].isnan().any()):
        raise overflow_error(query, key)


# ------------------------------------------------------------------------------------------ the equations


@checked(_softmax_args)
def softmax(x: torch.Tensor, dim: int = -1, temperature: float | torch.Tensor = 1.0) -> torch.Tensor:
    """``softmax(x / temperature)`` along ``dim``: ``exp(x_i / τ) / Σ_j exp(x_j / τ)``.

    Numerically stable (the row maximum is subtracted first; float16 and bfloat16 are computed in
    float32). As ``temperature`` → 0 it approaches the one-hot argmax, as it → ∞ the uniform
    distribution; a one-element tensor temperature is differentiable (a learned sharpness). Entries
    equal to ``-inf`` get weight 0, and a row that is ``-inf`` everywhere (nothing to attend to) gets
    all-zero weights instead of NaN. ``+inf`` is rejected: no distribution can be made from it.
    """
    if x.shape[dim] == 0:  # nothing to attend to
        return torch.zeros_like(x)
    work = x.float() if x.dtype in _LOW_PRECISION else x
    row_max = work.amax(dim=dim, keepdim=True)
    empty = torch.isneginf(row_max)  # rows that are -inf everywhere: nothing to attend to
    any_empty = bool(empty.any())
    if any_empty:
        work = work.masked_fill(empty, 0.0)  # finite scores now, zero weights below: no NaN, no NaN gradient
        row_max = row_max.masked_fill(empty, 0.0)
    if isinstance(temperature, torch.Tensor):  # at least the smallest normal number: 1e-50 in float32 is not 0
        work = (work - row_max) / temperature.to(work.dtype).clamp_min(torch.finfo(work.dtype).tiny)
    elif temperature != 1.0:
        # Shift, then stretch: (x - max) / τ <= 0 cannot overflow. 1/τ is capped so that a tiny τ
        # (1e-50 rounds to 0 in float32) gives the one-hot limit instead of 0/0.
        work = (work - row_max) * min(1.0 / float(temperature), torch.finfo(work.dtype).max)
    weights = torch.softmax(work, dim=dim)  # torch.softmax subtracts the row maximum itself
    if any_empty:
        weights = weights.masked_fill(empty, 0.0)
    return weights.to(x.dtype)


@checked(check_query_key)
def dot_product_scores(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Dot-product scores ``q·k`` (Luong et al. 2015, eq. 8): ``(..., Tq, d_k), (..., Tk, d_k) -> (..., Tq, Tk)``."""
    return query @ key.transpose(-2, -1)


@checked(_cosine_args)
def cosine_scores(query: torch.Tensor, key: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Cosine similarity ``q·k / (|q| |k|)`` (Graves et al. 2014, eq. 6): ``-> (..., Tq, Tk)``, each in [-1, 1]."""
    eps = max(float(eps), torch.finfo(query.dtype).tiny)  # 1e-8 is 0 in float16
    q = query / query.norm(dim=-1, keepdim=True).clamp_min(eps)
    k = key / key.norm(dim=-1, keepdim=True).clamp_min(eps)
    return q @ k.transpose(-2, -1)


@checked(_content_args, after=_content_overflow)
def content_addressing(
    key: torch.Tensor, memory: torch.Tensor, strength: float | torch.Tensor = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Content-based addressing ``w_i = softmax_i(β cos(k, M_i))`` (Graves et al. 2014, eqs. 5-6; the DNC's
    ``C(M, k, β)``), returning the read vector ``Σ_i w_i M_i`` and the weights.

    key ``(..., W)``, memory ``(..., N, W)``, strength β >= 0, a number or ``(...)`` -> read ``(..., W)``, weights
    ``(..., N)``. β = 0 reads the mean of all rows; a large β reads the row most similar to the key. Several heads
    share a memory by giving key and strength a head dimension: key ``(B, R, W)``, memory ``(B, 1, N, W)``, β
    ``(B, R)``.
    """
    strength = torch.as_tensor(strength, dtype=key.dtype, device=key.device).unsqueeze(-1)  # (..., 1)
    similarity = cosine_scores(key.unsqueeze(-2), memory).squeeze(-2)  # (..., N)
    weights = softmax(strength * similarity, dim=-1)  # (..., N)
    return (weights.unsqueeze(-2) @ memory).squeeze(-2), weights  # (..., W), (..., N)


@checked(_additive_args)
def additive_scores(
    query: torch.Tensor, key: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    """Additive scores ``vᵀ tanh(W_q q + W_k k)`` (Bahdanau et al. 2014, eq. 6 / App. A.1.2).

    Shapes: query ``(..., Tq, d_q)``, key ``(..., Tk, d_k)``, ``W_q (d_a, d_q)``, ``W_k (d_a, d_k)``,
    ``v (d_a,)`` -> scores ``(..., Tq, Tk)``. Unlike the dot product, d_q and d_k may differ.
    """
    q = (query @ W_q.T).unsqueeze(-2)  # (..., Tq, 1, d_a)
    k = (key @ W_k.T).unsqueeze(-3)  # (..., 1, Tk, d_a)
    return torch.tanh(q + k) @ v  # (..., Tq, Tk)


@checked(_attend_args)
def attend(
    scores: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None, dropout: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Soft lookup: ``α = softmax(scores)`` over keys where ``mask`` allows, output ``Σ_j α_ij v_j``.

    scores ``(..., Tq, Tk)``, value ``(..., Tk, d_v)``, mask bool broadcastable to ``(..., Tq, Tk)``
    (``True`` = may attend) -> output ``(..., Tq, d_v)``, weights ``(..., Tq, Tk)``. A query row that may
    attend to nothing gets zero weights and a zero output. With ``dropout`` > 0 (training) the output uses
    the weights with dropout applied (as in the Transformer's reference code and
    :class:`torch.nn.MultiheadAttention`); the weights returned are the softmax.
    """
    empty = None
    if mask is not None:
        bias, empty = _mask_bias(mask, scores.dtype)  # -inf where masked, at the mask's own shape
        scores = scores + bias  # broadcast in one addition
    weights = softmax(scores, dim=-1)  # (..., Tq, Tk); rows of -inf only get zero weights
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)  # rows the mask leaves nothing to attend to
    used = torch.nn.functional.dropout(weights, dropout) if dropout > 0 else weights
    return used @ value, weights  # (..., Tq, d_v), (..., Tq, Tk)


@checked(check_attention, after=_no_overflow)
def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
    dropout: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q Kᵀ / √d_k) V`` (Vaswani et al. 2017, eq. 1), returning ``(output, weights)``.

    query ``(..., Tq, d_k)``, key ``(..., Tk, d_k)``, value ``(..., Tk, d_v)``; ``mask`` bool,
    broadcastable to ``(..., Tq, Tk)``, ``True`` = may attend (as in
    :func:`torch.nn.functional.scaled_dot_product_attention`; :class:`torch.nn.MultiheadAttention` uses
    the opposite). ``scale`` defaults to ``1 / √d_k``. Fully masked rows give zero weights and output.
    ``dropout`` (training only) drops weights for the output, not from the weights returned. Query and key
    must be finite (as for PyTorch's function; :func:`attend` also accepts scores of ``-inf``).
    """
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    bias, empty = _mask_bias(mask, query.dtype) if mask is not None else (None, None)
    scores = _scaled_scores(query, key, scale, bias)  # (..., Tq, Tk): Q Kᵀ · scale + bias, one matrix product
    weights = _softmax_last(scores)  # (..., Tq, Tk)
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)  # rows with nothing to attend to: zero weights, zero output
    used = torch.nn.functional.dropout(weights, dropout) if dropout > 0 else weights
    return used @ value, weights  # (..., Tq, d_v), (..., Tq, Tk)


def _mask_bias(mask: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The additive form of a bool mask, at the mask's own (usually small) shape: 0 where it may attend, -inf
    where not, so masked keys get weight exactly 0 and the backward pass has no fill to undo. Rows with nothing
    to attend to get 0 instead (finite scores, no NaN); they are returned as ``empty (..., Tq, 1)`` (None if
    there are none) for the caller to zero their weights."""
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
    empty = ~mask.any(dim=-1, keepdim=True)  # (..., Tq or 1, 1)
    if not bool(empty.any()):
        return bias, None
    return bias.masked_fill_(empty, 0.0), empty


def _scaled_scores(query: torch.Tensor, key: torch.Tensor, scale: float, bias: torch.Tensor | None) -> torch.Tensor:
    """``query @ keyᵀ * scale + bias`` ``(..., Tq, Tk)``; with equal batch dimensions, one ``baddbmm`` (the scale
    and the bias folded into the matrix product: no extra pass over the scores)."""
    *batch, Tq, _ = query.shape
    Tk = key.shape[-2]
    if tuple(batch) != tuple(key.shape[:-2]) or query.dtype in _LOW_PRECISION:
        scores = (query * scale) @ key.transpose(-2, -1)
        return scores if bias is None else scores + bias
    N = math.prod(batch)
    q = query.reshape(N, Tq, query.shape[-1])  # (N, Tq, d_k)
    k = key.reshape(N, Tk, key.shape[-1])  # (N, Tk, d_k)
    if bias is None:
        scores = torch.baddbmm(q.new_zeros(()), q, k.transpose(-2, -1), beta=0.0, alpha=scale)
    else:
        if bias.dim() < 2:
            bias = bias.view(*(1,) * (2 - bias.dim()), *bias.shape)  # (1, Tk) or (1, 1)
        if all(n == 1 for n in bias.shape[:-2]):  # one mask for the whole batch: baddbmm broadcasts it
            bias = bias.reshape(1, *bias.shape[-2:])  # (1, Tq or 1, Tk or 1)
        else:  # the mask broadcasts to the batch (checked): one copy of it per matrix product
            bias = bias.expand(*batch, *bias.shape[-2:]).reshape(N, *bias.shape[-2:])  # (N, Tq or 1, Tk or 1)
        scores = torch.baddbmm(bias, q, k.transpose(-2, -1), alpha=scale)  # (N, Tq, Tk)
    return scores.view(*batch, Tq, Tk)


def _softmax_last(scores: torch.Tensor) -> torch.Tensor:
    """``torch.softmax`` over the last dimension, in float32 for float16 and bfloat16."""
    if scores.dtype in _LOW_PRECISION:
        return torch.softmax(scores, dim=-1, dtype=torch.float32).to(scores.dtype)
    return torch.softmax(scores, dim=-1)
