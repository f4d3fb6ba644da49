"""Matplotlib pictures of attention weights, labelled with tokens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.image import AxesImage

from attn._checks import check, checked

__all__ = ["heatmap", "hop_heatmap", "head_grid", "bar_weights", "lookup_figure", "one_example"]

CMAP = "viridis"  # perceptually uniform and colour-blind safe
SIGNED_CMAP = "RdBu_r"  # diverging ColorBrewer map (colour-blind safe): blue negative, white 0, red positive


def _floats(weights: torch.Tensor) -> torch.Tensor:
    """Weights to draw: a float tensor on the CPU, off the graph."""
    return torch.as_tensor(weights).detach().float().cpu()


def _shape(x: object) -> tuple[int, ...]:
    """The shape of a tensor, or of what ``torch.as_tensor`` makes of a list."""
    return tuple(torch.as_tensor(x).shape)


def _check_2d(name: str, weights: object) -> tuple[int, int]:
    """``Tq, Tk`` of a non-empty 2-D ``(Tq, Tk)`` matrix."""
    shape = _shape(weights)
    check(len(shape) == 2 and 0 not in shape, f"{name} must be 2-D (Tq, Tk) and non-empty, got shape {shape}")
    return shape[0], shape[1]


def _check_labels(name: str, labels: Sequence[str] | None, n: int, axis: str) -> None:
    if labels is not None:
        check(len(labels) == n, lambda: f"{name} has {len(labels)} labels but the weights have {n} {axis}")


def _literal(token: object) -> str:
    """A token as matplotlib should print it: ``$`` escaped, so that "$5 and $6" is text, not mathematics."""
    return str(token).replace("$", r"\$")


def _ticks(tokens: Sequence[str] | None, n: int) -> list[str]:
    """Tick labels: the tokens as literal text, or the positions 0..n-1."""
    return [_literal(t) for t in tokens] if tokens is not None else [str(i) for i in range(n)]


def _luminance(rgb: Sequence[float]) -> float:
    """WCAG 2.1's relative luminance of an sRGB colour with channels in [0, 1]."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _text_colour(image: AxesImage, value: float) -> str:
    """Black or white, whichever contrasts more with the cell that ``value`` is drawn in (WCAG contrast ratio)."""
    norm = cast(Normalize, image.norm)  # imshow's vmin and vmax made a Normalize, which maps a single number too
    L = _luminance(image.cmap(norm(value)))
    return "black" if (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) else "white"


def _heatmap_args(
    weights: torch.Tensor,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool | None = None,
    vmax: float | None = None,
    xlabel: str = "key",
    ylabel: str = "query",
    signed: bool = False,
) -> None:
    Tq, Tk = _check_2d("weights", weights)
    _check_labels("y_tokens", y_tokens, Tq, "rows (queries)")
    _check_labels("x_tokens", x_tokens, Tk, "columns (keys)")


@checked(_heatmap_args)
def heatmap(
    weights: torch.Tensor,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool | None = None,
    vmax: float | None = None,
    xlabel: str = "key",
    ylabel: str = "query",
    signed: bool = False,
) -> Axes:
    """Draw a ``(Tq, Tk)`` weight matrix: one row per query (``y_tokens``), one column per key (``x_tokens``).

    The colour scale runs from 0 to ``vmax`` (default: the largest weight); pass ``vmax=1`` to compare maps.
    ``signed=True`` is for matrices with negative entries (a learned mixing matrix, not attention): a
    diverging colour map from ``-vmax`` to ``vmax`` (default: the largest absolute entry).
    """
    weights = _floats(weights)
    Tq, Tk = weights.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(0.5 * Tk + 2, 0.45 * Tq + 1.2))
    top = max(1e-9, float(weights.abs().max() if signed else weights.max())) if vmax is None else vmax
    if signed:
        image = ax.imshow(weights.numpy(), cmap=SIGNED_CMAP, vmin=-top, vmax=top)
    else:
        image = ax.imshow(weights.numpy(), cmap=CMAP, vmin=0.0, vmax=top)
    if x_tokens is not None or Tk <= 20:  # long unlabelled axes keep matplotlib's sparse ticks
        ax.set_xticks(range(Tk), labels=_ticks(x_tokens, Tk), rotation=60)
    if y_tokens is not None or Tq <= 20:
        ax.set_yticks(range(Tq), labels=_ticks(y_tokens, Tq))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if annotate is None:
        annotate = Tq * Tk <= 100
    if annotate:
        for i in range(Tq):
            for j in range(Tk):
                w = float(weights[i, j])
                ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=8, color=_text_colour(image, w))
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def _hop_heatmap_args(
    hop_attention: torch.Tensor,
    sentences: Sequence[str],
    *,
    supporting: Sequence[int] = (),
    ax: Axes | None = None,
    title: str | None = None,
) -> None:
    K, M = _check_2d("hop_attention", hop_attention)
    _check_labels("sentences", sentences, M, "memories (columns of hop_attention)")
    bad = [i for i in supporting if not 0 <= i < M]
    check(not bad, f"supporting indices {bad} are outside the {M} sentences")


@checked(_hop_heatmap_args)
def hop_heatmap(
    hop_attention: torch.Tensor,
    sentences: Sequence[str],
    *,
    supporting: Sequence[int] = (),
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """A memory network's ``(K, M)`` attention, one column per hop and one row per story sentence (oldest at
    the top); the ``supporting`` sentences (indices) are marked with ``★``."""
    weights = _floats(hop_attention)
    K, M = weights.shape
    labels = [("★ " if i in supporting else "") + s for i, s in enumerate(sentences)]
    if ax is None:
        _, ax = plt.subplots(figsize=(0.7 * K + 3.5, 0.32 * M + 1.2))
    return heatmap(weights.T, [f"hop {k + 1}" for k in range(K)], labels, ax=ax, title=title, vmax=1.0,
                   xlabel="", ylabel="story sentence")  # fmt: skip


def _one_example_args(
    attention: Sequence[torch.Tensor], index: int = 0, queries: int | None = None, keys: int | None = None
) -> None:
    check(len(attention) > 0, "attention is empty: pass one (B, H, Tq, Tk) tensor per layer")
    for layer, w in enumerate(attention):
        check(isinstance(w, torch.Tensor) and w.dim() == 4,
              f"attention[{layer}] must be a (B, H, Tq, Tk) tensor, got {getattr(w, 'shape', type(w))}")  # fmt: skip
        check(-w.shape[0] <= index < w.shape[0], f"index {index} is outside a batch of {w.shape[0]}")


@checked(_one_example_args)
def one_example(
    attention: Sequence[torch.Tensor], index: int = 0, queries: int | None = None, keys: int | None = None
) -> tuple[torch.Tensor, ...]:
    """Example ``index`` of per-layer ``(B, H, Tq, Tk)`` weights, cut to its ``queries`` x ``keys`` real tokens:
    a tuple over layers of ``(1, H, queries, keys)``, the form bertviz's ``head_view`` and :func:`head_grid` take."""
    return tuple(w[index : index + 1 or None, :, :queries, :keys].detach().cpu() for w in attention)


def _head_maps(attention: Sequence[torch.Tensor] | torch.Tensor) -> list[torch.Tensor]:
    """Each layer's ``(H, Tq, Tk)`` (a leading axis of 1 dropped), as given: float or not, on its device."""
    layers = [attention] if isinstance(attention, torch.Tensor) else list(attention)
    return [w[0] if w.dim() == 4 and w.shape[0] == 1 else w for w in map(torch.as_tensor, layers)]


def _head_grid_args(
    attention: Sequence[torch.Tensor] | torch.Tensor,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    *,
    title: str | None = None,
    xlabel: str = "key",
    ylabel: str = "query",
    size: float = 2.1,
) -> None:
    maps = _head_maps(attention)
    for i, w in enumerate(maps):
        check(w.dim() == 3 and w.numel() > 0,
              f"layer {i} must be (H, Tq, Tk) or (1, H, Tq, Tk), got shape {tuple(w.shape)}")  # fmt: skip
    check(len({w.shape for w in maps}) == 1,
          lambda: f"every layer must have the same shape, got {[tuple(w.shape) for w in maps]}")  # fmt: skip
    H, Tq, Tk = maps[0].shape
    _check_labels("y_tokens", y_tokens, Tq, "rows (queries)")
    _check_labels("x_tokens", x_tokens, Tk, "columns (keys)")


@checked(_head_grid_args)
def head_grid(
    attention: Sequence[torch.Tensor] | torch.Tensor,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    *,
    title: str | None = None,
    xlabel: str = "key",
    ylabel: str = "query",
    size: float = 2.1,
) -> plt.Figure:
    """Every head of every layer: ``attention`` is a tuple over layers of ``(H, Tq, Tk)`` or ``(1, H, Tq, Tk)``
    (or one such tensor); one row per layer, one column per head, all on the colour scale 0..1."""
    maps = [_floats(w) for w in _head_maps(attention)]  # (H, Tq, Tk) per layer
    L, (H, Tq, Tk) = len(maps), maps[0].shape
    fig, axes = plt.subplots(L, H, figsize=(size * H + 0.8, size * L * max(0.6, Tq / Tk) + 0.8), squeeze=False,
                             layout="constrained")  # fmt: skip
    for layer in range(L):
        for head in range(H):
            ax = axes[layer][head]
            image = ax.imshow(maps[layer][head].numpy(), cmap=CMAP, vmin=0.0, vmax=1.0)
            ax.set_xticks(range(Tk), labels=_ticks(x_tokens, Tk), rotation=90, fontsize=8)
            ax.set_yticks(range(Tq), labels=_ticks(y_tokens, Tq), fontsize=8)
            if head:
                ax.set_yticklabels([])
            if layer < L - 1:  # the same keys in every row: label them once, under the last row
                ax.set_xticklabels([])
            ax.set_title(f"layer {layer + 1}, head {head + 1}" if L > 1 else f"head {head + 1}", fontsize=9)
    axes[-1][0].set_xlabel(xlabel)
    axes[-1][0].set_ylabel(ylabel)
    fig.colorbar(image, ax=axes, fraction=0.02, pad=0.01)
    if title:
        fig.suptitle(title)
    return fig


def _bar_weights_args(
    weights: torch.Tensor,
    labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> None:
    shape = _shape(weights)
    check(len(shape) == 1, f"weights must be 1-D, got shape {shape}")
    _check_labels("labels", labels, shape[0], "entries")


@checked(_bar_weights_args)
def bar_weights(
    weights: torch.Tensor,
    labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Bar chart of one distribution of weights (a row of attention, a softmax output)."""
    weights = _floats(weights)
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 2.5))
    names = [_literal(t) for t in labels] if labels is not None else [str(i) for i in range(weights.numel())]
    ax.bar(range(len(names)), weights.numpy(), color=plt.get_cmap(CMAP)(0.35))  # one slot per entry
    ax.set_xticks(range(len(names)), labels=names)
    ax.set_ylim(0, 1)
    ax.set_ylabel("weight")
    if title:
        ax.set_title(title)
    return ax


def _lookup_figure_args(
    keys: torch.Tensor,
    query: torch.Tensor,
    weights: torch.Tensor,
    output: torch.Tensor,
    labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> None:
    shape = _shape(keys)
    check(len(shape) == 2 and shape[1] == 2, f"keys must have shape (M, 2), got {shape}")
    M = shape[0]
    got = {name: _shape(x) for name, x in (("query", query), ("output", output), ("weights", weights))}
    check(got == {"query": (2,), "output": (2,), "weights": (M,)},
          f"expected query (2,), output (2,), weights ({M},); got query {got['query']}, "
          f"output {got['output']}, weights {got['weights']}")  # fmt: skip
    _check_labels("labels", labels, M, "keys")


@checked(_lookup_figure_args)
def lookup_figure(
    keys: torch.Tensor,
    query: torch.Tensor,
    weights: torch.Tensor,
    output: torch.Tensor,
    labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """2-D soft lookup: keys as dots sized and coloured by their weight, the query, and ``Σ_i p_i k_i``."""
    keys, query, weights, output = (_floats(x) for x in (keys, query, weights, output))  # (M, 2), (2,), (M,), (2,)
    M = keys.shape[0]
    if ax is None:
        _, ax = plt.subplots(figsize=(4.8, 4.8))
    cmap = plt.get_cmap(CMAP)
    ax.axhline(0, color="0.85", lw=0.8, zorder=0)
    ax.axvline(0, color="0.85", lw=0.8, zorder=0)
    ax.scatter(
        keys[:, 0],
        keys[:, 1],
        s=40 + 600 * weights.numpy(),
        c=cmap(weights.numpy()),
        edgecolors="black",
        linewidths=0.6,
        zorder=2,
        label="keys (size = weight)",
    )
    for i in range(M):
        name = _literal(labels[i]) if labels is not None else f"k{i}"
        ax.annotate(
            f"{name}\n{float(weights[i]):.2f}",
            tuple(keys[i].tolist()),
            textcoords="offset points",
            xytext=(8, 6),
            fontsize=10,
        )
    ax.annotate(
        "", xy=tuple(query.tolist()), xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": "crimson", "lw": 2}
    )
    ax.plot(*query.tolist(), marker="o", color="crimson", ms=5, ls="", label="query q")
    ax.plot(
        *output.tolist(), marker="*", color="darkorange", ms=16, mec="black", ls="", label="output Σ p_i k_i", zorder=3
    )
    lim = 1.25 * max(1.0, float(keys.abs().max()), float(query.abs().max()))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.legend(loc="lower left", fontsize=9)  # 9 px and more on the page: readable at the column's width
    if title:
        ax.set_title(title)
    return ax
