"""Multi-head attention (Vaswani et al. 2017, §3.2.2): h heads of size d_k = d_model / h, side by side; with
fewer key/value heads than query heads, grouped-query (Ainslie et al. 2023) or multi-query attention (Shazeer 2019)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast, overload

import torch
import torch.nn.functional as F
from torch import nn

from attn._checks import (
    check,
    check_dropout,
    check_dtype_of,
    check_positive_int,
    checked,
    describe,
    overflow_error,
    shape_of,
)
from attn.functional import scaled_dot_product_attention

__all__ = ["KeyValue", "MultiHeadAttention"]


@dataclass(frozen=True)
class KeyValue:
    """One self-attention layer's cache for incremental decoding: the projected keys ``K = x W_K`` and values
    ``V = x W_V`` of the T tokens read so far, split into heads, ``key`` and ``value`` each ``(B, H_kv, T, d_k)``
    (H_kv = H unless the layer shares key/value heads: then the cache is H / H_kv times smaller)."""

    key: torch.Tensor
    value: torch.Tensor

    def __len__(self) -> int:
        """T, the number of tokens cached."""
        return self.key.shape[2]

    @property
    def nbytes(self) -> int:
        """The bytes the cache holds: 2 · B · H_kv · T · d_k numbers."""
        return self.key.nbytes + self.value.nbytes


def _no_overflow(result: tuple[torch.Tensor, torch.Tensor | None], layer: nn.Module, query: torch.Tensor,
                 key: torch.Tensor, *args, **kwargs) -> None:  # fmt: skip
    """As :func:`attn.scaled_dot_product_attention`: scores that overflowed or are NaN leave a row of NaN weights;
    that is an error, not a NaN output (the weights are read only when kept, and never on the meta device)."""
    weights = result[1]
    if weights is not None and weights.shape[-1] and not weights.is_meta and bool(weights[..., 0].isnan().any()):
        raise overflow_error(query, key)


class MultiHeadAttention(nn.Module):
    """``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O`` with ``head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i)``.

    The h projections of size d_k = d_model / h are computed as one ``(d_model, d_model)`` matrix each for
    Q, K and V and then split into heads, so h heads cost exactly the parameters of one big head. Masks are
    boolean with ``True`` = may attend (the convention of :mod:`attn.masks`); :class:`torch.nn.MultiheadAttention`
    uses the opposite (``True`` = masked out), so pass it ``~mask``.

    ``num_kv_heads`` (default h) < h shares each key/value head among h / num_kv_heads query heads: grouped-query
    attention (Ainslie et al. 2023), or multi-query attention (Shazeer 2019) with ``num_kv_heads=1``. W_K and W_V
    shrink to ``(num_kv_heads · d_k, d_model)`` and so does the key/value cache; query head i reads key/value head
    ``i // (h / num_kv_heads)``. The weights returned are still ``(B, H, Tq, Tk)``, one map per query head.
    """

    def __init__(
        self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True, num_kv_heads: int | None = None
    ):
        super().__init__()
        d_model, num_heads = check_positive_int("d_model", d_model), check_positive_int("num_heads", num_heads)
        check(d_model % num_heads == 0, f"d_model={d_model} is not divisible by num_heads={num_heads}")
        num_kv_heads = num_heads if num_kv_heads is None else check_positive_int("num_kv_heads", num_kv_heads)
        check(num_heads % num_kv_heads == 0, f"num_heads={num_heads} is not divisible by num_kv_heads={num_kv_heads}")
        self.d_model, self.h, self.d_k, self.h_kv = d_model, num_heads, d_model // num_heads, num_kv_heads
        self.dropout = check_dropout(dropout)
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    # ------------------------------------------------------------------------------------- the checks at each door

    def _forward_args(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
        key_mask: torch.Tensor | None = None,
    ) -> None:
        self._check_input("query", query)
        self._check_input("key", key)
        self._check_input("value", value)
        check(key.shape[:2] == value.shape[:2], lambda: "key and value must have the same (B, Tk), got key "
              f"{shape_of(key)} and value {shape_of(value)}")  # fmt: skip
        check(query.shape[0] == key.shape[0], lambda: "query and key must have the same batch size B, got "
              f"{shape_of(query)} and {shape_of(key)}")  # fmt: skip
        self._check_mask(mask, query.shape[0], query.shape[1], key.shape[1], query.device)
        _check_key_mask(key_mask, key.shape[0], key.shape[1], query.device)

    def _extend_args(
        self, x: torch.Tensor, past: KeyValue | None = None, mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> None:
        self._check_input("x", x, "Tn")
        if past is not None:
            self.check_past(past, x.shape[0])
        B, Tn, _ = x.shape
        self._check_mask(mask, B, Tn, Tn + (0 if past is None else len(past)), x.device)

    def check_past(self, past: object, B: int) -> None:
        """``past`` is this layer's cache for a batch of B: a :class:`KeyValue` of ``(B, H_kv, T, d_k)`` tensors."""
        check(isinstance(past, KeyValue), lambda: f"past must be a KeyValue (or None), got {type(past).__name__}")
        past = cast(KeyValue, past)
        self._check_cached("key", past.key, B)
        self._check_cached("value", past.value, B)
        check(past.key.shape == past.value.shape, lambda: f"past.key {shape_of(past.key)} and past.value "
              f"{shape_of(past.value)} differ in shape")  # fmt: skip

    def _check_input(self, name: str, x: object, T: str = "T") -> None:
        check(isinstance(x, torch.Tensor) and x.dim() == 3 and x.shape[-1] == self.d_model,
              lambda: f"{name} must have shape (B, {T}, d_model={self.d_model}), got {describe(x)}")  # fmt: skip
        check_dtype_of(name, cast(torch.Tensor, x), self)

    def _check_cached(self, name: str, t: object, B: int) -> None:
        want = (B, self.h_kv, self.d_k)
        ok = isinstance(t, torch.Tensor) and t.dim() == 4 and (t.shape[0], t.shape[1], t.shape[3]) == want
        check(ok, lambda: f"past.{name} must have shape (B={B}, H_kv={self.h_kv}, T, d_k={self.d_k}), got "
              f"{describe(t)}")  # fmt: skip

    def _check_mask(self, mask: object, B: int, Tq: int, Tk: int, device: torch.device) -> None:
        """``mask`` is None, or bool on ``device`` and ``(Tq, Tk)``, ``(B, Tq, Tk)`` or broadcastable to
        ``(B, H, Tq, Tk)``."""
        if mask is None:
            return
        full = (B, self.h, Tq, Tk)
        expected = lambda: f"(Tq, Tk) = ({Tq}, {Tk}), (B, Tq, Tk) or broadcastable to (B, H, Tq, Tk) = {full}"  # noqa: E731
        check(isinstance(mask, torch.Tensor),
              lambda: f"mask must be a bool torch.Tensor of shape {expected()}, got {type(mask).__name__}")  # fmt: skip
        mask = cast(torch.Tensor, mask)
        check(mask.dtype == torch.bool, lambda: "mask must have dtype torch.bool (True = may attend), got "
              f"{mask.dtype} of shape {shape_of(mask)}")  # fmt: skip
        check(mask.device == device, lambda: f"mask is on {mask.device} but query is on {device}")
        shape = shape_of(_per_head(mask))  # a 3-D mask as (B, 1, Tq, Tk)
        fits = len(shape) in (2, 4) and all(m in (1, n) for m, n in zip(shape[::-1], full[::-1], strict=False))
        hint = "; a padding mask (B, Tk) goes in key_mask" if mask.dim() == 2 else ""
        check(fits, lambda: f"mask must have shape {expected()}, got {shape_of(mask)}{hint}")

    # ------------------------------------------------------------------------------------------------ the equations

    @checked(_forward_args, after=_no_overflow)
    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """query ``(B, Tq, d_model)``, key and value ``(B, Tk, d_model)``, mask bool broadcastable to
        ``(B, H, Tq, Tk)`` (a 2-D mask is ``(Tq, Tk)``, a 3-D one ``(B, Tq, Tk)``) -> output
        ``(B, Tq, d_model)`` and the weights of every head ``(B, H, Tq, Tk)``. A padding mask ``(B, Tk)``
        (:func:`attn.padding_mask`: ``True`` on real keys) goes in ``key_mask``, never in ``mask``, where a 2-D
        mask means ``(Tq, Tk)``; both may be given. With ``need_weights=False``
        the weights are not kept (None) and the fused :func:`torch.nn.functional.scaled_dot_product_attention`
        computes the same output with far less memory (and, for longer sequences, faster)."""
        B, Tq, _ = query.shape
        mask = self._with_key_mask(_per_head(mask), key_mask)  # (B, H or 1, Tq, Tk), broadcastable, or None
        q, k, v = self._project(query, key, value)  # (B, H, Tq, d_k), (B, H_kv, Tk, d_k), (B, H_kv, Tk, d_k)
        heads, weights = self._attend(q, k, v, mask, need_weights)  # (B, H, Tq, d_k), (B, H, Tq, Tk) or None
        concat = heads.transpose(1, 2).reshape(B, Tq, self.d_model)  # (B, Tq, H * d_k)
        return self.W_o(concat), weights

    def _attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, need_weights: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Every query head attends with its key/value head: q ``(B, H, Tq, d_k)``, k and v ``(B, H_kv, Tk, d_k)``
        -> heads ``(B, H, Tq, d_k)`` and weights ``(B, H, Tq, Tk)`` (None without ``need_weights``)."""
        p = self.dropout if self.training else 0.0
        if not need_weights:
            gqa = self.h_kv != self.h  # the fused kernel repeats each key/value head for its group itself
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, enable_gqa=gqa), None
        if self.h_kv != self.h:
            return self._attend_grouped(q, k, v, mask, p)
        return scaled_dot_product_attention(q, k, v, mask, dropout=p)  # (B, H, Tq, d_k), (B, H, Tq, Tk)

    def _attend_grouped(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, p: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Grouped-query attention with its weights: the g = H / H_kv query heads of a group share one key/value
        head, as a broadcast dimension (no copy of the keys and values)."""
        B, H, Tq, d_k = q.shape
        g = H // self.h_kv  # query heads per key/value head
        q = q.view(B, self.h_kv, g, Tq, d_k)  # (B, H_kv, g, Tq, d_k): query head i = kv head i // g
        if mask is not None and mask.dim() == 4:
            mask = mask.unsqueeze(2) if mask.shape[1] == 1 else mask.unflatten(1, (self.h_kv, g))  # 5-D
        heads, weights = scaled_dot_product_attention(q, k.unsqueeze(2), v.unsqueeze(2), mask, dropout=p)
        return heads.flatten(1, 2), weights.flatten(1, 2)  # (B, H, Tq, d_k), (B, H, Tq, Tk)

    @checked(_extend_args)
    def extend(
        self,
        x: torch.Tensor,
        past: KeyValue | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None, KeyValue]:
        """Self-attention of Tn new positions x ``(B, Tn, d_model)`` to the ``past`` tokens' cached keys and
        values and to their own: only the new rows of ``forward(x_all, x_all, x_all, mask)`` are computed, so a
        new token costs O(T), not a pass over the whole prefix. mask bool broadcastable to ``(B, H, Tn, T)``
        with T = len(past) + Tn -> output ``(B, Tn, d_model)``, weights ``(B, H, Tn, T)`` (None without
        ``need_weights``) and the cache for the next call, :class:`KeyValue` of ``(B, H_kv, T, d_k)`` tensors."""
        B, Tn, _ = x.shape
        q, k, v = self._project(x, x, x)  # (B, H, Tn, d_k), (B, H_kv, Tn, d_k), (B, H_kv, Tn, d_k)
        if past is not None:
            k = torch.cat([past.key, k], dim=2)  # (B, H_kv, T, d_k)
            v = torch.cat([past.value, v], dim=2)  # (B, H_kv, T, d_k)
        heads, weights = self._attend(q, k, v, _per_head(mask), need_weights)  # (B, H, Tn, d_k), (B, H, Tn, T)
        concat = heads.transpose(1, 2).reshape(B, Tn, self.d_model)  # (B, Tn, H * d_k)
        return self.W_o(concat), weights, KeyValue(k, v)

    def _project(
        self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``Q W_Q`` split into heads ``(B, H, Tq, d_k)``, ``K W_K`` and ``V W_V`` into ``(B, H_kv, Tk, d_k)``. Inputs
        that are one tensor (key and value; and query, in self-attention) are projected in one matrix product with
        the weights stacked."""
        (B, Tq, _), Tk, H, d_k = query.shape, key.shape[1], self.h, self.d_k
        if self.h_kv != H:
            k = self.W_k(key).view(B, Tk, self.h_kv, d_k).transpose(1, 2)  # (B, H_kv, Tk, d_k)
            v = self.W_v(value).view(B, Tk, self.h_kv, d_k).transpose(1, 2)  # (B, H_kv, Tk, d_k)
        elif key is value:
            layers = [self.W_q, self.W_k, self.W_v] if query is key else [self.W_k, self.W_v]
            weight = torch.cat([layer.weight for layer in layers])  # (n d_model, d_model)
            bias = None if self.W_k.bias is None else torch.cat([layer.bias for layer in layers])
            heads = F.linear(key, weight, bias).view(B, Tk, len(layers), H, d_k).permute(2, 0, 3, 1, 4)
            if len(layers) == 3:
                q, k, v = heads.unbind(0)  # (B, H, T, d_k) each
                return q, k, v
            k, v = heads.unbind(0)  # (B, H, Tk, d_k) each
        else:
            k = self.W_k(key).view(B, Tk, H, d_k).transpose(1, 2)  # (B, H, Tk, d_k)
            v = self.W_v(value).view(B, Tk, H, d_k).transpose(1, 2)  # (B, H, Tk, d_k)
        q = self.W_q(query).view(B, Tq, H, d_k).transpose(1, 2)  # (B, H, Tq, d_k)
        return q, k, v

    def extra_repr(self) -> str:
        shared = f", num_kv_heads={self.h_kv}" if self.h_kv != self.h else ""
        return f"d_model={self.d_model}, num_heads={self.h}{shared}, d_k={self.d_k}, dropout={self.dropout}"

    @staticmethod
    def _with_key_mask(mask: torch.Tensor | None, key_mask: torch.Tensor | None) -> torch.Tensor | None:
        """``mask`` and the padding mask ``key_mask`` ``(B, Tk)`` together, as one mask ``(B, H or 1, Tq, Tk)``."""
        if key_mask is None:
            return mask
        keys = key_mask[:, None, None, :]  # (B, 1, 1, Tk): the same keys for every head and query
        return keys if mask is None else mask & keys


@overload
def _per_head(mask: torch.Tensor) -> torch.Tensor: ...
@overload
def _per_head(mask: None) -> None: ...
def _per_head(mask: torch.Tensor | None) -> torch.Tensor | None:
    """A 3-D mask ``(B, Tq, Tk)`` as ``(B, 1, Tq, Tk)``, the same for every head; any other mask as it is."""
    return mask.unsqueeze(1) if mask is not None and mask.dim() == 3 else mask


def _check_key_mask(key_mask: object, B: int, Tk: int, device: torch.device) -> None:
    """``key_mask`` is None or a bool ``(B, Tk)`` tensor on ``device``, ``True`` on real keys."""
    if key_mask is None:
        return
    check(isinstance(key_mask, torch.Tensor) and key_mask.dtype == torch.bool and shape_of(key_mask) == (B, Tk),
          lambda: f"key_mask must be a bool tensor (B, Tk) = ({B}, {Tk}), True on real keys, got "
          f"{f'{key_mask.dtype} ' if isinstance(key_mask, torch.Tensor) else ''}{describe(key_mask)}")  # fmt: skip
    key_mask = cast(torch.Tensor, key_mask)
    check(key_mask.device == device, lambda: f"key_mask is on {key_mask.device} but query is on {device}")
