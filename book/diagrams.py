"""The figures drawn from data, in code, as small hand-built SVG files: the masks of a causal and a masked language
model (``bert_vs_gpt``), a soft lookup's weights at three temperatures (``soft_lookup``), the sinusoidal position
waves (``positions``) and the tiles a causal FlashAttention computes (``tiles``).

Every function returns the SVG text of one figure, the same bytes on every run: no matplotlib, no fonts,
images or links from outside, nothing downloaded. ``python book/diagrams.py notebooks/figures`` writes the
committed copies the chapters show. The box-and-arrow schematics (one per mechanism) are SVG files kept in
``notebooks/figures`` and edited as files; ``tests/test_diagrams.py`` checks every figure's labels against the names
the code uses (``W_a``, ``E[k]``, ``W_q``, ``norm1``, shapes such as ``(B, H, T, d_k)``).
"""

from __future__ import annotations

import argparse
import math
import numbers
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

__all__ = ["FIGURES", "bert_vs_gpt", "soft_lookup", "positions", "tiles"]

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
INK = "#1a1a1a"  # text and arrows: 17:1 on white
MUTED = "#4d4d4d"  # secondary text: 8.5:1 on white
# (fill, stroke) of a box by its role; every stroke is at least 4.5:1 on white, every fill is light enough for INK
ROLES = {
    "data": ("#eef1f5", "#3d4a57"),  # inputs, outputs, tensors
    "param": ("#fdf0de", "#8a4600"),  # learned weights and embedding tables
    "attend": ("#e4eefb", "#1d4f91"),  # scores, softmax, weighted sums
    "state": ("#e5f3e7", "#1e6530"),  # recurrent states, controller
    "norm": ("#f2eaf8", "#5b2d86"),  # add & norm, feed-forward
}
ACCENT = "#1d4f91"  # filled mask cells and weight bars (white text on it: 8:1)
Line = str | tuple[str, float]  # a line of text, optionally with its font size


# ---------------------------------------------------------------------------------------------------- vocabulary


def _n(value: float) -> str:
    """A number with at most one decimal and no trailing zeros (fixed formatting keeps the output byte-stable)."""
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _tag(name: str, body: str | None = None, **attrs: object) -> str:
    """One element; attribute names lose a trailing ``_`` and turn ``_`` into ``-`` (``class_``, ``font_size``)."""
    parts = [name]
    for key, value in attrs.items():
        if value is None:
            continue
        text = _n(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else str(value)
        parts.append(f"{key.rstrip('_').replace('_', '-')}={quoteattr(text)}")
    head = " ".join(parts)
    return f"<{head}/>" if body is None else f"<{head}>{body}</{name}>"


_MARKUP = re.compile(r"([_^])\{([^}]*)\}")


def _rich(text: str, size: float) -> str:
    """Escaped text in which ``_{x}`` and ``^{x}`` (for letters Unicode has no sub/superscript of) are shifted."""
    out, pos, offset = [], 0, 0
    text = text.replace("  ", "\u2002")  # SVG collapses runs of spaces: a wider gap is one en space
    small = max(11, round(size * 0.78))
    for match in _MARKUP.finditer(text):
        plain = text[pos : match.start()]
        if plain:
            out.append(_tag("tspan", escape(plain), dy=-offset) if offset else escape(plain))
            offset = 0
        target = round(size * 0.3) if match.group(1) == "_" else -round(size * 0.4)
        out.append(_tag("tspan", escape(match.group(2)), dy=target - offset, font_size=small))
        offset, pos = target, match.end()
    rest = text[pos:]
    if rest:
        out.append(_tag("tspan", escape(rest), dy=-offset) if offset else escape(rest))
    return "".join(out)


def _text(x: float, y: float, text: str, size: float = 13, anchor: str = "middle", **attrs: object) -> str:
    """A label whose baseline is at ``y``."""
    anchor_attr = None if anchor == "start" else anchor
    return _tag("text", _rich(text, size), x=x, y=y, font_size=size, text_anchor=anchor_attr, **attrs)


def _lines(cx: float, cy: float, lines: Sequence[Line], size: float = 13, **attrs: object) -> str:
    """Lines of text centred as a block on ``(cx, cy)``; a line may carry its own size."""
    specs = [(line, size) if isinstance(line, str) else line for line in lines]
    gap = [1.3 * s for _, s in specs]
    top = cy - sum(gap) / 2
    out = []
    for (line, s), g in zip(specs, gap, strict=True):
        out.append(_text(cx, top + g / 2 + 0.36 * s, line, s, **attrs))
        top += g
    return "".join(out)


def _box(x: float, y: float, w: float, h: float, lines: Sequence[Line], role: str, size: float = 13) -> str:
    """A rounded box, filled and outlined by its ``role`` (see ROLES), with centred lines of text."""
    fill, stroke = ROLES[role]
    rect = _tag("rect", x=x, y=y, width=w, height=h, rx=5, fill=fill, stroke=stroke, stroke_width=1.5)
    return rect + _lines(x + w / 2, y + h / 2, lines, size)


def _frame(x: float, y: float, w: float, h: float, *label: str) -> str:
    """A dashed group frame with a label (one or more lines) in its top left corner."""
    rect = _tag(
        "rect", x=x, y=y, width=w, height=h, rx=8, fill="none", stroke=MUTED, stroke_width=1.2, stroke_dasharray="6 4"
    )
    lines = [
        _text(x + 8, y + 16 + 14 * k, line, 12, "start", fill=MUTED, font_weight="bold") for k, line in enumerate(label)
    ]
    return rect + "".join(lines)


def _arrow(*points: tuple[float, float], width: float = 1.5, head: bool = True, dash: bool = False) -> str:
    """A polyline through ``points`` with an arrowhead at the last one (``head=False``: a plain line; ``dash``:
    dashed, for a step that passes no gradient)."""
    path = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
    end = "url(#arrow)" if head else None
    pattern = "6 4" if dash else None
    return _tag(
        "polyline", points=path, fill="none", stroke=INK, stroke_width=width, stroke_dasharray=pattern, marker_end=end
    )


def _node(cx: float, cy: float, symbol: str, r: float = 12) -> str:
    """A small circle with a symbol in it (⊕ for a sum)."""
    return _tag("circle", cx=cx, cy=cy, r=r, fill="#ffffff", stroke=INK, stroke_width=1.5) + _text(
        cx, cy + 6, symbol, 17
    )


def _cell(x: float, y: float, size: float, **style: object) -> str:
    """A square with its top left corner at ``(x, y)``."""
    return _tag("rect", x=x, y=y, width=size, height=size, **style)


def _grid(x: float, y: float, cells: Sequence[Sequence[bool]], size: float, name: str) -> str:
    """A boolean mask as squares: True filled and written 1, False white and written 0 (not colour alone)."""
    out = []
    for i, row in enumerate(cells):
        for j, on in enumerate(row):
            cx, cy = x + j * size, y + i * size
            out.append(_cell(cx, cy, size, fill=ACCENT if on else "#ffffff", stroke=MUTED, stroke_width=1))
            out.append(_text(cx + size / 2, cy + size / 2 + 5, "1" if on else "0", 14, fill="#ffffff" if on else MUTED))
    return _tag("g", "".join(out), id=name)


def _small(*lines: str) -> list[Line]:
    """Lines in 12 px, the size of a box's second and later lines."""
    return [(line, 12) for line in lines]


def _note(x: float, y: float, lines: Sequence[str]) -> str:
    """A note in 12 px muted text, left-aligned at ``x``, centred as a block on ``y``."""
    return _lines(x, y, _small(*lines), anchor="start", fill=MUTED)


def _svg(name: str, width: int, height: int, title: str, desc: str, body: Sequence[str]) -> str:
    """The root element: an accessible image (title and description) with the shared arrowhead."""
    marker = _tag(
        "marker",
        _tag("path", d="M0,1 L10,5 L0,9 z", fill=INK),
        id="arrow",
        viewBox="0 0 10 10",
        refX=9,
        refY=5,
        markerWidth=9,
        markerHeight=9,
        markerUnits="userSpaceOnUse",
        orient="auto-start-reverse",
    )
    content = "\n".join(
        [
            _tag("title", escape(title), id=f"{name}-title"),
            _tag("desc", escape(desc), id=f"{name}-desc"),
            _tag("defs", marker),
            _tag("rect", width=width, height=height, fill="#ffffff"),
            *body,
        ]
    )
    root = _tag(
        "svg",
        f"\n{content}\n",
        xmlns="http://www.w3.org/2000/svg",
        role="img",
        aria_labelledby=f"{name}-title {name}-desc",
        viewBox=f"0 0 {width} {height}",
        width=width,
        height=height,
        font_family=FONT,
    )
    return root + "\n"


# ---------------------------------------------------------------------------------------------------- figures

_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


_GPT = (("the", "dog"), ("dog", "saw"), ("saw", "a"), ("a", "cat"), ("cat", "."))  # (input token, target)
_BERT = (("the", ""), ("[MASK]", "dog"), ("saw", ""), ("a", ""), ("[MASK]", "cat"))  # "" = not scored
_CELL = 40


def _mask_panel(x0: float, which: str, rows: Sequence[tuple[str, str]], causal: bool) -> list[str]:
    """One language model's (T, T) mask with the tokens as rows and columns and the targets on the right."""
    gx, gy, T = x0 + 70, 100, len(rows)
    title = f"{which}: LanguageModel(causal={causal})"
    mask = [[j <= i or not causal for j in range(T)] for i in range(T)]
    out = [
        _text(gx + T * _CELL / 2, 26, title, 15, font_weight="bold"),
        _text(
            gx + T * _CELL / 2, 46, "mask = padding ∧ causal_mask(T)" if causal else "mask = padding only: all True", 13
        ),
        _text(gx + T * _CELL / 2, 70, "key j →", 12, fill=MUTED),
        _text(gx - 8, 70, "query i ↓", 12, "end", fill=MUTED),
        _text(gx + T * _CELL + 8, 92, "predicts", 12, "start", fill=MUTED),
        _grid(gx, gy, mask, _CELL, f"bert_vs_gpt-{which.lower()}-mask"),
    ]
    for k, (token, target) in enumerate(rows):
        cy = gy + k * _CELL + _CELL / 2
        out += [_text(gx + k * _CELL + _CELL / 2, 92, token, 12), _text(gx - 8, cy + 5, token, 13, "end")]
        label, fill = (f"→ {target}", INK) if target else ("–", MUTED)
        out.append(_text(gx + T * _CELL + 8, cy + 5, label, 13, "start", fill=fill))
    return out


def bert_vs_gpt() -> str:
    """GPT's causal mask beside BERT's full mask, each with what it is trained to predict (chapter 10)."""
    legend_y = 388
    out = [
        *_mask_panel(8, "GPT", _GPT, True),
        _lines(178, 340, ["objective: the next token at every", "position (output i predicts token i + 1)"], 13),
        *_mask_panel(372, "BERT", _BERT, False),
        _lines(542, 340, ["objective: only the [MASK] positions", "(15 % of the words are chosen)"], 13),
        _grid(200, legend_y - 11, [[True]], 22, "bert_vs_gpt-legend-true"),
        _text(230, legend_y + 5, "= may attend (True)", 13, "start"),
        _grid(420, legend_y - 11, [[False]], 22, "bert_vs_gpt-legend-false"),
        _text(450, legend_y + 5, "= masked out (False)", 13, "start"),
    ]
    desc = (
        "Two 5 by 5 attention masks, rows are queries and columns keys. GPT's causal mask lets position i attend to "
        "positions j up to i (the lower triangle), and every position is trained to predict the next token. BERT's "
        "mask allows every pair; some input words are replaced by [MASK], and only those positions are predicted."
    )
    return _svg("bert_vs_gpt", 720, 412, "Attention masks of GPT (causal) and BERT (full)", desc, out)


# ---------------------------------------------------------------------------------------------------- chapter 1

_SCORES = (1.0, 2.5, 2.0, 0.0)  # the example scores q·kᵢ of four keys
_TEMPERATURES = (0.25, 1.0, 4.0)  # the soft lookup at three temperatures τ
_PITCH, _BAR = 33, 22  # a weight bar's spacing and width


def _softmax(scores: Sequence[float], temperature: float = 1.0) -> list[float]:
    """``softmax(scores / τ)`` in plain Python: the numbers drawn (``attn.softmax`` gives the same, tested)."""
    top = max(scores)
    exps = [math.exp((s - top) / temperature) for s in scores]
    return [e / sum(exps) for e in exps]


def _bars(x: float, base: float, weights: Sequence[float], name: str, height: float = 64) -> str:
    """Weights as bars standing on a baseline at ``base``, each written above its bar, its key's index below."""
    out = [_tag("line", x1=x - 5, y1=base, x2=x + (len(weights) - 1) * _PITCH + _BAR + 5, y2=base, stroke=MUTED)]
    for i, w in enumerate(weights):
        bx, h = x + i * _PITCH, height * w
        if h >= 0.5:
            out.append(_tag("rect", x=bx, y=base - h, width=_BAR, height=h, fill=ACCENT))
        out += [
            _text(bx + _BAR / 2, base - h - 5, _n(w) if w in (0, 1) else f"{w:.2f}", 12),
            _text(bx + _BAR / 2, base + 15, str(i + 1), 12, fill=MUTED),
        ]
    return _tag("g", "".join(out), id=name)


_LOOKUP_NOTE = (
    "attend(scores, value) returns (output, weights). As τ → 0 the softmax becomes the argmax,",
    "as τ → ∞ the plain average; scaled_dot_product_attention uses τ = √d_k.",
)


def soft_lookup() -> str:
    """Hard and soft lookup: one query's scores against every key, argmax or softmax at a temperature (chapter 1)."""
    hard = [1.0 if s == max(_SCORES) else 0.0 for s in _SCORES]
    best = hard.index(1.0) + 1
    scores = ["scores = dot_product_scores(query, key)", (f"sᵢ = q·kᵢ  →  ({', '.join(map(str, _SCORES))})", 12)]
    softmax = ["weights = softmax(scores, temperature=τ)", ("pᵢ = exp(sᵢ/τ) / Σⱼ exp(sⱼ/τ): they sum to 1", 12)]
    out = [
        _box(60, 14, 170, 48, ["query q", ("(d_k,)", 12)], "data", 14),
        _box(330, 14, 210, 48, ["keys K", ("(Tk, d_k): rows k₁ … k₄", 12)], "data", 14),
        _arrow((145, 62), (250, 94)),
        _arrow((435, 62), (400, 94)),
        _box(130, 96, 420, 50, scores, "attend"),
        _frame(14, 176, 208, 230, "hard lookup"),
        _arrow((180, 146), (180, 206)),
        _box(34, 208, 168, 44, ["argmax over i", ("one-hot weights", 12)], "attend"),
        _bars(58, 346, hard, "soft_lookup-hard"),
        _text(118, 392, "gradient 0 almost everywhere", 12, fill=MUTED),
        _frame(238, 176, 428, 230, "soft lookup: attention"),
        _arrow((452, 146), (452, 206)),
        _box(258, 208, 388, 44, softmax, "attend"),
    ]
    for k, tau in enumerate(_TEMPERATURES):
        x = 262 + k * 138
        out += [
            _bars(x, 346, _softmax(_SCORES, tau), f"soft_lookup-tau-{tau:g}"),
            _text(x + 60, 392, f"τ = {tau:g}", 13),
        ]
    out += [
        _arrow((118, 406), (118, 434)),
        _box(24, 436, 188, 48, [f"output = v{str(best).translate(_SUB)}", ("one row of V", 12)], "state"),
        _box(252, 436, 150, 48, ["values V", ("(Tk, d_v)", 12)], "data"),
        _arrow((252, 460), (214, 460)),
        _arrow((402, 460), (440, 460)),
        _arrow((452, 406), (452, 434)),
        _box(442, 436, 224, 48, ["output = weights @ V", ("= Σᵢ pᵢ vᵢ  (d_v,)", 12)], "state"),
        _lines(340, 518, _small(*_LOOKUP_NOTE), fill=MUTED),
    ]
    desc = (
        "A query q is compared with every key, the rows of K, giving one score per key. A hard lookup, like a "
        "Python dict, takes the argmax: one-hot weights that return a single value. Attention takes "
        "softmax(scores / τ): weights that sum to 1, near one-hot at a low temperature τ and flatter at a high one, "
        "and returns their blend of the values, weights @ V."
    )
    return _svg("soft_lookup", 680, 546, "Hard and soft lookup: argmax or softmax over the scores", desc, out)


# ---------------------------------------------------------------------------------------------------- chapter 4


# ---------------------------------------------------------------------------------------------------- chapter 9


# ---------------------------------------------------------------------------------------------------- chapter 7

_WAVES = ((0, "sin"), (1, "cos"), (4, "sin"), (5, "cos"))  # columns of a sinusoidal table drawn, d_model = 16


def _chips(x: float, y: float, words: Sequence[str]) -> tuple[list[str], float]:
    """Words as small boxes in a row from ``x`` -> (the boxes, the right edge of the last one)."""
    out = []
    for word in words:
        width = 16 + 7.5 * len(word)
        out.append(_box(x, y, width, 26, [word], "data"))
        x += width + 6
    return out, x - 6


def _wave(x: float, y: float, column: int, d_model: int = 16, length: int = 40, scale: float = 5.75) -> str:
    """Column ``column`` of the sinusoidal table for positions 0..length, as a curve around the line ``y``."""
    i, trig = column // 2, (math.sin if column % 2 == 0 else math.cos)
    points = [
        (x + p * scale, y - 9 * trig(p / 10000 ** (2 * i / d_model))) for p in (k / 2 for k in range(2 * length + 1))
    ]
    path = "M" + " L".join(f"{_n(px)} {_n(py)}" for px, py in points)
    axis = _tag("line", x1=x, y1=y, x2=x + length * scale, y2=y, stroke="#c3cad2", stroke_width=1)
    return axis + _tag("path", d=path, fill="none", stroke=ACCENT, stroke_width=1.6)


def _noise_table(x: float, y: float, rows: int = 8, cols: int = 16, size: float = 12) -> str:
    """A learned table's rows at initialisation: cells shaded by a fixed pseudo-random sequence."""
    levels: list[list[str]] = [[] for _ in range(5)]  # five shades, one path each
    seed = 7
    for r in range(rows):
        for c in range(cols):
            seed = (1103515245 * seed + 12345) % 2**31
            levels[(seed >> 16) * 5 // 2**15].append(
                f"M{_n(x + c * size)} {_n(y + r * size)}h{_n(size)}v{_n(size)}h-{_n(size)}z"
            )
    out = [
        _tag("path", d="".join(cells), fill=ACCENT, fill_opacity=_n(0.15 + 0.18 * k)) for k, cells in enumerate(levels)
    ]
    rules = "".join(f"M{_n(x)} {_n(y + r * size)}h{_n(cols * size)}" for r in range(1, rows))
    out += [_tag("path", d=rules, stroke="#ffffff", stroke_width=1)]
    out.append(_tag("rect", x=x, y=y, width=cols * size, height=rows * size, fill="none", stroke=MUTED))
    return "".join(out)


def positions() -> str:
    """How positions enter a Transformer: scaled embeddings plus a sinusoidal or learned table (chapter 7)."""
    first, end_a = _chips(14, 42, ("the", "dog", "bites", "the", "man"))
    second, end_b = _chips(14, 80, ("the", "man", "bites", "the", "dog"))
    out = [
        _text(14, 28, "Without positions, self-attention reads a bag of words:", 13, "start", font_weight="bold"),
        *first,
        *second,
        _arrow((end_a, 55), (398, 62)),
        _arrow((end_b, 93), (398, 86)),
        _box(
            400,
            48,
            266,
            52,
            ["the same bag", *_small("{bites, dog, man, the, the}: each word", "gets the same output in both")],
            "attend",
        ),
        _box(14, 146, 112, 44, ["token ids", ("(B, T)", 12)], "data"),
        _arrow((126, 168), (148, 168)),
        _box(150, 142, 166, 52, ["tokens: nn.Embedding", ("rows E[w]: (B, T, d_model)", 12)], "param"),
        _arrow((316, 168), (338, 168)),
        _box(340, 150, 92, 36, ["× √d_model"], "data"),
        _arrow((432, 168), (452, 168)),
        _node(466, 168, "+"),
        _arrow((480, 168), (502, 168)),
        _box(504, 146, 162, 44, ["x  (B, T, d_model)", ("then dropout, the layers", 12)], "data"),
        _box(376, 214, 180, 46, ["positions(x, start)", ("+ table[start : start + T]", 12)], "param"),
        _arrow((466, 214), (466, 182)),
        _frame(14, 292, 318, 282, "SinusoidalPositions: fixed"),
        _arrow((173, 292), (173, 237), (374, 237)),
        _text(270, 230, 'positions="sinusoidal"', 12),
        _frame(348, 292, 318, 282, "LearnedPositions: trained"),
        _arrow((466, 292), (466, 262)),
        _text(474, 282, '"learned"', 12, "start"),
        _text(30, 332, "PE(pos, 2i) = sin(pos / ωᵢ)", 13, "start"),
        _text(30, 352, "PE(pos, 2i+1) = cos(pos / ωᵢ)", 13, "start"),
        _text(30, 374, "ωᵢ = 10000^{2i / d_model}", 15, "start"),
        _text(30, 400, "columns 0, 1, 4, 5 of a d_model = 16 table", 12, "start", fill=MUTED),
    ]
    for k, (column, trig) in enumerate(_WAVES):
        y = 424 + 28 * k
        out += [_text(30, y + 4, f"{column}: {trig}", 12, "start", fill=MUTED), _wave(90, y, column)]
    out += [
        _text(90, 536, "pos 0 … 40 →", 12, "start", fill=MUTED),
        _text(30, 560, "table = sinusoidal_positions(max_len, d_model)", 12, "start"),
        _text(364, 332, "table = nn.Parameter (max_len, d_model)", 12, "start"),
        _text(364, 350, "starts as N(0, 0.5²) noise and is trained;", 12, "start"),
        _text(364, 368, "a row no training sequence reaches stays noise", 12, "start"),
        _text(410, 392, "d_model →", 12, "start", fill=MUTED),
        _text(402, 412, "pos ↓", 12, "end", fill=MUTED),
        _noise_table(410, 400),
        _text(410, 516, "row pos: the vector for position pos", 12, "start"),
        _text(364, 560, "as in BERT and GPT (Gehring et al. 2017)", 12, "start"),
        _text(
            340,
            598,
            'Both refuse T > max_len (a ValueError): no row for such a position. positions="none" adds nothing.',
            12,
            fill=MUTED,
        ),
    ]
    desc = (
        "Without positions, self-attention treats 'the dog bites the man' and 'the man bites the dog' as the same bag "
        "of words. The token ids' embedding rows E[w] are scaled by √d_model and a positional table's rows are "
        "added, giving x of shape (B, T, d_model). The table is either sinusoidal and fixed, PE(pos, 2i) = "
        "sin(pos / 10000^(2i/d_model)) and PE(pos, 2i+1) = cos(...), pairs of ever lower frequency, or a learned "
        "parameter of max_len rows; both refuse sequences longer than max_len."
    )
    return _svg("positions", 680, 612, "Positions: token embeddings plus a sinusoidal or learned table", desc, out)


# ---------------------------------------------------------------------------------------------------- chapter 11


# ---------------------------------------------------------------------------------------------------- registry


def tiles() -> str:
    """Exact attention in tiles (chapter 12): the outer loop over query blocks, the inner one over key blocks, one
    score tile at a time, and the running state the online softmax keeps per query."""
    x0, y0, w, h, cols, rows = 128, 74, 50, 40, 5, 4  # the grid of score tiles: block_k wide, block_q high
    body = [_text(x0 + cols * w / 2, 40, "key, value: block_k at a time", 13, font_weight="bold")]
    body.append(_arrow((x0, 52), (x0 + cols * w, 52)))
    for i in range(rows):
        for j in range(cols):
            if i == 1 and j == 2:  # the tile being read now
                style = {"fill": ACCENT, "stroke": INK, "stroke_width": 2}
            elif i < 1 or (i == 1 and j < 2):  # read already
                style = {"fill": ROLES["attend"][0], "stroke": MUTED, "stroke_width": 1}
            else:
                style = {"fill": "#ffffff", "stroke": MUTED, "stroke_width": 1}
            body.append(_tag("rect", x=x0 + j * w, y=y0 + i * h, width=w, height=h, **style))
    body.append(_text(x0 + 2.5 * w, y0 + 1.5 * h + 5, "S", 15, fill="#ffffff", font_weight="bold"))
    body.append(_lines(60, y0 + rows * h / 2, ["query:", "block_q", "at a time"], 13))
    body.append(_arrow((104, y0), (104, y0 + rows * h)))
    body.append(_note(24, y0 + rows * h + 22, ["shaded: tiles already summed up in m, ℓ, o"]))
    body.append(_note(24, y0 + rows * h + 40, ["now: one (block_q, block_k) tile S = Q_i K_jᵀ · scale"]))
    body.append(_note(24, y0 + rows * h + 58, ["never more scores than one tile, whatever T is"]))
    bx, by, bw, bh = 406, 66, 262, 128
    body.append(_box(bx, by, bw, bh, [
        "online_softmax_update", *_small(
            "m′ = max(m, rowmax S)", "ℓ′ = exp(m − m′) ℓ + Σ exp(S − m′)", "o′ = exp(m − m′) o + exp(S − m′) V_j",
            "kept per query: m, ℓ and o"),
    ], "state"))  # fmt: skip
    body.append(_arrow((x0 + 3 * w, y0 + 1.5 * h), (bx, y0 + 1.5 * h)))
    body.append(_arrow((bx + bw / 2, by + bh), (bx + bw / 2, 236)))
    body.append(_box(bx, 236, bw, 46, ["output = o / ℓ", *_small("after the last key block")], "data"))
    body.append(_note(bx, 306, ["kept for the backward pass:", "L = m + log ℓ, one number per query"]))
    desc = (
        "The scores Q Kᵀ of tiled_attention drawn as a grid of tiles: key blocks of block_k columns read left to "
        "right in the inner loop, query blocks of block_q rows top to bottom in the outer loop. One tile S is "
        "computed at a time and passed to online_softmax_update, which keeps per query the running maximum m, the "
        "running sum ℓ and the unnormalised output o, rescaling them by e to the m minus m prime when a larger score "
        "arrives; after the last key block the output is o divided by ℓ, and only L = m + log ℓ is kept for the "
        "backward pass."
    )
    return _svg("tiles", 680, 340, "Exact attention in tiles with the online softmax", desc, body)


FIGURES: dict[str, Callable[[], str]] = {
    "bert_vs_gpt": bert_vs_gpt,
    "soft_lookup": soft_lookup,
    "positions": positions,
    "tiles": tiles,
}


# ---------------------------------------------------------------------------------------------------- command line


def write_all(outdir: Path, force: bool = False) -> tuple[list[Path], list[Path]]:
    """Write each figure to ``outdir/<name>.svg`` -> (written, conflicts); a conflict without ``force``: no writes."""
    outdir.mkdir(parents=True, exist_ok=True)
    pending = {outdir / f"{name}.svg": draw().encode("utf-8") for name, draw in FIGURES.items()}
    stale = {path: data for path, data in pending.items() if not path.is_file() or path.read_bytes() != data}
    conflicts = [path for path in stale if path.exists()]
    if conflicts and not force:
        return [], conflicts
    for path, data in stale.items():
        path.write_bytes(data)
    return list(stale), conflicts


def main(argv: Sequence[str] | None = None) -> int:
    """``python book/diagrams.py OUTDIR [--force]``; returns the exit status (1: a differing file was kept)."""
    parser = argparse.ArgumentParser(
        prog="python book/diagrams.py",
        description="Write the book's architecture schematics (one SVG file per figure) into OUTDIR.",
    )
    parser.add_argument("outdir", type=Path, metavar="OUTDIR", help="folder for the .svg files, e.g. notebooks/figures")
    parser.add_argument("--force", action="store_true", help="overwrite files whose content differs")
    args = parser.parse_args(argv)
    if args.outdir.exists() and not args.outdir.is_dir():
        parser.error(f"{args.outdir} is not a folder")
    written, conflicts = write_all(args.outdir, args.force)
    if conflicts and not args.force:
        names = ", ".join(str(p) for p in conflicts)
        print(f"error: {names}: not what the generator draws now; rerun with --force to overwrite", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    unchanged = len(FIGURES) - len(written)
    if unchanged:
        print(f"{unchanged} file(s) already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
