"""Boolean attention masks. One convention everywhere: ``True`` = may attend.

This is the convention of :func:`torch.nn.functional.scaled_dot_product_attention`.
Beware: :class:`torch.nn.MultiheadAttention` (``attn_mask``, ``key_padding_mask``) uses the
opposite one, where ``True`` means *masked out*; convert with ``~mask``.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence

import torch

from attn._checks import check, check_nonnegative_int, check_positive_int, checked

__all__ = [
    "causal_mask",
    "padding_mask",
    "sliding_window_mask",
    "strided_mask",
    "global_tokens_mask",
    "receptive_field",
]

_INTEGER_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


# ------------------------------------------------------------------------------- the checks at each door


def _causal_mask_args(T: int, *, device: torch.device | str | None = None) -> None:
    check_positive_int("T", T)


def _padding_mask_args(lengths: torch.Tensor | Sequence[int], T: int | None = None) -> None:
    lengths = _as_lengths(lengths)
    check(lengths.dim() == 1 and lengths.dtype in _INTEGER_DTYPES, lambda: "lengths must be a 1-D tensor of ints, "
          f"got dtype {lengths.dtype} and shape {tuple(lengths.shape)}")  # fmt: skip
    check(not lengths.numel() or bool(lengths.min() >= 0), lambda: f"lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    T = longest if T is None else T
    check(not isinstance(T, bool) and isinstance(T, numbers.Integral) and T >= 0,
          lambda: f"T must be a non-negative int, got {T!r}")  # fmt: skip
    check(longest <= T, lambda: f"lengths must be <= T={T}, got a length of {longest}")


def _sliding_window_mask_args(T: int, window: int, *, causal: bool = True,
                              device: torch.device | str | None = None) -> None:  # fmt: skip
    check_positive_int("T", T)
    check_positive_int("window", window)
    check(isinstance(causal, bool), lambda: f"causal must be a bool, got {causal!r}")


def _strided_mask_args(T: int, stride: int, *, local: bool = True, device: torch.device | str | None = None) -> None:
    check_positive_int("T", T)
    check_positive_int("stride", stride)
    check(isinstance(local, bool), lambda: f"local must be a bool, got {local!r}")


def _global_tokens_mask_args(T: int, tokens: torch.Tensor | Sequence[int], *,
                             device: torch.device | str | None = None) -> None:  # fmt: skip
    check_positive_int("T", T)
    if not isinstance(tokens, torch.Tensor):
        ints = isinstance(tokens, Iterable) and all(isinstance(t, numbers.Integral) and not isinstance(t, bool)
                                                    for t in tokens)  # 2.9 is not 2  # fmt: skip
        check(ints, lambda: f"tokens must be a 1-D tensor or sequence of int positions, got {tokens!r}")
        tokens = torch.tensor(list(tokens), dtype=torch.long)
    check(tokens.dim() == 1 and tokens.dtype in _INTEGER_DTYPES, lambda: "tokens must be a 1-D tensor of ints, "
          f"got dtype {tokens.dtype} and shape {tuple(tokens.shape)}")  # fmt: skip
    check(not tokens.numel() or (int(tokens.min()) >= 0 and int(tokens.max()) < T),
          lambda: f"tokens must be positions in [0, {T - 1}] for T={T}, got {tokens.tolist()}")  # fmt: skip


def _receptive_field_args(mask: torch.Tensor, layers: int) -> None:
    got = lambda: mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__  # noqa: E731
    check(isinstance(mask, torch.Tensor) and mask.dtype == torch.bool,
          lambda: f"mask must be a bool torch.Tensor (True = may attend), got {got()}")  # fmt: skip
    check(mask.dim() >= 2 and mask.shape[-1] == mask.shape[-2],
          lambda: f"mask must be square, shape (..., T, T), got {tuple(mask.shape)}")  # fmt: skip
    check_nonnegative_int("layers", layers)


def _as_lengths(lengths: torch.Tensor | Sequence[int]) -> torch.Tensor:
    """``lengths`` as a tensor; a sequence that is not of numbers is a ValueError."""
    if isinstance(lengths, torch.Tensor):
        return lengths
    try:
        return torch.tensor(list(lengths), dtype=None if len(lengths) else torch.long)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"lengths must be a 1-D tensor or sequence of ints, got {lengths!r}") from None


# ------------------------------------------------------------------------------------------------ the masks


@checked(_causal_mask_args)
def causal_mask(T: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Lower-triangular ``(T, T)`` mask: position i may attend to positions j <= i (Vaswani et al. 2017, §3.2.3)."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


@checked(_padding_mask_args)
def padding_mask(lengths: torch.Tensor | Sequence[int], T: int | None = None) -> torch.Tensor:
    """``(B, T)`` mask that is ``True`` on the first ``lengths[b]`` positions of row b.

    It masks *keys*: for scores of shape ``(B, Tq, Tk)`` use ``padding_mask(lengths, Tk)[:, None, :]``,
    for ``(B, H, Tq, Tk)`` use ``padding_mask(lengths, Tk)[:, None, None, :]``. ``T`` defaults to
    ``max(lengths)``.
    """
    lengths = _as_lengths(lengths)  # (B,)
    if T is None:
        T = int(lengths.max()) if lengths.numel() else 0
    positions = torch.arange(T, device=lengths.device)  # (T,)
    return positions[None, :] < lengths[:, None]  # (B, T)


@checked(_sliding_window_mask_args)
def sliding_window_mask(
    T: int, window: int, *, causal: bool = True, device: torch.device | str | None = None
) -> torch.Tensor:
    """Local band ``(T, T)``: i may attend to j with ``i - window < j <= i`` (``causal``) or ``|i - j| < window``.

    The sliding window of Longformer (Beltagy et al. 2020, §3.1) and the local part of the Sparse Transformer
    (Child et al. 2019, §4.2). ``window >= T`` with ``causal`` is :func:`causal_mask`. True = may attend.
    """
    band = causal_mask(T, device=device).triu(-(window - 1))  # (T, T): 0 <= i - j < window
    return band if causal else band | band.T


@checked(_strided_mask_args)
def strided_mask(T: int, stride: int, *, local: bool = True, device: torch.device | str | None = None) -> torch.Tensor:
    """Causal strided pattern ``(T, T)``: i may attend to j <= i with ``(i - j) % stride == 0``, or ``i - j < stride``.

    The "strided" attention of the Sparse Transformer (Child et al. 2019, §4.2): with ``local`` (the default) the
    union of its two heads, the previous ``stride`` positions and every ``stride``-th one before them; without,
    only the strided head. True = may attend.
    """
    positions = torch.arange(T, device=device)  # (T,)
    distance = positions[:, None] - positions[None, :]  # (T, T): i - j
    allowed = distance % stride == 0
    if local:
        allowed = allowed | (distance < stride)
    return causal_mask(T, device=device) & allowed


@checked(_global_tokens_mask_args)
def global_tokens_mask(
    T: int, tokens: torch.Tensor | Sequence[int], *, device: torch.device | str | None = None
) -> torch.Tensor:
    """``(T, T)``, not causal: the ``tokens`` positions attend to every position and every position to them.

    Longformer's global attention (Beltagy et al. 2020, §3.1), to be combined with a local pattern:
    ``sliding_window_mask(T, w, causal=False) | global_tokens_mask(T, [0])``; ``& causal_mask(T)`` makes it causal.
    True = may attend.
    """
    positions = tokens.long() if isinstance(tokens, torch.Tensor) else torch.tensor(list(tokens), dtype=torch.long)
    is_global = torch.zeros(T, dtype=torch.bool, device=device)
    is_global[positions.to(is_global.device)] = True  # (T,)
    return is_global[:, None] | is_global[None, :]  # (T, T)


@checked(_receptive_field_args)
def receptive_field(mask: torch.Tensor, layers: int) -> torch.Tensor:
    """Which inputs reach each output through ``layers`` layers of attention with ``mask`` and a residual
    connection around each: the boolean power ``(I ∨ M)^L``.

    mask ``(..., T, T)`` bool (True = may attend) -> ``(..., T, T)`` bool, entry ``[i, j]`` True if a chain
    i -> ... -> j of at most L allowed steps exists (the residual path lets a position keep what it has; Child et
    al. 2019, §4: two factorised heads reach every earlier position). ``layers = 0`` gives the identity. A sliding
    window w reaches back ``layers · (w - 1)`` positions.
    """
    layers = int(layers)
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
