"""An attention viewer that needs no kernel and no CDN: one HTML fragment with its data and a small script.

``attention_viewer`` embeds precomputed weights, for any number of examples and selector axes (layer, head,
hop, epoch, ...), in a self-contained fragment. It shows in a live notebook (``_repr_html_``) and stays
interactive in the static book: sliders pick the matrix, hovering a cell reads out its weight. Matrices may be
non-square (alignment, cross-attention) and carry token labels on both axes; colours follow viridis, a
colour-blind-safe map. Every string reaches the page as JSON and is inserted with ``textContent``, so tokens
are shown as text, never parsed as HTML.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from numbers import Real
from pathlib import Path

import torch

__all__ = ["AttentionView", "attention_viewer"]

MAX_WEIGHT = 1e9  # larger values would not survive the integer encoding (JavaScript numbers)
_FALLBACK = "Run this cell (or trust the notebook) to draw the attention viewer: it is drawn by JavaScript."
DECIMALS = 4  # weights are stored as integers in units of 10**-DECIMALS and read out to this many decimals
VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]

_STYLE = """<style>
.attn-viewer{font:13px/1.3 system-ui,sans-serif;color:#222;background:#fff;padding:6px;display:inline-block;
max-width:100%;overflow-x:auto;border:1px solid #ddd;border-radius:4px}
.attn-viewer .av-title{font-weight:600;margin-bottom:4px}
.attn-viewer .av-controls{display:flex;flex-wrap:wrap;gap:4px 14px;margin-bottom:6px;align-items:center}
.attn-viewer label{display:inline-flex;gap:4px;align-items:center}
.attn-viewer .av-grid{display:grid;gap:1px;width:max-content}
.attn-viewer .av-grid:focus-visible{outline:2px solid #e7298a;outline-offset:2px}
.attn-viewer .av-col{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;text-align:left;
padding:2px 0}
.attn-viewer .av-row{white-space:nowrap;text-align:right;padding-right:4px;align-self:center}
.attn-viewer .av-cell{border-radius:1px}
.attn-viewer .av-on{font-weight:700;color:#b3003c}
.attn-viewer .av-cell.av-hit{outline:2px solid #000;outline-offset:0;box-shadow:inset 0 0 0 2px #fff}
.attn-viewer .av-line{display:contents}
.attn-viewer .av-sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.attn-viewer button.av-show{font:inherit;padding:1px 8px}
.attn-viewer table.av-table{border-collapse:collapse;margin-top:6px;font-variant-numeric:tabular-nums}
.attn-viewer table.av-table th,.attn-viewer table.av-table td{border:1px solid #ccc;padding:1px 5px;text-align:right}
.attn-viewer table.av-table th{background:#f3f3f3;font-weight:600}
.attn-viewer .av-readout{min-height:1.3em;margin-top:6px;font-variant-numeric:tabular-nums}
.attn-viewer .av-bar{display:flex;align-items:center;gap:4px;margin-top:4px;font-size:11px}
.attn-viewer .av-bar span.av-ramp{width:120px;height:10px;display:inline-block}
</style>"""

# The renderer: reads the JSON next to it, builds the controls and the grid, updates on input and hover.
_SCRIPT = """<script>(function () {
var root = document.currentScript && document.currentScript.previousElementSibling;
if (!root || !root.classList.contains("attn-viewer") || root.dataset.drawn) {
  // Hosts that run the script elsewhere (e.g. appended to <head>): the first undrawn viewer with this id.
  root = Array.prototype.filter.call(document.querySelectorAll('[id="%(id)s"]'), function (r) {
    return !r.dataset.drawn; })[0];
}
if (!root) { return; }
var d = JSON.parse(root.querySelector("script.av-data").textContent);
var stops = %(stops)s.map(function (h) {
  return [1, 3, 5].map(function (i) { return parseInt(h.slice(i, i + 2), 16); }); });
function colour(t) {
  t = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  var i = Math.min(stops.length - 2, Math.floor(t)), f = t - i, a = stops[i], b = stops[i + 1];
  return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + f * (b[k] - a[k])); }).join(",") + ")";
}
function el(tag, cls, text) {
  var e = document.createElement(tag); if (cls) { e.className = cls; }
  if (text !== undefined) { e.textContent = text; } return e;
}
var fallback = root.querySelector("em.av-fallback"); if (fallback) { root.removeChild(fallback); }
root.dataset.drawn = "1";
// The chosen cell's id, unique on the page even when one viewer is shown twice (same data, same root id).
window.attnViewers = (window.attnViewers || 0) + 1;
var hitId = root.id + "-hit-" + window.attnViewers;
if (d.title) { root.appendChild(el("div", "av-title", d.title)); }
var controls = el("div", "av-controls"), grid = el("div", "av-grid"), readout = el("div", "av-readout");
readout.setAttribute("aria-live", "polite");
grid.tabIndex = 0;
grid.setAttribute("role", "grid");
grid.setAttribute("aria-label", (d.title ? d.title + ": " : "") + "attention weights, " + d.names[0] + " by " +
  d.names[1] + "; hover over a cell, or use the arrow keys");
var table = el("table", "av-table"), show = el("button", "av-show", "Show as table");
show.type = "button"; show.setAttribute("aria-expanded", "false"); table.hidden = true;
show.addEventListener("click", function () {
  table.hidden = !table.hidden; show.setAttribute("aria-expanded", String(!table.hidden));
  show.textContent = table.hidden ? "Show as table" : "Hide the table"; draw(); });
root.appendChild(controls); root.appendChild(grid); root.appendChild(readout);
// Plain keys typed here stay here: JupyterLab would take them as notebook shortcuts (arrows move the selected
// cell, "d d" deletes it). Keys with Ctrl, Alt or Meta, Escape and Shift+Enter (run the cell) still reach it.
["keydown", "keyup"].forEach(function (type) {
  root.addEventListener(type, function (e) {
    var passes = e.key === "Escape" || (e.key === "Enter" && e.shiftKey) || e.ctrlKey || e.altKey || e.metaKey;
    if (!passes) { e.stopPropagation(); } }); });
var state = {example: 0, pos: d.axes.map(function () { return 0; })};
if (d.examples.length > 1) {
  var menu = el("select", "av-example");
  d.examples.forEach(function (x, i) { var o = el("option", "", x.name); o.value = i; menu.appendChild(o); });
  menu.setAttribute("aria-label", "example");
  menu.addEventListener("change", function () { state.example = +menu.value; draw(); });
  var lab = el("label", "", "example "); lab.appendChild(menu); controls.appendChild(lab);
}
d.axes.forEach(function (axis, a) {
  if (axis.ticks.length < 2) { return; }
  var lab = el("label", "", axis.name + " "), range = el("input", "av-axis"), shown = el("b", "", axis.ticks[0]);
  range.type = "range"; range.min = 0; range.max = axis.ticks.length - 1; range.value = 0; range.step = 1;
  range.dataset.axis = axis.name; range.setAttribute("aria-label", axis.name);
  range.setAttribute("aria-valuetext", axis.name + " " + axis.ticks[0]);
  range.addEventListener("input", function () {
    state.pos[a] = +range.value; shown.textContent = axis.ticks[state.pos[a]];
    range.setAttribute("aria-valuetext", axis.name + " " + axis.ticks[state.pos[a]]); draw(); });
  lab.appendChild(range); lab.appendChild(shown); controls.appendChild(lab);
});
var bar = el("div", "av-bar"), ramp = el("span", "av-ramp");
ramp.style.background = "linear-gradient(to right," + %(stops)s.join(",") + ")";
bar.appendChild(el("span", "", "0")); bar.appendChild(ramp); var top = el("span", "av-vmax", "");
bar.appendChild(top); root.appendChild(bar);
controls.appendChild(show); root.appendChild(table);
var corner = d.names[0] + " \\u2193, " + d.names[1] + " \\u2192";  // the header cell above the row labels
function describe(x, w, i, j) {
  return d.names[0] + " \\u201c" + x.rows[i] + "\\u201d (" + (i + 1) + ") \\u2192 " + d.names[1] + " \\u201c" +
    x.cols[j] + "\\u201d (" + (j + 1) + "): " + w[i * x.cols.length + j].toFixed(d.decimals);
}
function draw() {
  var x = d.examples[state.example], nq = x.rows.length, nk = x.cols.length, offset = 0;
  d.axes.forEach(function (axis, a) { offset = offset * axis.ticks.length + state.pos[a]; });
  offset *= nq * nk;
  var w = x.w.slice(offset, offset + nq * nk).map(function (v) { return v / d.scale; });
  var vmax = d.vmax;
  if (vmax === null) { vmax = w.reduce(function (m, v) { return v > m ? v : m; }, 1 / d.scale); }
  top.textContent = String(+vmax.toFixed(d.decimals));
  var size = Math.max(6, Math.min(26, Math.floor(480 / Math.max(nq, nk))));  // 64 columns still fit the book's column
  grid.textContent = "";
  grid.style.gridTemplateColumns = "max-content repeat(" + nk + "," + size + "px)";
  grid.style.gridAutoRows = size + "px";
  grid.style.gridTemplateRows = "max-content";
  // ARIA grid: a row of column headers, then one row per query (header + cells); the rows are display:contents,
  // so the cells still lay out on the CSS grid.
  var head = grid.appendChild(el("div", "av-line"));
  head.setAttribute("role", "row");
  head.appendChild(el("div", "", "")).setAttribute("role", "columnheader");
  head.firstChild.appendChild(el("span", "av-sr", corner));
  var colHeads = x.cols.map(function (t) {
    var h = head.appendChild(el("div", "av-col", t)); h.setAttribute("role", "columnheader");
    if (size < 17) { h.style.fontSize = Math.max(6, size) + "px"; h.style.lineHeight = size + "px"; }  // fit the column
    return h; });
  var rowHeads = [], cells = [];
  for (var i = 0; i < nq; i++) {
    var line = grid.appendChild(el("div", "av-line")); line.setAttribute("role", "row");
    rowHeads.push(line.appendChild(el("div", "av-row", x.rows[i])));
    rowHeads[i].setAttribute("role", "rowheader");
    for (var j = 0; j < nk; j++) {
      var v = w[i * nk + j], c = line.appendChild(el("div", "av-cell"));
      c.style.background = colour(v / vmax); c.dataset.i = i; c.dataset.j = j;
      c.setAttribute("role", "gridcell"); c.title = describe(x, w, i, j); cells.push(c);
    }
  }
  if (!table.hidden) { fill(x, w); }
  readout.textContent = "Hover over a cell (or use the arrow keys) to read its weight.";
  function pick(i, j) {
    grid.querySelectorAll(".av-on,.av-hit").forEach(function (n) {
      n.classList.remove("av-on", "av-hit"); n.removeAttribute("id"); n.removeAttribute("aria-selected"); });
    rowHeads[i].classList.add("av-on"); colHeads[j].classList.add("av-on");
    var c = cells[i * nk + j];
    c.classList.add("av-hit"); c.id = hitId; c.setAttribute("aria-selected", "true");
    grid.setAttribute("aria-activedescendant", c.id);
    state.cell = [i, j];
    readout.textContent = describe(x, w, i, j);
  }
  grid.onmouseover = function (e) {
    if (e.target.classList.contains("av-cell")) { pick(+e.target.dataset.i, +e.target.dataset.j); }
  };
  grid.onkeydown = function (e) {  // arrow keys move the readout from cell to cell
    var step = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]}[e.key];
    if (!step) { return; }
    e.preventDefault();
    var c = state.cell;
    if (!c) { pick(0, 0); return; }  // the first key press shows the first cell
    pick(Math.min(nq - 1, Math.max(0, c[0] + step[0])), Math.min(nk - 1, Math.max(0, c[1] + step[1])));
  };
  grid.removeAttribute("aria-activedescendant");
  var kept = state.cell;  // a slider or another example keeps the chosen cell where it still exists
  state.cell = null;
  if (kept && kept[0] < nq && kept[1] < nk) { pick(kept[0], kept[1]); }
}
function fill(x, w) {  // the matrix as a table: a header cell for every row and column
  table.textContent = "";
  var caption = table.appendChild(el("caption", "", (d.title ? d.title + ": " : "") + d.names[0] + " (rows) by " +
    d.names[1] + " (columns)"));
  caption.style.textAlign = "left";
  var tr = table.appendChild(el("tr"));
  tr.appendChild(el("th", "", "")).appendChild(el("span", "av-sr", corner));
  x.cols.forEach(function (t) { tr.appendChild(el("th", "", t)).setAttribute("scope", "col"); });
  x.rows.forEach(function (t, i) {
    var r = table.appendChild(el("tr"));
    r.appendChild(el("th", "", t)).setAttribute("scope", "row");
    x.cols.forEach(function (_, j) { r.appendChild(el("td", "", w[i * x.cols.length + j].toFixed(d.decimals))); });
  });
}
draw();
})();</script>"""


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


def _as_examples(weights: torch.Tensor | Sequence[torch.Tensor]) -> list[torch.Tensor]:
    if isinstance(weights, torch.Tensor):
        return [weights]
    if isinstance(weights, Sequence) and weights and all(isinstance(w, torch.Tensor) for w in weights):
        return list(weights)
    kind = type(weights).__name__
    raise ValueError(f"weights must be a tensor (..., Tq, Tk) or a non-empty list of them, got {kind}")


def _as_token_lists(name: str, tokens: object, n: int) -> list[list[str]]:
    """One token list per example; a single flat list is shared by every example."""
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise ValueError(f"{name} must be a list of strings (or one list per example), got {type(tokens).__name__}")
    if all(isinstance(t, str) for t in tokens):
        return [list(tokens)] * n
    if len(tokens) != n or not all(
        isinstance(ts, Sequence) and not isinstance(ts, str) and all(isinstance(t, str) for t in ts) for ts in tokens
    ):
        raise ValueError(f"{name} must be a list of strings or {n} lists of strings (one per example)")
    return [list(ts) for ts in tokens]


def _check_example(k: int, w: torch.Tensor, rows: list[str], cols: list[str], lead: tuple[int, ...], n: int) -> None:
    """Example ``k`` has ``n`` axes of sizes ``lead``, one row per query token and one column per key token."""
    where = f"weights[{k}] (shape {tuple(w.shape)})"
    if w.ndim != 2 + n:
        raise ValueError(f"{where} must have {2 + n} dimensions: one per axis in axes, then (Tq, Tk)")
    if tuple(w.shape[:-2]) != lead:
        raise ValueError(f"{where} has axis sizes {tuple(w.shape[:-2])}, but the first example has {lead}")
    if w.numel() == 0:
        raise ValueError(f"{where} is empty: every axis and (Tq, Tk) must have size >= 1")
    if w.shape[-2] != len(rows) or w.shape[-1] != len(cols):
        raise ValueError(
            f"{where}: query_tokens has {len(rows)} and key_tokens {len(cols)} tokens (key_tokens defaults to "
            f"query_tokens), which do not match (Tq, Tk) = {tuple(w.shape[-2:])}"
        )
    if w.is_complex() or not torch.isfinite(w.double()).all() or w.double().abs().max() > MAX_WEIGHT:
        raise ValueError(f"{where} has complex, non-finite or huge (> {MAX_WEIGHT:g}) values")


def _check_rows(k: int, w: torch.Tensor) -> None:
    """Every row of example ``k`` sums to 1 (or 0: nothing to attend to) and has no negative weight."""
    sums = w.double().sum(-1)
    good = ((sums - 1).abs() <= 1e-3) | (sums.abs() <= 1e-3)
    if bool((w < 0).any()) or not bool(good.all()):
        raise ValueError(
            f"weights[{k}] (shape {tuple(w.shape)}) has rows that are not distributions (row sums from "
            f"{float(sums.min()):.4g} to {float(sums.max()):.4g}, smallest weight {float(w.min()):.4g}); pass "
            "distributions=False for matrices that are not attention weights"
        )


def _axes_data(axes: object, ticks: Mapping[str, Sequence[str]] | None, lead: tuple[int, ...]) -> list[dict]:
    """Name and tick labels of each selector axis (default ticks 1, 2, ...)."""
    ticks = dict(ticks or {})
    unknown = set(ticks) - set(axes)
    if unknown:
        raise ValueError(f"ticks names {sorted(unknown)}, which are not in axes {list(axes)}")
    data = []
    for axis, n in zip(axes, lead, strict=True):
        labels = [str(t) for t in ticks.get(axis, range(1, n + 1))]
        if len(labels) != n:
            raise ValueError(f"ticks[{axis!r}] has {len(labels)} labels, but the {axis} axis has size {n}")
        data.append({"name": axis, "ticks": labels})
    return data


def _check_axes(axes: object) -> list[str]:
    if isinstance(axes, str) or not isinstance(axes, Sequence):
        raise ValueError(f"axes must be a list of names, e.g. ('layer', 'head'), got {axes!r}")
    if any(not isinstance(a, str) for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"axes must be distinct names, got {list(axes)}")
    return list(axes)


def _check_labels(examples: object, n: int, names: object, vmax: object) -> None:
    """The example names (one per tensor), the two axis names and vmax (a positive number or None)."""
    if isinstance(examples, str) or not isinstance(examples, Sequence) or len(examples) != n:
        raise ValueError(f"examples must be {n} names (one per weights tensor), got {examples!r}")
    if not all(isinstance(e, str) for e in examples):
        raise ValueError(f"examples must be {n} names (one per weights tensor), got {examples!r}")
    if not isinstance(names, (tuple, list)) or len(names) != 2 or not all(isinstance(x, str) for x in names):
        raise ValueError(f"names must be two strings (rows, columns), got {names!r}")
    if vmax is not None and (isinstance(vmax, bool) or not isinstance(vmax, Real) or not 0 < vmax < math.inf):
        raise ValueError(f"vmax must be a positive number or None, got {vmax!r}")


def _fragment(data: dict) -> str:
    """The HTML: style, the data as JSON inside a container, the renderer."""
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    # Inside <script> only "</" could end the element early: escape <, > and & as JSON unicode escapes.
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    view_id = "attn-viewer-" + hashlib.sha256(payload.encode()).hexdigest()[:16]
    return (
        f"{_STYLE}<div class='attn-viewer' id='{view_id}'>"
        f"<script type='application/json' class='av-data'>{payload}</script>"
        f"<em class='av-fallback'>{_FALLBACK}</em></div>" + _SCRIPT % {"id": view_id, "stops": json.dumps(VIRIDIS)}
    )


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
    tensors = [w.detach().cpu() for w in _as_examples(weights)]
    rows = _as_token_lists("query_tokens", query_tokens, len(tensors))
    cols = rows if key_tokens is None else _as_token_lists("key_tokens", key_tokens, len(tensors))
    axes = _check_axes(axes)
    lead = tuple(tensors[0].shape[: len(axes)])
    for k, (w, r, c) in enumerate(zip(tensors, rows, cols, strict=True)):
        _check_example(k, w, r, c, lead, len(axes))
    if examples is None:
        examples = [" ".join(r) for r in rows] if len(tensors) > 1 else [""]
    _check_labels(examples, len(tensors), names, vmax)
    if not isinstance(distributions, bool):
        raise ValueError(f"distributions must be True or False, got {distributions!r}")
    if distributions:
        for k, w in enumerate(tensors):
            _check_rows(k, w)
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
