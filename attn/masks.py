"""Boolean attention masks. One convention everywhere: ``True`` = may attend.

This is the convention of :func:`torch.nn.functional.scaled_dot_product_attention`.
Beware: :class:`torch.nn.MultiheadAttention` (``attn_mask``, ``key_padding_mask``) uses the
opposite one, where ``True`` means *masked out*; convert with ``~mask``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch

from attn._checks import check_positive_int

__all__ = ["causal_mask", "padding_mask"]

_INTEGER_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def causal_mask(T: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Lower-triangular ``(T, T)`` mask: position i may attend to positions j <= i (Vaswani et al. 2017, §3.2.3)."""
    check_positive_int("T", T)
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: torch.Tensor | Sequence[int], T: int | None = None) -> torch.Tensor:
    """``(B, T)`` mask that is ``True`` on the first ``lengths[b]`` positions of row b.

    It masks *keys*: for scores of shape ``(B, Tq, Tk)`` use ``padding_mask(lengths, Tk)[:, None, :]``,
    for ``(B, H, Tq, Tk)`` use ``padding_mask(lengths, Tk)[:, None, None, :]``. ``T`` defaults to
    ``max(lengths)``.
    """
    if not isinstance(lengths, torch.Tensor):
        try:
            lengths = torch.tensor(list(lengths), dtype=None if len(lengths) else torch.long)
        except (TypeError, ValueError, RuntimeError):
            raise ValueError(f"lengths must be a 1-D tensor or sequence of ints, got {lengths!r}") from None
    if lengths.dim() != 1 or lengths.dtype not in _INTEGER_DTYPES:
        raise ValueError(
            f"lengths must be a 1-D tensor of ints, got dtype {lengths.dtype} and shape {tuple(lengths.shape)}"
        )
    if lengths.numel() and lengths.min() < 0:
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    if T is None:
        T = longest
    if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T < 0:
        raise ValueError(f"T must be a non-negative int, got {T!r}")
    if longest > T:
        raise ValueError(f"lengths must be <= T={T}, got a length of {longest}")
    positions = torch.arange(T, device=lengths.device)  # (T,)
    return positions[None, :] < lengths[:, None]  # (B, T)
