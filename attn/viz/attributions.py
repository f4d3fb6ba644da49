"""Every attribution map of one example side by side, with the truth marked: a row per method over the inputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from attn._checks import check, checked, describe
from attn.viz.viewer import AttentionView, attention_viewer

__all__ = ["attribution_viewer"]


def _rows(maps: Mapping[str, torch.Tensor], truth: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """One example's real inputs (``real (N,)`` bool, wherever they are): the truth, then each map's positive part
    scaled to a maximum of 1."""
    rows = [truth[real].float()] + [m[real].detach().float().clamp_min(0) for m in maps.values()]
    return torch.stack([r / r.max().clamp_min(torch.finfo(r.dtype).tiny) for r in rows])  # (1 + maps, n)


def _attribution_viewer_args(
    maps: Mapping[str, torch.Tensor],
    truth: torch.Tensor,
    valid: torch.Tensor,
    tokens: Sequence[Sequence[str]],
    examples: Sequence[str],
    *,
    element: str = "input",
    title: str = "",
) -> None:
    check(isinstance(valid, torch.Tensor) and valid.dim() == 2 and valid.dtype == torch.bool,
          lambda: f"valid must be a (B, N) bool mask, got {describe(valid)}")  # fmt: skip
    B, N = valid.shape
    for name, m in [("truth", truth), *maps.items()]:
        check(isinstance(m, torch.Tensor) and m.shape == (B, N),
              f"map {name!r} must be (B, N) = ({B}, {N}) like valid, got {describe(m)}")  # fmt: skip
        check(not m.is_floating_point() or bool(torch.isfinite(m.detach()[valid]).all()),
              f"map {name!r} must be finite at the real inputs, got NaN or infinite values")  # fmt: skip
    check(0 < len(tokens) <= B and len(examples) == len(tokens), lambda: "tokens and examples must list the same "
          f"number of examples (1 to B = {B}), got {len(tokens)} and {len(examples)}")  # fmt: skip
    for b, words in enumerate(tokens):
        n = int(valid[b].sum())
        check(len(words) == n, f"tokens[{b}] has {len(words)} labels but example {b} has {n} real inputs")
    # what attention_viewer would check of its labels (it runs unchecked inside this call)
    check(all(isinstance(w, str) for words in tokens for w in words), "tokens must hold strings, one list per example")
    check(all(isinstance(e, str) for e in examples), lambda: f"examples must be names (strings), got {examples!r}")
    check(isinstance(element, str), lambda: f"element must be a string (the inputs' name), got {element!r}")


@checked(_attribution_viewer_args)
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
    shown = [_rows({k: m[b] for k, m in maps.items()}, truth[b], valid[b]) for b in range(len(tokens))]
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
