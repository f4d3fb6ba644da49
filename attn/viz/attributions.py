"""Every attribution map of one example side by side, with the truth marked: a row per method over the inputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from attn._checks import describe
from attn.viz.viewer import AttentionView, attention_viewer

__all__ = ["attribution_viewer"]


def _rows(maps: Mapping[str, torch.Tensor], truth: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """One example's real inputs (``real (N,)`` bool, wherever they are): the truth, then each map's positive part
    scaled to a maximum of 1."""
    rows = [truth[real].float()] + [m[real].detach().float().clamp_min(0) for m in maps.values()]
    return torch.stack([r / r.max().clamp_min(torch.finfo(r.dtype).tiny) for r in rows])  # (1 + maps, n)


def attribution_viewer(
    maps: Mapping[str, torch.Tensor],
    truth: torch.Tensor,
    valid: torch.Tensor,
    tokens: Sequence[Sequence[str]],
    examples: Sequence[str],
    *,
    element: str = "input",
    title: str = "",
) -> AttentionView:
    """A self-contained view of ``maps`` (name -> ``(B, N)``) for the ``len(tokens)`` first examples: one row per
    map (its positive part, scaled so its largest value is 1) under a row **truth** (``truth (B, N)`` bool), over
    each example's real inputs (``valid (B, N)``), labelled ``tokens[b]``; ``examples`` names the examples."""
    if not isinstance(valid, torch.Tensor) or valid.dim() != 2 or valid.dtype != torch.bool:
        raise ValueError(f"valid must be a (B, N) bool mask, got {describe(valid)}")
    B, N = valid.shape
    for name, m in [("truth", truth), *maps.items()]:
        if not isinstance(m, torch.Tensor) or m.shape != (B, N):
            raise ValueError(f"map {name!r} must be (B, N) = ({B}, {N}) like valid, got {describe(m)}")
        if m.is_floating_point() and not bool(torch.isfinite(m.detach()[valid]).all()):
            raise ValueError(f"map {name!r} must be finite at the real inputs, got NaN or infinite values")
    if not 0 < len(tokens) <= B or len(examples) != len(tokens):
        raise ValueError(
            f"tokens and examples must list the same number of examples (1 to B = {B}), "
            f"got {len(tokens)} and {len(examples)}"
        )
    shown = []
    for b, words in enumerate(tokens):
        n = int(valid[b].sum())
        if len(words) != n:
            raise ValueError(f"tokens[{b}] has {len(words)} labels but example {b} has {n} real inputs")
        shown.append(_rows({k: m[b] for k, m in maps.items()}, truth[b], valid[b]))
    names = ["truth", *maps]
    return attention_viewer(
        shown,
        [names] * len(shown),
        [list(w) for w in tokens],
        examples=list(examples),
        names=("method", element),
        distributions=False,
        title=title,
    )
