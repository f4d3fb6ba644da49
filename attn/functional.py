"""The core of every attention mechanism: scores -> mask -> softmax -> weighted sum of values.

Every function here is plain (no parameters held) and returns ``(output, weights)`` where the weights
matter, so that the pictures in the book show exactly what ``forward`` computed. Masks follow the one
convention of :mod:`attn.masks`: boolean, ``True`` = may attend.
"""

from __future__ import annotations

import math
import numbers

import torch

from attn._checks import broadcast_shapes, check_dropout, require_tensor, same_lead, shape_of

__all__ = [
    "softmax",
    "dot_product_scores",
    "cosine_scores",
    "additive_scores",
    "attend",
    "content_weighting",
    "content_addressing",
    "scaled_dot_product_attention",
]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _check_softmax_args(x: torch.Tensor, dim: int, temperature: object) -> float | torch.Tensor:
    require_tensor("x", x, 1)
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim must be an int in [{-x.dim()}, {x.dim() - 1}] for x of shape {shape_of(x)}, got {dim!r}")
    if isinstance(temperature, torch.Tensor):
        if temperature.numel() != 1 or not temperature.is_floating_point():
            raise ValueError(f"a tensor temperature must be one float, got {temperature.dtype} {shape_of(temperature)}")
        _positive_finite("temperature", temperature.item())
    else:
        temperature = _positive_finite("temperature", temperature)
    return temperature


def _finite_number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number, got one too large for a float") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def _scale(scale: object, query: torch.Tensor) -> float:
    """The scores' scale: ``1 / √d_k`` by default, else a finite number that the query's dtype can hold."""
    if scale is None:
        return 1.0 / math.sqrt(query.shape[-1])
    scale = _finite_number("scale", scale)
    largest = torch.finfo(query.dtype).max
    if abs(scale) > largest:
        raise ValueError(f"scale must fit in {query.dtype} (at most {largest:.3g}), got {scale:.3g}")
    return scale


def _overflow_error(query: torch.Tensor, key: torch.Tensor) -> ValueError:
    """What attention says when its scores overflowed or are NaN (an infinite or NaN query or key, or a scale
    that makes them overflow): the same words from every kernel."""
    return ValueError(
        f"the scores Q Kᵀ · scale overflowed or are NaN (query {shape_of(query)}, key {shape_of(key)}): "
        f"the largest |query| is {query.abs().max().item():.3g}, |key| {key.abs().max().item():.3g}"
    )


def _positive_finite(name: str, value: object) -> float:
    value = _finite_number(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return value


def _same_dtype(**tensors: torch.Tensor) -> None:
    dtypes = {t.dtype for t in tensors.values()}
    if len(dtypes) > 1:
        got = ", ".join(f"{name} {t.dtype}" for name, t in tensors.items())
        *first, last = tensors
        raise ValueError(f"{', '.join(first)} and {last} must share a dtype, got {got}")


def softmax(x: torch.Tensor, dim: int = -1, temperature: float | torch.Tensor = 1.0) -> torch.Tensor:
    """``softmax(x / temperature)`` along ``dim``: ``exp(x_i / τ) / Σ_j exp(x_j / τ)``.

    Numerically stable (the row maximum is subtracted first; float16 and bfloat16 are computed in
    float32). As ``temperature`` → 0 it approaches the one-hot argmax, as it → ∞ the uniform
    distribution; a one-element tensor temperature is differentiable (a learned sharpness). Entries
    equal to ``-inf`` get weight 0, and a row that is ``-inf`` everywhere (nothing to attend to) gets
    all-zero weights instead of NaN. ``+inf`` is rejected: no distribution can be made from it.
    """
    temperature = _check_softmax_args(x, dim, temperature)
    if x.shape[dim] == 0:  # nothing to attend to
        return torch.zeros_like(x)
    work = x.float() if x.dtype in _LOW_PRECISION else x
    row_max = work.amax(dim=dim, keepdim=True)
    infinite = torch.isinf(row_max)
    empty = None
    if bool(infinite.any()):
        if bool(torch.isposinf(row_max).any()):
            raise ValueError(f"x contains +inf (shape {shape_of(x)}): softmax is undefined there")
        empty = infinite  # rows that are -inf everywhere: nothing to attend to
        work = work.masked_fill(empty, 0.0)  # finite scores now, zero weights below: no NaN, no NaN gradient
        row_max = row_max.masked_fill(empty, 0.0)
    if isinstance(temperature, torch.Tensor):  # at least the smallest normal number: 1e-50 in float32 is not 0
        work = (work - row_max) / temperature.to(work.dtype).clamp_min(torch.finfo(work.dtype).tiny)
    elif temperature != 1.0:
        # Shift, then stretch: (x - max) / τ <= 0 cannot overflow. 1/τ is capped so that a tiny τ
        # (1e-50 rounds to 0 in float32) gives the one-hot limit instead of 0/0.
        work = (work - row_max) * min(1.0 / temperature, torch.finfo(work.dtype).max)
    weights = torch.softmax(work, dim=dim)  # torch.softmax subtracts the row maximum itself
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)
    return weights.to(x.dtype)


def dot_product_scores(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Dot-product scores ``q·k`` (Luong et al. 2015, eq. 8): ``(..., Tq, d_k), (..., Tk, d_k) -> (..., Tq, Tk)``."""
    _check_query_key(query, key)
    return query @ key.transpose(-2, -1)


def cosine_scores(query: torch.Tensor, key: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Cosine similarity ``q·k / (|q| |k|)`` (Graves et al. 2014, eq. 6): ``-> (..., Tq, Tk)``, each in [-1, 1]."""
    _check_query_key(query, key)
    eps = max(_positive_finite("eps", eps), torch.finfo(query.dtype).tiny)  # 1e-8 is 0 in float16
    q = query / query.norm(dim=-1, keepdim=True).clamp_min(eps)
    k = key / key.norm(dim=-1, keepdim=True).clamp_min(eps)
    return q @ k.transpose(-2, -1)


def content_weighting(memory: torch.Tensor, key: torch.Tensor, strength: torch.Tensor | float) -> torch.Tensor:
    """``w_i = softmax_i(β K[k, M_i])`` with cosine similarity K (NTM eqs. 5-6; the DNC's ``C(M, k, β)``).

    memory ``(..., N, W)``, key ``(..., W)``, strength β ``(...)`` or a number, β >= 0 -> weights ``(..., N)``.
    Several heads share a memory by giving key and strength a head dimension: memory ``(B, 1, N, W)``, key
    ``(B, R, W)``, β ``(B, R)``.
    """
    require_tensor("memory", memory, min_dim=2)
    require_tensor("key", key)
    if key.shape[-1] != memory.shape[-1]:
        raise ValueError(
            f"key and memory rows must have the same width W, got key {tuple(key.shape)} "
            f"and memory {tuple(memory.shape)}"
        )
    same_lead("content_weighting", memory=(memory, 2), key=(key, 1))
    strength = torch.as_tensor(strength, dtype=key.dtype, device=key.device)
    if strength.numel() and not bool(((strength >= 0) & torch.isfinite(strength)).all()):
        raise ValueError(f"strength must be finite and >= 0, got values from {float(strength.min()):.4g} "
                         f"to {float(strength.max()):.4g} (shape {tuple(strength.shape)})")  # fmt: skip
    if broadcast_shapes(tuple(strength.shape), tuple(key.shape[:-1])) != tuple(key.shape[:-1]):
        raise ValueError(
            f"strength must broadcast to the key's leading dimensions {tuple(key.shape[:-1])}, got shape "
            f"{tuple(strength.shape)}"
        )
    similarity = cosine_scores(key.unsqueeze(-2), memory).squeeze(-2)  # (..., N)
    scores = strength.unsqueeze(-1) * similarity  # (..., N)
    if not bool(torch.isfinite(scores).all()):  # β · cos overflowed the dtype
        raise ValueError(
            f"strength is too large for {key.dtype}: β · cos(k, M_i) overflows (β up to {float(strength.max()):.4g})"
        )
    return softmax(scores, dim=-1)


def content_addressing(
    key: torch.Tensor, memory: torch.Tensor, strength: float | torch.Tensor = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Content-based addressing (Graves et al. 2014, eqs. 5-6; the DNC's ``C(M, k, β)``): ``w_i ∝ exp(β cos(k, M_i))``.

    key ``(..., d)``, memory ``(..., M, d)``, strength β >= 0 (a number or a one-element tensor) -> the read
    vector ``Σ_i w_i M_i`` ``(..., d)`` and the weights ``(..., M)``. β = 0 reads the mean of all rows; a large
    β reads the row most similar to the key.
    """
    require_tensor("key", key, 1)
    require_tensor("memory", memory, 2)
    if key.shape[-1] != memory.shape[-1]:
        raise ValueError(
            f"key and memory rows must have the same size d, got key {shape_of(key)} and memory {shape_of(memory)}"
        )
    if isinstance(strength, torch.Tensor):
        if strength.numel() != 1 or not bool(torch.isfinite(strength).all()) or bool((strength < 0).any()):
            shown = strength.item() if strength.numel() == 1 else f"a tensor of shape {shape_of(strength)}"
            raise ValueError(f"strength must be one finite number >= 0, got {shown}")
    elif _finite_number("strength", strength) < 0:
        raise ValueError(f"strength must be >= 0, got {strength}")
    weights = content_weighting(memory, key, strength)  # (..., M)
    return (weights.unsqueeze(-2) @ memory).squeeze(-2), weights  # (..., d), (..., M)


def additive_scores(
    query: torch.Tensor, key: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    """Additive scores ``vᵀ tanh(W_q q + W_k k)`` (Bahdanau et al. 2014, eq. 6 / App. A.1.2).

    Shapes: query ``(..., Tq, d_q)``, key ``(..., Tk, d_k)``, ``W_q (d_a, d_q)``, ``W_k (d_a, d_k)``,
    ``v (d_a,)`` -> scores ``(..., Tq, Tk)``. Unlike the dot product, d_q and d_k may differ.
    """
    require_tensor("query", query, 2)
    require_tensor("key", key, 2)
    for name, W, x, x_name in (("W_q", W_q, query, "query"), ("W_k", W_k, key, "key")):
        require_tensor(name, W, 2)
        if W.dim() != 2 or W.shape[1] != x.shape[-1]:
            raise ValueError(
                f"{name} must have shape (d_a, {x.shape[-1]}) to match {x_name} {shape_of(x)}, got {shape_of(W)}"
            )
    require_tensor("v", v, 1)
    if W_q.shape[0] != W_k.shape[0] or v.shape != (W_q.shape[0],):
        raise ValueError(
            f"W_q, W_k and v must share d_a: got W_q {shape_of(W_q)}, W_k {shape_of(W_k)}, v {shape_of(v)}"
        )
    _same_dtype(query=query, key=key, W_q=W_q, W_k=W_k, v=v)
    _check_batch("query", query, "key", key)
    q = (query @ W_q.T).unsqueeze(-2)  # (..., Tq, 1, d_a)
    k = (key @ W_k.T).unsqueeze(-3)  # (..., 1, Tk, d_a)
    return torch.tanh(q + k) @ v  # (..., Tq, Tk)


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
    _check_attend_args(scores, value, mask, dropout)
    empty = None
    if mask is not None:
        bias, empty = _mask_bias(mask, scores.dtype)  # -inf where masked, at the mask's own shape
        scores = scores + bias  # broadcast in one addition
    weights = softmax(scores, dim=-1)  # (..., Tq, Tk); rows of -inf only get zero weights
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)  # rows the mask leaves nothing to attend to
    used = torch.nn.functional.dropout(weights, dropout) if dropout > 0 else weights
    return used @ value, weights  # (..., Tq, d_v), (..., Tq, Tk)


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
    _check_sdpa_args(query, key, value, mask, dropout)
    scale = _scale(scale, query)
    bias, empty = _mask_bias(mask, query.dtype) if mask is not None else (None, None)
    scores = _scaled_scores(query, key, scale, bias)  # (..., Tq, Tk): Q Kᵀ · scale + bias, one matrix product
    weights = _softmax_last(scores)  # (..., Tq, Tk)
    if weights.shape[-1] and bool(weights[..., 0].isnan().any()):  # a row with +inf or NaN scores is NaN throughout
        raise _overflow_error(query, key)
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


def _check_sdpa_args(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None, dropout: float
) -> None:
    check_dropout(dropout)
    _check_query_key(query, key)
    require_tensor("value", value, 2)
    _same_dtype(query=query, key=key, value=value)
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"key has length Tk={key.shape[-2]} but value has length {value.shape[-2]} "
            f"(key {shape_of(key)}, value {shape_of(value)})"
        )
    batch = broadcast_shapes(query.shape[:-2], key.shape[:-2])
    if broadcast_shapes(batch, value.shape[:-2]) is None:
        raise ValueError(
            f"the leading (batch) dimensions of query {shape_of(query)}, key {shape_of(key)} and value "
            f"{shape_of(value)} do not broadcast"
        )
    if mask is not None:
        _check_mask(mask, (*batch, query.shape[-2], key.shape[-2]), query.device)


def _check_attend_args(
    scores: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None, dropout: float = 0.0
) -> None:
    check_dropout(dropout)
    require_tensor("scores", scores, 2)
    require_tensor("value", value, 2)
    if scores.shape[-1] != value.shape[-2]:
        raise ValueError(
            f"value has length Tk={value.shape[-2]} but the scores cover Tk={scores.shape[-1]} keys "
            f"(scores {shape_of(scores)}, value {shape_of(value)})"
        )
    _same_dtype(scores=scores, value=value)
    _check_batch("scores", scores, "value", value)
    if mask is not None:
        _check_mask(mask, shape_of(scores), scores.device)
    if bool(torch.isposinf(scores).any()):  # -inf is a key not to attend to; +inf is a score that overflowed
        raise ValueError(f"scores contain +inf (shape {shape_of(scores)}): did they overflow? Scale them down")


def _check_query_key(query: torch.Tensor, key: torch.Tensor) -> None:
    require_tensor("query", query, 2)
    require_tensor("key", key, 2)
    if query.shape[-1] == 0:
        raise ValueError(f"query and key need d_k >= 1, got query {shape_of(query)} and key {shape_of(key)}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query and key must have the same d_k, got query {shape_of(query)} (d_k={query.shape[-1]}) "
            f"and key {shape_of(key)} (d_k={key.shape[-1]})"
        )
    _same_dtype(query=query, key=key)
    _check_batch("query", query, "key", key)


def _check_batch(a_name: str, a: torch.Tensor, b_name: str, b: torch.Tensor) -> None:
    if broadcast_shapes(a.shape[:-2], b.shape[:-2]) is None:
        raise ValueError(
            f"the leading (batch) dimensions of {a_name} {shape_of(a)} and {b_name} {shape_of(b)} do not broadcast"
        )


def _check_mask(mask: torch.Tensor, scores_shape: tuple[int, ...], device: torch.device) -> None:
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"mask must be a bool torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}; "
            "for a float mask of 0/-inf use mask == 0"
        )
    if mask.device != device:
        raise ValueError(f"mask is on {mask.device} but the scores are on {device}")
    if broadcast_shapes(mask.shape, scores_shape) != scores_shape:
        raise ValueError(
            f"mask of shape {shape_of(mask)} does not broadcast to the scores' shape (..., Tq, Tk) = {scores_shape}"
        )
