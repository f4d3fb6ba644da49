"""What heads do: summaries of attention weights, and switching heads off.

Every summary takes one layer's weights ``(B, H, Tq, Tk)`` (as a model's forward returns them) and gives one
number per head ``(H,)``, averaged over the query positions that count; stack them over layers for a
``(layers, heads)`` picture. The patterns are those found in BERT (Clark et al. 2019) and in small
attention-only models (Olsson et al. 2022).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import torch

from attn._checks import check_positive_int, shape_of
from attn.blocks.attention import MultiHeadAttention

__all__ = [
    "attention_entropy",
    "attention_distance",
    "mass_on",
    "previous_token_targets",
    "induction_targets",
    "ablate_heads",
]


def _describe(x: object) -> object:
    """A tensor's shape, or the type of anything else (for error messages)."""
    return shape_of(x) if isinstance(x, torch.Tensor) else type(x).__name__


def _check(weights: object) -> torch.Tensor:
    """``weights`` if it is one layer's ``(B, H, Tq, Tk)`` attention, else a ValueError."""
    if not isinstance(weights, torch.Tensor) or weights.dim() != 4:
        raise ValueError(f"weights must be one layer's attention (B, H, Tq, Tk), got {_describe(weights)}")
    return weights


def _queries(weights: torch.Tensor, queries: torch.Tensor | None) -> torch.Tensor:
    """The query rows that count, as a float ``(B, 1, Tq)`` (all of them if ``queries`` is None)."""
    B, H, Tq, Tk = weights.shape
    if queries is None:
        return weights.new_ones(B, 1, Tq)
    if not isinstance(queries, torch.Tensor) or queries.shape != (B, Tq) or queries.dtype != torch.bool:
        raise ValueError(f"queries must be a (B, Tq) = ({B}, {Tq}) bool mask, got {_describe(queries)}")
    if not queries.any():
        raise ValueError("queries marks no query row: there is nothing to average")
    return queries.to(weights.dtype)[:, None, :]


def _mean_over_queries(per_query: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``(B, H, Tq)`` values, ``(B, 1, Tq)`` row weights -> ``(H,)`` mean over the counted rows."""
    return (per_query * rows).sum((0, 2)) / rows.sum((0, 2)).clamp(min=1)


def attention_entropy(weights: torch.Tensor, queries: torch.Tensor | None = None) -> torch.Tensor:
    """Mean entropy ``-Σ_j a_ij log a_ij`` (nats) of each head's attention rows: 0 = on one token, log T = uniform."""
    weights = _check(weights)
    entropy = -torch.xlogy(weights, weights).sum(-1)  # (B, H, Tq); 0 log 0 = 0
    return _mean_over_queries(entropy, _queries(weights, queries))


def attention_distance(weights: torch.Tensor, queries: torch.Tensor | None = None) -> torch.Tensor:
    """Mean distance ``Σ_j a_ij |i - j|`` (in tokens) each head looks away from the query's own position."""
    weights = _check(weights)
    B, H, Tq, Tk = weights.shape
    i, j = torch.arange(Tq, device=weights.device), torch.arange(Tk, device=weights.device)
    distance = (i[:, None] - j[None, :]).abs().to(weights.dtype)  # (Tq, Tk)
    return _mean_over_queries((weights * distance).sum(-1), _queries(weights, queries))


def mass_on(weights: torch.Tensor, targets: torch.Tensor, queries: torch.Tensor | None = None) -> torch.Tensor:
    """Mean attention each head puts on the keys ``targets`` marks (bool, broadcastable to ``(B, Tq, Tk)``,
    e.g. ``(B, 1, Tk)`` for "the [SEP] token" or ``(Tq, Tk)`` for "the previous token"), over ``queries``."""
    weights = _check(weights)
    B, H, Tq, Tk = weights.shape
    if not isinstance(targets, torch.Tensor):
        raise ValueError(f"targets must be a bool tensor broadcastable to (B, Tq, Tk), got {type(targets).__name__}")
    try:
        targets = torch.broadcast_to(targets, (B, Tq, Tk))
    except (RuntimeError, TypeError):
        raise ValueError(
            f"targets must broadcast to (B, Tq, Tk) = ({B}, {Tq}, {Tk}), got {shape_of(targets)}"
        ) from None
    if targets.dtype != torch.bool:
        raise ValueError(f"targets must be a bool mask, got {targets.dtype}")
    mass = (weights * targets[:, None].to(weights.dtype)).sum(-1)  # (B, H, Tq)
    return _mean_over_queries(mass, _queries(weights, queries))


def previous_token_targets(T: int) -> torch.Tensor:
    """``(T, T)``: query i marks key i - 1 (a previous-token head attends there)."""
    return torch.ones(check_positive_int("T", T) - 1, dtype=torch.bool).diag(-1)


def induction_targets(periods: torch.Tensor, T: int) -> torch.Tensor:
    """For strings that repeat with period ``periods (B,)``: ``(B, T, T)`` marking, for a query i >= p, key
    i - p + 1, the token that followed the previous occurrence of token i (where an induction head looks)."""
    T = check_positive_int("T", T)
    integer = isinstance(periods, torch.Tensor) and periods.dim() == 1 and not periods.is_floating_point()
    if not integer or (periods < 1).any():
        raise ValueError(f"periods must be a (B,) integer tensor of periods >= 1, got {_describe(periods)}")
    i = torch.arange(T)
    key = i[None, :] - periods[:, None] + 1  # (B, T)
    targets = torch.zeros(len(periods), T, T, dtype=torch.bool)
    rows = i[None, :] >= periods[:, None]  # (B, T): queries that have seen one period
    b, q = rows.nonzero(as_tuple=True)
    targets[b, q, key[b, q]] = True
    return targets


@contextmanager
def ablate_heads(attentions: Sequence[MultiHeadAttention], heads: Iterable[tuple[int, int]]) -> Iterator[None]:
    """Inside the block, each ``(layer, head)`` in ``heads`` contributes nothing: its slice of ``W_o`` (the
    columns that read that head's output) is zero, so ``Concat(head_1, ..., head_h) W_O`` drops it. The weights
    are restored on leaving the block, even after an error."""
    saved = []
    try:
        with torch.no_grad():
            for layer, head in heads:
                if not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in (layer, head)):
                    raise ValueError(f"heads must hold (layer, head) pairs of ints, got {(layer, head)!r}")
                if not 0 <= layer < len(attentions):
                    raise ValueError(f"layer {layer} is out of range: the model has {len(attentions)} layers")
                mha = attentions[layer]
                if not 0 <= head < mha.h:
                    raise ValueError(f"head {head} is out of range: layer {layer} has {mha.h} heads")
                columns = mha.W_o.weight[:, head * mha.d_k : (head + 1) * mha.d_k]  # (d_model, d_k): head's columns
                saved.append((columns, columns.clone()))
                columns.zero_()
        yield
    finally:
        with torch.no_grad():
            for columns, original in reversed(saved):
                columns.copy_(original)
