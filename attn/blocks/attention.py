"""Multi-head attention (Vaswani et al. 2017, §3.2.2): h heads of size d_k = d_model / h, side by side; with
fewer key/value heads than query heads, grouped-query (Ainslie et al. 2023) or multi-query attention (Shazeer 2019)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attn._checks import check_dropout, check_dtype_of, check_positive_int, shape_of
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
        d_model = check_positive_int("d_model", d_model)
        num_heads = check_positive_int("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        num_kv_heads = num_heads if num_kv_heads is None else check_positive_int("num_kv_heads", num_kv_heads)
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads={num_heads} is not divisible by num_kv_heads={num_kv_heads}")
        self.d_model, self.h, self.d_k, self.h_kv = d_model, num_heads, d_model // num_heads, num_kv_heads
        self.dropout = check_dropout(dropout)
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

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
        B, Tq, Tk = self._check(query, key, value)
        mask = self._with_key_mask(self._mask(mask, B, Tq, Tk, query.device), key_mask, B, Tk, query.device)
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
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d_model:
            got = shape_of(x) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (B, Tn, d_model={self.d_model}), got {got}")
        check_dtype_of("x", x, self)
        B, Tn, _ = x.shape
        q, k, v = self._project(x, x, x)  # (B, H, Tn, d_k), (B, H_kv, Tn, d_k), (B, H_kv, Tn, d_k)
        if past is not None:
            self._check_past(past, x)
            k = torch.cat([past.key, k], dim=2)  # (B, H_kv, T, d_k)
            v = torch.cat([past.value, v], dim=2)  # (B, H_kv, T, d_k)
        mask = self._mask(mask, B, Tn, k.shape[2], x.device)
        heads, weights = self._attend(q, k, v, mask, need_weights)  # (B, H, Tn, d_k), (B, H, Tn, T) or None
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

    def _check_past(self, past: object, x: torch.Tensor) -> None:
        if not isinstance(past, KeyValue):
            raise ValueError(f"past must be a KeyValue (or None), got {type(past).__name__}")
        B = x.shape[0]
        for name, t in (("key", past.key), ("value", past.value)):
            if (
                not isinstance(t, torch.Tensor)
                or t.dim() != 4
                or (t.shape[0], t.shape[1], t.shape[3]) != (B, self.h_kv, self.d_k)
            ):
                got = shape_of(t) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"past.{name} must have shape (B={B}, H_kv={self.h_kv}, T, d_k={self.d_k}), got {got}")
        if past.key.shape != past.value.shape:
            raise ValueError(f"past.key {shape_of(past.key)} and past.value {shape_of(past.value)} differ in shape")

    def _check(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> tuple[int, int, int]:
        for name, x in (("query", query), ("key", key), ("value", value)):
            if not isinstance(x, torch.Tensor):
                raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
            if x.dim() != 3 or x.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have shape (B, T, d_model={self.d_model}), got {shape_of(x)}")
            check_dtype_of(name, x, self)
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(
                f"key and value must have the same (B, Tk), got key {shape_of(key)} and value {shape_of(value)}"
            )
        if query.shape[0] != key.shape[0]:
            raise ValueError(
                f"query and key must have the same batch size B, got {shape_of(query)} and {shape_of(key)}"
            )
        return query.shape[0], query.shape[1], key.shape[1]

    def _with_key_mask(
        self, mask: torch.Tensor | None, key_mask: torch.Tensor | None, B: int, Tk: int, device: torch.device
    ) -> torch.Tensor | None:
        """``mask`` and the padding mask ``key_mask`` ``(B, Tk)`` together, as one mask ``(B, H or 1, Tq, Tk)``."""
        if key_mask is None:
            return mask
        if not isinstance(key_mask, torch.Tensor) or key_mask.dtype != torch.bool or shape_of(key_mask) != (B, Tk):
            got = (
                f"{key_mask.dtype} {shape_of(key_mask)}"
                if isinstance(key_mask, torch.Tensor)
                else type(key_mask).__name__
            )
            raise ValueError(f"key_mask must be a bool tensor (B, Tk) = ({B}, {Tk}), True on real keys, got {got}")
        if key_mask.device != device:
            raise ValueError(f"key_mask is on {key_mask.device} but query is on {device}")
        keys = key_mask[:, None, None, :]  # (B, 1, 1, Tk): the same keys for every head and query
        return keys if mask is None else mask & keys

    def _mask(self, mask: torch.Tensor | None, B: int, Tq: int, Tk: int, device: torch.device) -> torch.Tensor | None:
        if mask is None:
            return None
        full = (B, self.h, Tq, Tk)
        expected = f"(Tq, Tk) = ({Tq}, {Tk}), (B, Tq, Tk) or broadcastable to (B, H, Tq, Tk) = {full}"
        if not isinstance(mask, torch.Tensor):
            raise ValueError(f"mask must be a bool torch.Tensor of shape {expected}, got {type(mask).__name__}")
        if mask.dtype != torch.bool:
            raise ValueError(
                f"mask must have dtype torch.bool (True = may attend), got {mask.dtype} of shape {shape_of(mask)}"
            )
        if mask.device != device:
            raise ValueError(f"mask is on {mask.device} but query is on {device}")
        shape = shape_of(mask)  # as given, for the message
        if mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, Tq, Tk): the same mask for every head
        fits = all(m in (1, n) for m, n in zip(shape_of(mask)[::-1], full[::-1], strict=False))
        if mask.dim() not in (2, 4) or not fits:
            hint = "; a padding mask (B, Tk) goes in key_mask" if mask.dim() == 2 else ""
            raise ValueError(f"mask must have shape {expected}, got {shape}{hint}")
        return mask
