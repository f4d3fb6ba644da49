"""Boolean attention masks. One convention everywhere: ``True`` = may attend.

This is the convention of :func:`torch.nn.functional.scaled_dot_product_attention`.
Beware: :class:`torch.nn.MultiheadAttention` (``attn_mask``, ``key_padding_mask``) uses the
opposite one, where ``True`` means *masked out*; convert with ``~mask``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch

from attn._checks import check_nonnegative_int, check_positive_int

__all__ = [
    "causal_mask",
    "padding_mask",
    "sliding_window_mask",
    "strided_mask",
    "global_tokens_mask",
    "receptive_field",
]

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


def sliding_window_mask(
    T: int, window: int, *, causal: bool = True, device: torch.device | str | None = None
) -> torch.Tensor:
    """Local band ``(T, T)``: i may attend to j with ``i - window < j <= i`` (``causal``) or ``|i - j| < window``.

    The sliding window of Longformer (Beltagy et al. 2020, §3.1) and the local part of the Sparse Transformer
    (Child et al. 2019, §4.2). ``window >= T`` with ``causal`` is :func:`causal_mask`. True = may attend.
    """
    check_positive_int("T", T)
    check_positive_int("window", window)
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be a bool, got {causal!r}")
    band = causal_mask(T, device=device).triu(-(window - 1))  # (T, T): 0 <= i - j < window
    return band if causal else band | band.T


def strided_mask(T: int, stride: int, *, local: bool = True, device: torch.device | str | None = None) -> torch.Tensor:
    """Causal strided pattern ``(T, T)``: i may attend to j <= i with ``(i - j) % stride == 0``, or ``i - j < stride``.

    The "strided" attention of the Sparse Transformer (Child et al. 2019, §4.2): with ``local`` (the default) the
    union of its two heads, the previous ``stride`` positions and every ``stride``-th one before them; without,
    only the strided head. True = may attend.
    """
    check_positive_int("T", T)
    check_positive_int("stride", stride)
    if not isinstance(local, bool):
        raise ValueError(f"local must be a bool, got {local!r}")
    positions = torch.arange(T, device=device)  # (T,)
    distance = positions[:, None] - positions[None, :]  # (T, T): i - j
    allowed = distance % stride == 0
    if local:
        allowed = allowed | (distance < stride)
    return causal_mask(T, device=device) & allowed


def global_tokens_mask(
    T: int, tokens: torch.Tensor | Sequence[int], *, device: torch.device | str | None = None
) -> torch.Tensor:
    """``(T, T)``, not causal: the ``tokens`` positions attend to every position and every position to them.

    Longformer's global attention (Beltagy et al. 2020, §3.1), to be combined with a local pattern:
    ``sliding_window_mask(T, w, causal=False) | global_tokens_mask(T, [0])``; ``& causal_mask(T)`` makes it causal.
    True = may attend.
    """
    check_positive_int("T", T)
    positions = _token_positions(tokens, T)
    is_global = torch.zeros(T, dtype=torch.bool, device=device)
    is_global[positions.to(is_global.device)] = True  # (T,)
    return is_global[:, None] | is_global[None, :]  # (T, T)


def _token_positions(tokens: torch.Tensor | Sequence[int], T: int) -> torch.Tensor:
    """``tokens`` as a 1-D int64 tensor of positions in [0, T), else a ValueError naming ``tokens``."""
    if not isinstance(tokens, torch.Tensor):
        try:
            listed = list(tokens)
        except TypeError:
            raise ValueError(f"tokens must be a 1-D tensor or sequence of int positions, got {tokens!r}") from None
        if not all(isinstance(t, numbers.Integral) and not isinstance(t, bool) for t in listed):  # 2.9 is not 2
            raise ValueError(f"tokens must be a 1-D tensor or sequence of int positions, got {tokens!r}")
        tokens = torch.tensor(listed, dtype=torch.long)
    if tokens.dim() != 1 or tokens.dtype not in _INTEGER_DTYPES:
        raise ValueError(
            f"tokens must be a 1-D tensor of ints, got dtype {tokens.dtype} and shape {tuple(tokens.shape)}"
        )
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= T):
        raise ValueError(f"tokens must be positions in [0, {T - 1}] for T={T}, got {tokens.tolist()}")
    return tokens.long()


def receptive_field(mask: torch.Tensor, layers: int) -> torch.Tensor:
    """Which inputs reach each output through ``layers`` layers of attention with ``mask`` and a residual
    connection around each: the boolean power ``(I ∨ M)^L``.

    mask ``(..., T, T)`` bool (True = may attend) -> ``(..., T, T)`` bool, entry ``[i, j]`` True if a chain
    i -> ... -> j of at most L allowed steps exists (the residual path lets a position keep what it has; Child et
    al. 2019, §4: two factorised heads reach every earlier position). ``layers = 0`` gives the identity. A sliding
    window w reaches back ``layers · (w - 1)`` positions.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a bool torch.Tensor (True = may attend), got {got}")
    if mask.dim() < 2 or mask.shape[-1] != mask.shape[-2]:
        raise ValueError(f"mask must be square, shape (..., T, T), got {tuple(mask.shape)}")
    layers = check_nonnegative_int("layers", layers)
    eye = torch.eye(mask.shape[-1], dtype=torch.bool, device=mask.device)
    step = (mask | eye).to(torch.float32)  # (..., T, T): 0/1 with the residual path; products count chains
    reach = torch.eye(mask.shape[-1], device=mask.device).expand_as(step)  # (..., T, T): L = 0
    while layers:  # square and multiply: log2(L) matrix products
        if layers & 1:
            reach = ((reach @ step) > 0).to(step.dtype)
        layers >>= 1
        if layers:
            step = ((step @ step) > 0).to(step.dtype)
    return reach.bool()
