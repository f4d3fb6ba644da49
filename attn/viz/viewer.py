"""An attention viewer that needs no kernel and no CDN: one HTML fragment with its data and a small script.

``attention_viewer`` embeds precomputed weights, for any number of examples and selector axes (layer, head,
hop, epoch, ...), in a self-contained fragment. It shows in a live notebook (``_repr_html_``) and stays
interactive in the static book: sliders pick the matrix, hovering a cell reads out its weight. Matrices may be
non-square (alignment, cross-attention) and carry token labels on both axes; colours follow viridis, a
colour-blind-safe map. Every string reaches the page as JSON and is inserted with ``textContent``, so tokens
are shown as text, never parsed as HTML.

The style and the renderer live next to this module as package data, ``viewer.css`` and ``viewer.js`` (listed
under ``[tool.setuptools.package-data]`` in pyproject.toml), so that they are linted and tested as CSS and
JavaScript (tests/test_viewer.py runs ``node --check``). They are read with ``importlib.resources`` once, at
import, and reach the page verbatim: ``<style>`` + viewer.css + ``</style>`` and ``<script>`` + viewer.js, its
final newline dropped, + ``</script>``; any change to either file changes every saved viewer output. viewer.js
has two markers, plain identifiers so that the file stays valid JavaScript, which ``_script`` fills in with
``str.replace``: ``__VIEWER_ID__`` (the viewer's element id) and ``__VIRIDIS_STOPS__`` (``VIRIDIS`` as a JSON
array). Nothing else in either file is substituted, so neither needs escaping.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from numbers import Real
from pathlib import Path
from typing import cast

import torch

from attn._checks import check, checked

__all__ = ["AttentionView", "attention_viewer"]

MAX_WEIGHT = 1e9  # larger values would not survive the integer encoding (JavaScript numbers)
_FALLBACK = "Run this cell (or trust the notebook) to draw the attention viewer: it is drawn by JavaScript."
DECIMALS = 4  # weights are stored as integers in units of 10**-DECIMALS and read out to this many decimals
VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]
ID_MARKER = "__VIEWER_ID__"  # in viewer.js: replaced by the viewer's element id (attn-viewer-<16 hex digits>)
STOPS_MARKER = "__VIRIDIS_STOPS__"  # in viewer.js: replaced by VIRIDIS as a JSON array of "#rrggbb" strings


def _asset(name: str) -> str:
    """A text file shipped in this package (package data, see pyproject.toml), read as UTF-8."""
    return resources.files("attn.viz").joinpath(name).read_text(encoding="utf-8")


# The page's style and renderer are package data next to this module, read once at import (see the docstring).
_STYLE = "<style>\n" + _asset("viewer.css") + "</style>"
_SCRIPT = _asset("viewer.js")
for _marker in (ID_MARKER, STOPS_MARKER):
    if _marker not in _SCRIPT:
        raise RuntimeError(f"attn/viz/viewer.js lacks the marker {_marker}, which the viewer fills in")


def _script(view_id: str) -> str:
    """The renderer for one viewer: viewer.js with its markers filled in, as a <script> element."""
    js = _SCRIPT.replace(ID_MARKER, view_id).replace(STOPS_MARKER, json.dumps(VIRIDIS))
    return "<script>" + js.removesuffix("\n") + "</script>"


class AttentionView:
    """A rendered viewer: shows itself in a notebook, ``.html`` is the fragment, ``.save`` writes a page."""

    def __init__(self, html: str, summary: str) -> None:
        self.html = html
        self._summary = summary

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"AttentionView({self._summary}, {len(self.html.encode()) / 1024:.1f} KiB)"

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write a standalone HTML page; an existing file is kept unless ``overwrite=True``."""
        path = Path(path)
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
        head = "<!doctype html>\n<html><head><meta charset='utf-8'><title>attention</title></head>\n"
        page = f"{head}<body>{self.html}</body></html>\n"
        path.write_text(page, encoding="utf-8")
        return path


# --- the checks at the door ---------------------------------------------------------------------------------------


def _check_examples(weights: object) -> None:
    ok = isinstance(weights, torch.Tensor) or (
        isinstance(weights, Sequence) and weights and all(isinstance(w, torch.Tensor) for w in weights)
    )
    check(ok, lambda: "weights must be a tensor (..., Tq, Tk) or a non-empty list of them, "
          f"got {type(weights).__name__}")  # fmt: skip


def _check_token_lists(name: str, tokens: Sequence[str] | Sequence[Sequence[str]], n: int) -> None:
    """One list of strings, or ``n`` of them (one per example)."""
    check(not isinstance(tokens, str) and isinstance(tokens, Sequence), lambda: f"{name} must be a list of strings "
          f"(or one list per example), got {type(tokens).__name__}")  # fmt: skip
    per_example = len(tokens) == n and all(
        isinstance(ts, Sequence) and not isinstance(ts, str) and all(isinstance(t, str) for t in ts) for ts in tokens
    )
    check(all(isinstance(t, str) for t in tokens) or per_example,
          f"{name} must be a list of strings or {n} lists of strings (one per example)")  # fmt: skip


def _check_example(k: int, w: torch.Tensor, rows: list[str], cols: list[str], lead: tuple[int, ...], n: int) -> None:
    """Example ``k`` has ``n`` axes of sizes ``lead``, one row per query token and one column per key token."""
    where = f"weights[{k}] (shape {tuple(w.shape)})"
    check(w.ndim == 2 + n, f"{where} must have {2 + n} dimensions: one per axis in axes, then (Tq, Tk)")
    check(tuple(w.shape[:-2]) == lead,
          f"{where} has axis sizes {tuple(w.shape[:-2])}, but the first example has {lead}")  # fmt: skip
    check(w.numel() > 0, f"{where} is empty: every axis and (Tq, Tk) must have size >= 1")
    check(w.shape[-2] == len(rows) and w.shape[-1] == len(cols),
          f"{where}: query_tokens has {len(rows)} and key_tokens {len(cols)} tokens (key_tokens defaults to "
          f"query_tokens), which do not match (Tq, Tk) = {tuple(w.shape[-2:])}")  # fmt: skip
    ok = not w.is_complex() and bool(torch.isfinite(w.double()).all()) and w.double().abs().max() <= MAX_WEIGHT
    check(ok, f"{where} has complex, non-finite or huge (> {MAX_WEIGHT:g}) values")


def _check_rows(k: int, w: torch.Tensor) -> None:
    """Every row of example ``k`` sums to 1 (or 0: nothing to attend to) and has no negative weight."""
    sums = w.double().sum(-1)
    good = ((sums - 1).abs() <= 1e-3) | (sums.abs() <= 1e-3)
    check(not bool((w < 0).any()) and bool(good.all()),
          lambda: f"weights[{k}] (shape {tuple(w.shape)}) has rows that are not distributions (row sums from "
          f"{float(sums.min()):.4g} to {float(sums.max()):.4g}, smallest weight {float(w.min()):.4g}); pass "
          "distributions=False for matrices that are not attention weights")  # fmt: skip


def _check_axes(axes: Sequence[str]) -> None:
    check(not isinstance(axes, str) and isinstance(axes, Sequence),
          lambda: f"axes must be a list of names, e.g. ('layer', 'head'), got {axes!r}")  # fmt: skip
    check(all(isinstance(a, str) for a in axes) and len(set(axes)) == len(axes),
          lambda: f"axes must be distinct names, got {list(axes)}")  # fmt: skip


def _check_ticks(axes: Sequence[str], ticks: Mapping[str, Sequence[str]] | None, lead: tuple[int, ...]) -> None:
    """Tick labels only for named axes, one per position."""
    ticks = dict(ticks or {})
    unknown = set(ticks) - set(axes)
    check(not unknown, lambda: f"ticks names {sorted(unknown)}, which are not in axes {list(axes)}")
    for axis, n in zip(axes, lead, strict=True):
        labels = list(ticks.get(axis, range(n)))
        check(len(labels) == n, f"ticks[{axis!r}] has {len(labels)} labels, but the {axis} axis has size {n}")


def _check_labels(examples: Sequence[str], n: int, names: tuple[str, str], vmax: float | None) -> None:
    """The example names (one per tensor), the two axis names and vmax (a positive number or None)."""
    named = not isinstance(examples, str) and isinstance(examples, Sequence) and len(examples) == n
    check(named and all(isinstance(e, str) for e in examples),
          lambda: f"examples must be {n} names (one per weights tensor), got {examples!r}")  # fmt: skip
    check(isinstance(names, (tuple, list)) and len(names) == 2 and all(isinstance(x, str) for x in names),
          lambda: f"names must be two strings (rows, columns), got {names!r}")  # fmt: skip
    check(vmax is None or (not isinstance(vmax, bool) and isinstance(vmax, Real) and 0 < vmax < math.inf),
          lambda: f"vmax must be a positive number or None, got {vmax!r}")  # fmt: skip


def _attention_viewer_args(
    weights: torch.Tensor | Sequence[torch.Tensor],
    query_tokens: Sequence[str] | Sequence[Sequence[str]],
    key_tokens: Sequence[str] | Sequence[Sequence[str]] | None = None,
    *,
    axes: Sequence[str] = (),
    ticks: Mapping[str, Sequence[str]] | None = None,
    examples: Sequence[str] | None = None,
    names: tuple[str, str] = ("query", "key"),
    title: str = "",
    vmax: float | None = 1.0,
    distributions: bool = True,
) -> None:
    _check_examples(weights)
    tensors = _examples(weights)
    _check_token_lists("query_tokens", query_tokens, len(tensors))
    rows = _token_lists(query_tokens, len(tensors))
    if key_tokens is not None:
        _check_token_lists("key_tokens", key_tokens, len(tensors))
    cols = rows if key_tokens is None else _token_lists(key_tokens, len(tensors))
    _check_axes(axes)
    lead = tuple(tensors[0].shape[: len(axes)])
    for k, (w, r, c) in enumerate(zip(tensors, rows, cols, strict=True)):
        _check_example(k, w, r, c, lead, len(axes))
    _check_labels([""] * len(tensors) if examples is None else examples, len(tensors), names, vmax)  # the default fits
    check(isinstance(distributions, bool), lambda: f"distributions must be True or False, got {distributions!r}")
    if distributions:
        for k, w in enumerate(tensors):
            _check_rows(k, w.detach())
    _check_ticks(axes, ticks, lead)


# --- the view ------------------------------------------------------------------------------------------------------


def _examples(weights: torch.Tensor | Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """One tensor per example."""
    return [weights] if isinstance(weights, torch.Tensor) else list(weights)


def _token_lists(tokens: Sequence[str] | Sequence[Sequence[str]], n: int) -> list[list[str]]:
    """One token list per example; a single flat list is shared by every example."""
    if all(isinstance(t, str) for t in tokens):
        return [list(cast(Sequence[str], tokens))] * n
    return [list(ts) for ts in tokens]


def _axes_data(axes: Sequence[str], ticks: Mapping[str, Sequence[str]] | None, lead: tuple[int, ...]) -> list[dict]:
    """Name and tick labels of each selector axis (default ticks 1, 2, ...)."""
    ticks = dict(ticks or {})
    return [
        {"name": axis, "ticks": [str(t) for t in ticks.get(axis, range(1, n + 1))]}
        for axis, n in zip(axes, lead, strict=True)
    ]


def _fragment(data: dict) -> str:
    """The HTML: style, the data as JSON inside a container, the renderer."""
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    # Inside <script> only "</" could end the element early: escape <, > and & as JSON unicode escapes.
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    view_id = "attn-viewer-" + hashlib.sha256(payload.encode()).hexdigest()[:16]
    return (
        f"{_STYLE}<div class='attn-viewer' id='{view_id}'>"
        f"<script type='application/json' class='av-data'>{payload}</script>"
        f"<em class='av-fallback'>{_FALLBACK}</em></div>" + _script(view_id)
    )


@checked(_attention_viewer_args)
def attention_viewer(
    weights: torch.Tensor | Sequence[torch.Tensor],
    query_tokens: Sequence[str] | Sequence[Sequence[str]],
    key_tokens: Sequence[str] | Sequence[Sequence[str]] | None = None,
    *,
    axes: Sequence[str] = (),
    ticks: Mapping[str, Sequence[str]] | None = None,
    examples: Sequence[str] | None = None,
    names: tuple[str, str] = ("query", "key"),
    title: str = "",
    vmax: float | None = 1.0,
    distributions: bool = True,
) -> AttentionView:
    """An interactive, self-contained view of attention weights ``(*axes, Tq, Tk)``, one tensor per example.

    ``axes`` names the leading dimensions (e.g. ``("layer", "head")``); each gets a slider, labelled by
    ``ticks[name]`` (default 1, 2, ...). Examples may differ in length; ``query_tokens``/``key_tokens`` are then
    one list per example (``key_tokens`` defaults to the query tokens: self-attention). ``names`` labels rows
    and columns in the readout. ``vmax`` is the weight drawn brightest (``None``: each matrix's maximum).
    Every row must be a distribution (sum to 1, or 0 for a row with nothing to attend to) unless
    ``distributions=False``, for matrices that are not attention: a memory's usage over time, a link matrix.
    """
    tensors = [w.detach().cpu() for w in _examples(weights)]  # (*axes, Tq, Tk) each
    rows = _token_lists(query_tokens, len(tensors))
    cols = rows if key_tokens is None else _token_lists(key_tokens, len(tensors))
    lead = tuple(tensors[0].shape[: len(axes)])
    if examples is None:
        examples = [" ".join(r) for r in rows] if len(tensors) > 1 else [""]
    axis_data = _axes_data(axes, ticks, lead)
    scale = 10**DECIMALS
    data = {
        "title": str(title),
        "names": list(names),
        "axes": axis_data,
        "scale": scale,
        "decimals": DECIMALS,
        "vmax": None if vmax is None else float(vmax),
        "examples": [
            {"name": name, "rows": r, "cols": c, "w": torch.round(w.double() * scale).long().flatten().tolist()}
            for name, w, r, c in zip(examples, tensors, rows, cols, strict=True)
        ],
    }
    if not distributions:  # declared, so that checks of a book's views know these rows need not sum to 1
        data["distributions"] = False
    shape = " × ".join(f"{a['name']} {len(a['ticks'])}" for a in axis_data)
    summary = f"{len(tensors)} example{'s' if len(tensors) > 1 else ''}" + (f", {shape}" if shape else "")
    return AttentionView(_fragment(data), summary)
