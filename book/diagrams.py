"""Architecture schematics, one per mechanism, drawn in code as small hand-built SVG files.

Every function returns the SVG text of one figure, the same bytes on every run: no matplotlib, no fonts,
images or links from outside, nothing downloaded. The labels use the names the code uses (``W_a``, ``E[k]``,
``W_q``, ``norm1``, shapes such as ``(B, H, T, d_k)``), and ``tests/test_diagrams.py`` checks them against the
modules. ``python book/diagrams.py notebooks/figures`` writes the committed copies the chapters show.
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

__all__ = [
    "FIGURES",
    "bahdanau",
    "memory_hops",
    "soft_dictionary",
    "multi_head",
    "transformer",
    "bert_vs_gpt",
    "soft_lookup",
    "ntm",
    "dnc_step",
    "glimpse_loop",
    "vit",
    "positions",
    "bert_mapping",
    "tiles",
    "explain",
]

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


def _dot(cx: float, cy: float) -> str:
    """A junction where a line branches."""
    return _tag("circle", cx=cx, cy=cy, r=3, fill=INK)


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


def _slab(x: float, y: float, w: float, h: float, parts: int, rows: int = 4, gap: float = 0) -> str:
    """A tensor drawn as ``rows`` × features, cut into ``parts`` numbered column blocks (the heads)."""
    width = (w - gap * (parts - 1)) / parts
    fills = ("#e4eefb", "#fdf0de")
    out, rules = [], []
    for p in range(parts):
        px = x + p * (width + gap)
        out.append(
            _tag(
                "rect", x=px, y=y, width=width, height=h, fill=fills[p % 2], stroke=ROLES["attend"][1], stroke_width=1.2
            )
        )
        rules += [f"M{_n(px)} {_n(y + r * h / rows)}h{_n(width)}" for r in range(1, rows)]
    numbers = [
        _text(
            x + p * (width + gap) + width / 2,
            y + h / 2 + 5,
            str(p + 1),
            13,
            font_weight="bold",
            stroke="#ffffff",
            stroke_width=3,
            paint_order="stroke",
        )
        for p in range(parts)
    ]
    return "".join(out) + _tag("path", d="".join(rules), stroke="#8795a3", stroke_width=0.8) + "".join(numbers)


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
_SOURCE = ((185, "1"), (275, "2"), (365, "3"), (495, "_{S}"))  # encoder columns: x, and j as a subscript
_DOTS = 430  # the x of the "⋯" between column 3 and column S


def _bahdanau_encoder() -> list[str]:
    """Source words, both GRU directions in one box per word, and the annotations h_j."""
    out = [
        _lines(80, 470, ["encoder", ("nn.GRU,", 12), ("bidirectional", 12)]),
        _lines(80, 386, ["annotations", ("(B, S, D)", 12)]),
        _text(80, 545, "source words", 12, fill=MUTED),
    ]
    for cx, j in _SOURCE:
        j = j.translate(_SUB)
        out += [
            _text(cx, 545, f"x{j}", 15),
            _arrow((cx, 528), (cx, 502)),
            _box(cx - 32, 440, 64, 60, [], "state"),
            _tag("line", x1=cx - 32, y1=470, x2=cx + 32, y2=470, stroke=ROLES["state"][1], stroke_width=1),
            _text(cx, 461, f"→h{j}", 14),
            _text(cx, 491, f"←h{j}", 14),
            _arrow((cx, 440), (cx, 404)),
            _box(cx - 32, 370, 64, 32, [f"h{j}"], "state", 15),
            _arrow((cx, 370), (cx, 328)),
        ]
    for left, right in ((217, 243), (307, 333), (397, _DOTS - 12), (_DOTS + 12, 463)):
        out += [_arrow((left, 455), (right, 455)), _arrow((right, 485), (left, 485))]
    out += [_text(_DOTS, y, "⋯", 16) for y in (391, 460, 490, 545)]
    return out


def _bahdanau_attention() -> list[str]:
    """Additive scores of s_{i-1} against every h_j, their softmax, and the context c_i."""
    return [
        _box(
            145, 282, 400, 46, [("AdditiveAttention.score", 12), ("eᵢⱼ = v_aᵀ tanh(W_a sᵢ₋₁ + U_a hⱼ)", 15)], "attend"
        ),
        _arrow((345, 282), (345, 243)),
        _box(145, 205, 400, 38, ["αᵢⱼ = softmax over j of eᵢⱼ    (B, S)"], "attend", 15),
        _arrow((545, 224), (578, 224)),
        _box(580, 200, 125, 48, [("cᵢ = Σⱼ αᵢⱼ hⱼ", 15), ("context (B, D)", 12)], "attend"),
        _arrow((527, 386), (642, 386), (642, 250)),
        _text(585, 378, "values hⱼ", 12),
    ]


def _bahdanau_decoder() -> list[str]:
    """The previous state s_{i-1}, the GRU cell that reads c_i, and the output word y_i."""
    return [
        _text(20, 30, "decoder step i", 15, "start", font_weight="bold"),
        _lines(
            20,
            58,
            [("the same W_a, U_a, v_a at every step; the αᵢⱼ", 12), ("of all steps form the alignments (B, T, S)", 12)],
            anchor="start",
            fill=MUTED,
        ),
        _box(20, 108, 110, 46, [("sᵢ₋₁", 15), ("state (B, D)", 12)], "state"),
        _arrow((75, 154), (75, 305), (143, 305)),
        _text(85, 240, "query", 12, "start", fill=MUTED),
        _arrow((130, 122), (558, 122)),
        _text(345, 115, "previous state sᵢ₋₁", 12),
        _arrow((430, 143), (558, 143)),
        _text(425, 147, "previous word yᵢ₋₁", 12, "end"),
        _arrow((642, 200), (642, 160)),
        _text(650, 185, "cᵢ", 14, "start"),
        _box(560, 104, 145, 54, ["decoder", ("nn.GRUCell", 12), ("sᵢ = f(sᵢ₋₁, yᵢ₋₁, cᵢ)", 12)], "state"),
        _arrow((632, 104), (632, 70)),
        _text(640, 92, "sᵢ", 14, "start"),
        _box(560, 20, 110, 48, ["output", ("Linear, softmax", 12)], "param"),
        _arrow((670, 44), (692, 44)),
        _text(697, 49, "yᵢ", 15, "start"),
    ]


def bahdanau() -> str:
    """Bahdanau's encoder-decoder at decoder step i: additive attention over the annotations (chapter 2)."""
    desc = (
        "A bidirectional GRU reads the source words into annotations h_1 to h_S. At step i the decoder scores its "
        "previous state s_(i-1) against every annotation, e_ij = v_a^T tanh(W_a s_(i-1) + U_a h_j), turns the "
        "scores into weights alpha_ij with a softmax over j, and feeds the context c_i = sum_j alpha_ij h_j to "
        "its GRU cell, which produces the state s_i and the output word y_i."
    )
    body = _bahdanau_encoder() + _bahdanau_attention() + _bahdanau_decoder()
    return _svg("bahdanau", 720, 560, "Bahdanau attention in a GRU encoder-decoder", desc, body)


_SUP = str.maketrans("0123456789+", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺")
_HOPS = 3  # K, as in MemN2NConfig.hops
_BAND = 150  # height of one hop: a 124-high frame and a gap for the tying note


def _hop(k: int, y0: float, u_from: float) -> list[str]:
    """Hop k in the band from y0: the two tables, p = softmax(uᵀ m_i), o = Σ p_i c_i and u + o; u comes from below."""
    K, Kn = str(k).translate(_SUP), str(k + 1).translate(_SUP)
    yo, yp = y0 + 45, y0 + 100
    return [
        _frame(130, y0 + 2, 410, 124, f"hop {k}"),
        _box(150, yo - 18, 140, 36, [f"C{K} = E[{k}]"], "param"),
        _box(150, yp - 18, 140, 36, [f"A{K} = E[{k - 1}]"], "param"),
        _arrow((112, yo), (148, yo)),
        _arrow((112, yp), (148, yp)),
        _arrow((290, yo), (338, yo)),
        _text(314, yo - 6, "cᵢ", 14),
        _arrow((290, yp), (338, yp)),
        _text(314, yp - 6, "mᵢ", 14),
        _box(340, yo - 18, 180, 36, [f"o{K} = Σᵢ pᵢ cᵢ"], "attend", 14),
        _box(340, yp - 18, 180, 36, ["p = softmax(uᵀ mᵢ)"], "attend", 14),
        _arrow((430, yp - 18), (430, yo + 20)),
        _text(438, (yo + yp) / 2 + 5, "p  (B, M)", 12, "start"),
        _arrow((520, yo), (586, yo)),
        _node(600, yo, "⊕"),
        _arrow((600, u_from), (600, yo + 14)),
        _dot(600, yp),
        _arrow((600, yp), (522, yp)),
        _text(607, yp + 24, f"u{K}", 14, "start"),
        _text(618, yo + 5, f"u{Kn} = u{K} + o{K}", 13, "start"),
    ]


def _tie(x: float, y1: float, y2: float, text: str, baseline: float) -> str:
    """Two tables that are one (adjacent weight tying): a dashed double line, its equation at ``baseline``."""
    lines = "".join(
        _tag("line", x1=x + d, y1=y1, x2=x + d, y2=y2, stroke=INK, stroke_width=1.2, stroke_dasharray="4 3")
        for d in (-3, 3)
    )
    return lines + _text(x + 12, baseline, text, 12, "start")


def memory_hops() -> str:
    """End-to-end memory network, K = 3 hops with adjacent weight tying (chapter 3)."""
    top = 100
    bands = [top + (_HOPS - k) * _BAND for k in range(1, _HOPS + 1)]  # y0 of hop k; hop 1 at the bottom
    yq = bands[0] + _BAND + 20
    out = []
    for k, y0 in enumerate(bands, 1):
        out += _hop(k, y0, yq if k == 1 else y0 + _BAND + 45 - 13)
        if k > 1:
            K, Kp = str(k).translate(_SUP), str(k - 1).translate(_SUP)
            out.append(_tie(220, y0 + 118, y0 + _BAND + 27, f"A{K} = C{Kp}  (tied)", y0 + 143))
    out += [
        _box(20, top + 10, 92, (_HOPS - 1) * _BAND + 105, ["story", "x₁ … x_{M}", ("(B, M, J)", 12)], "data"),
        _box(20, yq - 22, 92, 44, ["question", ("(B, J)", 12)], "data"),
        _arrow((112, yq), (148, yq)),
        _box(150, yq - 18, 140, 36, ["B = E[0]"], "param"),
        _arrow((290, yq), (600, yq), head=False),
        _text(445, yq - 7, "u¹  (B, d)", 13),
        _tie(220, bands[0] + 118, yq - 18, "B = A¹  (tied)", bands[0] + 141),
        _box(
            150,
            20,
            370,
            48,
            ["â = softmax(W (oᴷ + uᴷ))", ("W = E[K].weight (V, d), i.e. Wᵀ = Cᴷ; logits (B, V)", 12)],
            "attend",
        ),
        _arrow((600, bands[-1] + 45 - 13), (600, 44), (522, 44)),
        _tie(220, 68, bands[-1] + 27, "Wᵀ = C³  (tied)", 89),
        _text(
            360,
            yq + 50,
            f"K = {_HOPS} hops: K + 1 tables E[0] … E[K] instead of 2K + 2. Each memory also adds",
            12,
            fill=MUTED,
        ),
        _text(360, yq + 66, "its temporal row T[k](time); padded slots get p = 0.", 12, fill=MUTED),
    ]
    desc = (
        "Three hops of an end-to-end memory network. Each hop embeds the story sentences x_i twice, as memories m_i "
        "(table A^k) and outputs c_i (table C^k), weighs the memories by p = softmax(u^T m_i), reads "
        "o = sum_i p_i c_i and updates the controller u^(k+1) = u^k + o^k; the question is embedded by B and the "
        "answer is softmax(W(o^K + u^K)). Neighbouring tables are one: B = A^1, A^(k+1) = C^k, W^T = C^K, stored "
        "as E[0] to E[K]."
    )
    return _svg("memory_hops", 720, yq + 80, "End-to-end memory network: hops and tied embeddings", desc, out)


_WEIGHTS = (0.08, 0.64, 0.2, 0.08)  # an example α over four keys (sums to 1)
_ROW_Y = (250, 296, 342, 388)  # centres of the dictionary's entries


def _projections() -> list[str]:
    """X and its three projections Q, K, V (the chapter's single-head notation)."""
    out = [_box(250, 14, 150, 40, ["X  (T, d)"], "data", 14)]
    for cx, name, letter in ((75, "Q", "q"), (295, "K", "k"), (575, "V", "v")):
        out += [
            _arrow((325, 54), (cx, 86)),
            _box(cx - 70, 88, 140, 48, [f"{name} = X W_{letter}", ("(T, d_k)", 12)], "param", 14),
        ]
    out += [
        _text(410, 39, "W_q, W_k, W_v: (d, d_k) each", 12, "start", fill=MUTED),
        _arrow((75, 136), (75, 270)),
        _text(82, 200, "row i", 12, "start", fill=MUTED),
        _arrow((295, 136), (295, 226)),
        _text(302, 190, "all T rows", 12, "start", fill=MUTED),
        _arrow((575, 136), (575, 226)),
        _text(582, 190, "all T rows", 12, "start", fill=MUTED),
    ]
    return out


def _dictionary() -> list[str]:
    """The soft lookup: q against every key, the softmax weights as bars, the weighted sum of the values."""
    mid = sum(_ROW_Y) / len(_ROW_Y)
    out = [_box(20, mid - 34, 110, 68, ["query q", ("(d_k,)", 12), ("a row of Q", 12)], "data", 14)]
    for j, (y, a) in enumerate(zip(_ROW_Y, _WEIGHTS, strict=True), 1):
        sub = str(j).translate(_SUB)
        out += [
            _tag("rect", x=244, y=y - 20, width=374, height=40, rx=6, fill="#f6f7f9", stroke="#9aa7b5"),
            _arrow((130, mid), (258, y)),
            _box(260, y - 15, 70, 30, [f"k{sub}"], "attend", 14),
            _tag("rect", x=350, y=y - 9, width=_n(130 * a), height=18, fill=ACCENT),
            _text(356 + 130 * a, y + 5, f"α{sub} = {a:.2f}", 13, "start"),
            _box(540, y - 15, 70, 30, [f"v{sub}"], "state", 14),
            _arrow((610, y), (638, mid - 27 + 18 * j), width=1.2 + 3 * a),
        ]
    out += [
        _box(640, mid - 34, 70, 68, [("output", 12), "Σⱼ αⱼ vⱼ", ("(d_k,)", 12)], "attend", 14),
        _text(295, 428, "keys kⱼ", 13),
        _text(415, 428, "αⱼ = softmax(q·kⱼ / √d_k)", 13),
        _text(575, 428, "values vⱼ", 13),
        _text(
            360,
            462,
            "A Python dict returns the one value whose key equals the query; attention returns every",
            12,
            fill=MUTED,
        ),
        _text(
            360,
            478,
            "value, weighted by how well its key matches (arrow width ∝ αⱼ). Here q, k and v come from X.",
            12,
            fill=MUTED,
        ),
    ]
    return out


def soft_dictionary() -> str:
    """Self-attention as a soft dictionary: one query against every key, a blend of the values (chapter 5)."""
    desc = (
        "The rows of X are projected into queries Q = X W_q, keys K = X W_k and values V = X W_v. One query q is "
        "compared with every key k_j; the weights alpha_j = softmax(q·k_j / √d_k), drawn as bars, blend the values "
        "into the output sum_j alpha_j v_j, where a Python dict would return only the value of the matching key."
    )
    body = _projections() + _dictionary()
    return _svg("soft_dictionary", 720, 494, "Self-attention as a soft dictionary lookup", desc, body)


_QKV = ((290, "q"), (450, "k"), (610, "v"))  # column centres of the three projections
_PATTERNS = (  # illustrative (T, T) weights of four heads: itself, the previous token, the first token, all
    tuple(tuple(0.85 if j == i else 0.05 for j in range(4)) for i in range(4)),
    tuple(tuple(0.85 if j == max(i - 1, 0) else 0.05 for j in range(4)) for i in range(4)),
    tuple(tuple(0.85 if j == 0 else 0.05 for j in range(4)) for i in range(4)),
    tuple(tuple(0.25 for _ in range(4)) for _ in range(4)),
)


def _weight_maps(x: float, y: float, cell: float = 10, gap: float = 10) -> list[str]:
    """One small (T, T) map per head, shaded by weight, numbered below."""
    out = []
    for h, pattern in enumerate(_PATTERNS):
        gx, size = x + h * (4 * cell + gap), 4 * cell
        hot = [(gx + j * cell, y + i * cell, w) for i, row in enumerate(pattern) for j, w in enumerate(row) if w > 0.1]
        rules = "".join(
            f"M{_n(gx + k * cell)} {_n(y)}v{_n(size)}M{_n(gx)} {_n(y + k * cell)}h{_n(size)}" for k in (1, 2, 3)
        )
        out += [
            _cell(gx, y, size, fill=ACCENT, fill_opacity=0.12),
            *(_cell(cx, cy, cell, fill=ACCENT, fill_opacity=_n(0.9 * w)) for cx, cy, w in hot),
            _tag("path", d=rules, stroke="#ffffff", stroke_width=1),
            _cell(gx, y, size, fill="none", stroke=MUTED),
            _text(gx + 2 * cell, y + size + 15, str(h + 1), 12, font_weight="bold"),
        ]
    return out


def _stage_notes() -> list[str]:
    """The left column: what each stage does in MultiHeadAttention.forward, and the shape after it."""
    notes = (
        (32, ["self-attention:", "query = key = value = x"]),
        (95, ["W_q, W_k, W_v: each", "Linear(d_model, d_model)"]),
        (160, ["(B, T, d_model): H blocks", "of d_k = d_model / H"]),
        (245, ["split: .view(B, T, H, d_k)", ".transpose(1, 2)", "→ (B, H, T, d_k)"]),
        (330, ["weights (B, H, T, T):", "softmax(q kᵀ / √d_k),", "one map per head"]),
        (420, ["concat: .transpose(1, 2)", ".reshape(B, T, d_model)"]),
        (492, ["W_o: Linear(d_model, d_model)"]),
    )
    return [_lines(12, y, [(line, 12) for line in lines], anchor="start", fill=MUTED) for y, lines in notes]


def multi_head() -> str:
    """Multi-head attention: project, split into H heads, attend per head, concatenate, W_o (chapter 6)."""
    out = [_box(340, 14, 220, 38, ["x  (B, T, d_model)"], "data", 14)]
    for cx, name in _QKV:
        out += [
            _arrow((450, 52), (cx, 76)),
            _box(cx - 55, 78, 110, 34, [f"W_{name}"], "param", 14),
            _arrow((cx, 112), (cx, 138)),
            _text(cx - 72, 165, name, 15, "end"),
            _slab(cx - 65, 140, 130, 40, 4),
            _arrow((cx, 180), (cx, 223)),
            _text(cx - 72, 250, name, 15, "end"),
            _slab(cx - 65, 225, 130, 40, 4, gap=8),
        ]
    out += [
        _arrow((290, 265), (320, 308)),
        _arrow((450, 265), (420, 308)),
        *_weight_maps(270, 310),
        _arrow((465, 330), (543, 330)),
        _text(504, 322, "@ v", 13),
        _arrow((610, 265), (610, 308)),
        _slab(545, 310, 130, 40, 4, gap=8),
        _text(610, 368, "heads (B, H, T, d_k)", 12),
        _arrow((610, 374), (610, 398)),
        _slab(545, 400, 130, 40, 4),
        _arrow((610, 440), (610, 474)),
        _box(555, 476, 110, 34, ["W_o"], "param", 14),
        _arrow((555, 493), (462, 493)),
        _box(240, 474, 220, 38, ["output  (B, T, d_model)"], "data", 14),
    ]
    desc = (
        "x of shape (B, T, d_model) goes through W_q, W_k and W_v; each result is cut into H blocks of d_k "
        "features and rearranged to (B, H, T, d_k). Every head computes its own attention weights (B, H, T, T) "
        "and its output; the heads are concatenated back to (B, T, d_model) and mixed by W_o."
    )
    return _svg(
        "multi_head", 720, 530, "Multi-head attention: split, attend per head, concatenate", desc, out + _stage_notes()
    )


def _stack(cx: float, w: float, lane: float, bottom: float, boxes: Sequence[tuple]) -> list[str]:
    """Boxes (lines, role, height, gap above) stacked upwards, each "norm" box with its residual along ``lane``."""
    out, y, below = [], bottom, None
    for lines, role, h, gap in boxes:
        top = y - h
        out.append(_box(cx - w / 2, top, w, h, lines, role, 13))
        if below is not None:
            out.append(_arrow((cx, below[0]), (cx, y + 2)))
        if role == "norm" and below is not None:
            start = below[1] + 10  # the input of the sub-layer below, just under it
            side = cx - w / 2 if lane < cx else cx + w / 2
            out += [_dot(cx, start), _arrow((cx, start), (lane, start), (lane, top + h / 2), (side, top + h / 2))]
        below = (top, y)
        y = top - gap
    return out


def _encoder() -> list[str]:
    """The encoder column: source ids, embedding, one post-LN EncoderLayer, and the memory it produces."""
    boxes = (
        (["source_embedding", ("× √d_model + positions", 12)], "param", 38, 34),
        (["self_attention", ("mask: source_mask", 12), ("(B, 1, 1, S): padding", 12)], "attend", 56, 20),
        (["add & norm1"], "norm", 26, 20),
        (["feed_forward", ("W_2 relu(W_1 x)", 12)], "state", 44, 20),
        (["add & norm2"], "norm", 26, 20),
    )
    return [
        _text(160, 652, "source ids  (B, S)", 13),
        _arrow((160, 640), (160, 630)),
        *_stack(160, 210, 38, 628, boxes),
        _frame(22, 304, 276, 274, "EncoderLayer", "× num_layers"),
        _arrow((160, 342), (160, 290), (370, 290), (370, 406), (423, 406)),
        _text(265, 282, "memory  (B, S, d_model)", 13),
        _text(396, 398, "K, V", 13),
    ]


def _decoder() -> list[str]:
    """The decoder column: target ids, embedding, one post-LN DecoderLayer with both attentions, the output."""
    boxes = (
        (["target_embedding", ("× √d_model + positions", 12)], "param", 38, 34),
        (
            ["self_attention (masked)", ("mask: target_mask (B, 1, T, T)", 12), ("= causal_mask ∧ padding", 12)],
            "attend",
            56,
            20,
        ),
        (["add & norm1"], "norm", 26, 20),
        (
            ["cross_attention", ("Q: decoder; K, V: memory", 12), ("mask: source_mask (B, 1, 1, S)", 12)],
            "attend",
            56,
            20,
        ),
        (["add & norm2"], "norm", 26, 20),
        (["feed_forward", ("W_2 relu(W_1 x)", 12)], "state", 44, 20),
        (["add & norm3"], "norm", 26, 48),
        (["out: Linear(d_model, V)"], "param", 32, 20),
        (["softmax"], "attend", 30, 20),
    )
    return [
        _text(540, 652, "decoder input ids  (B, T): <bos> y₁ y₂ …", 13),
        _arrow((540, 640), (540, 630)),
        *_stack(540, 230, 683, 628, boxes),
        _frame(402, 184, 300, 394, "DecoderLayer", "× num_layers"),
        _arrow((540, 92), (540, 50)),
        _text(540, 40, "next-token probabilities  (B, T, V)", 13),
    ]


def transformer() -> str:
    """The encoder-decoder Transformer: an encoder layer, a decoder layer with its masks, the output (chapter 8)."""
    notes = _lines(
        22,
        125,
        [
            ("Post-LN, as in the paper (norm_first=False):", 12),
            ("x = norm(x + sublayer(x)) around each sub-layer", 12),
            ("(norm_first=True: x + sublayer(norm(x)))", 12),
            ("", 12),
            ("Masks are boolean, True = may attend:", 12),
            ("source_mask: the source's real tokens", 12),
            ("target_mask: causal_mask(T) ∧ real tokens", 12),
        ],
        anchor="start",
        fill=MUTED,
    )
    desc = (
        "Left, the encoder layer: self-attention under the source padding mask and a feed-forward network, each "
        "followed by add & norm, repeated num_layers times; its output is the memory. Right, the decoder layer: "
        "masked self-attention under the target mask (causal and padding), cross-attention whose queries come from "
        "the decoder and whose keys and values are the memory, and a feed-forward network, each with add & norm; "
        "then a linear layer and a softmax give the next-token probabilities."
    )
    return _svg(
        "transformer",
        720,
        664,
        "The Transformer: encoder and decoder layers with their masks",
        desc,
        [*_encoder(), *_decoder(), notes],
    )


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

_STAGES = (  # NTM addressing (attn.memory.addressing), one box each: name, equation, what it computes
    ("content_addressing", "5", "wᶜᵢ ∝ exp(β cos(k, Mᵢ))"),
    ("interpolate", "7", "wᵍ = g wᶜ + (1 − g) w{prev}"),
    ("shift", "8", "w̃ᵢ = Σⱼ wᵍⱼ sᵢ₋ⱼ"),
    ("sharpen", "9", "wᵢ = w̃ᵢᵞ / Σⱼ w̃ⱼᵞ"),
)
_STAGE_Y = (262, 326, 390, 454)  # tops of the four stage boxes


_NTM_NOTE = (
    "To step t + 1: Mₜ, wʷₜ, wʳₜ, rₜ and (h, c)ₜ. Sizes: M (B, N, W); weightings (B, N); k, e, a (B, W);",
    "β, g, γ (B,); s (B, 2 shift_range + 1). Memory starts at 1e-6, both heads on row 0.",
)


def _ntm_head(x: float, prev: str, new: str) -> list[str]:
    """One head's addressing in the column from ``x``: the four stages of ``address``, the weighting between."""
    cx, out = x + 95, [_frame(x - 8, 236, 206, 270, "address")]
    for k, ((name, eq, formula), y) in enumerate(zip(_STAGES, _STAGE_Y, strict=True)):
        out.append(_box(x, y, 190, 40, [f"{name}  eq. {eq}", (formula.format(prev=prev), 12)], "attend"))
        if k:
            out.append(_arrow((cx, y - 24), (cx, y - 2)))
    for y, label in zip((316, 380, 444, 514), ("wᶜ", "wᵍ", "w̃", new), strict=True):
        out.append(_text(cx + 8, y + 5, label, 13, "start"))
    return out


def ntm() -> str:
    """The Neural Turing Machine at step t: controller, write head, read head, addressing, memory (chapter 4)."""
    out = [
        _box(120, 14, 190, 32, ["xₜ  (B, input_size)"], "data"),
        _arrow((215, 46), (215, 60)),
        _box(16, 66, 84, 34, ["rₜ₋₁"], "data"),
        _box(16, 110, 84, 34, ["(h, c)ₜ₋₁"], "state"),
        _arrow((100, 83), (118, 83)),
        _arrow((100, 127), (118, 127)),
        _box(120, 62, 190, 84, ["controller", *_small("nn.LSTMCell", "reads [xₜ; rₜ₋₁]", "→ hₜ (B, hidden)")], "state"),
        _arrow((310, 100), (468, 100)),
        _text(390, 92, "hₜ", 13),
        _box(470, 76, 190, 50, ["output: Linear", ("[hₜ; rₜ] → logits", 12)], "param"),
        _arrow((565, 76), (565, 52)),
        _box(470, 14, 190, 36, ["logits (B, output_size)"], "data", 12),
        _arrow((215, 146), (215, 178)),
        _dot(215, 160),
        _arrow((215, 160), (511, 160), (511, 178)),
        _box(112, 180, 206, 44, ["write_head: Linear", ("k, β, g, s, γ, erase e, add a", 12)], "param"),
        _box(408, 180, 206, 44, ["read_head: Linear", ("k, β, g, s, γ", 12)], "param"),
        _arrow((215, 224), (215, 260)),
        _arrow((511, 224), (511, 260)),
        *_ntm_head(120, "ʷₜ₋₁", "wʷₜ"),
        *_ntm_head(416, "ʳₜ₋₁", "wʳₜ"),
        _box(16, 262, 84, 40, ["Mₜ₋₁", ("(B, N, W)", 12)], "data"),
        _arrow((100, 282), (118, 282)),
        _box(16, 326, 84, 40, ["wʷₜ₋₁", ("(B, N)", 12)], "data"),
        _arrow((100, 346), (118, 346)),
        _arrow((16, 282), (8, 282), (8, 546), (118, 546)),
        _box(342, 326, 60, 40, ["wʳₜ₋₁", ("(B, N)", 12)], "data"),
        _arrow((402, 346), (414, 346)),
        _arrow((215, 494), (215, 522)),
        _box(120, 524, 190, 44, ["write  eqs. 3-4", ("Mₜ₋₁ ∘ (1 − w eᵀ) + w aᵀ", 12)], "attend"),
        _arrow((310, 546), (330, 546), (330, 282), (414, 282)),
        _dot(330, 546),
        _arrow((330, 546), (414, 546)),
        _text(337, 440, "Mₜ", 13, "start"),
        _arrow((511, 494), (511, 522)),
        _box(416, 524, 190, 44, ["read  eq. 2", ("rₜ = Σᵢ wʳₜ[i] Mₜ[i]", 12)], "attend"),
        _arrow((606, 546), (640, 546), (640, 128)),
        _text(646, 340, "rₜ", 13, "start"),
        _note(16, 606, _NTM_NOTE),
    ]
    desc = (
        "At step t an LSTM controller reads the input x_t and the previous read r_(t-1) and gives h_t. The write "
        "head's linear map turns h_t into a key k, strength β, gate g, shift s and exponent γ, plus erase e and add "
        "a vectors; content_addressing, interpolate with the head's previous weighting, shift and sharpen give its "
        "weighting, which erases and adds to the memory M_(t-1). The read head addresses the new memory M_t the "
        "same way and reads r_t, and the output layer maps [h_t; r_t] to the logits."
    )
    return _svg("ntm", 680, 632, "Neural Turing Machine: one step of controller, heads and memory", desc, out)


_DNC_NOTE = (
    "The controller (nn.LSTMCell) reads [xₜ; rₜ₋₁]; interface = Linear(hₜ) gives read keys kʳ, strengths βʳ,",
    "write key kʷ, strength βʷ, erase e, write vector v, free gates f, gates gᵃ and gʷ, read modes π.",
    "C(M, k, β) = content_addressing. To step t + 1: uₜ, wʷₜ, pₜ, Lₜ, Mₜ, wʳₜ, rₜ; output = Linear([hₜ; rₜ]).",
)
_DNC_LANE = 550  # the x of the memory lane: Mₜ₋₁ comes down it to the write, Mₜ goes on down it to the read


def _dnc_inputs() -> list[str]:
    """The left edge: what step t reads from step t - 1, each beside the stage that first uses it."""
    boxes = (
        (14, "Mₜ₋₁", "(B, N, W)"),
        (92, "wʳₜ₋₁", "(B, R, N)"),
        (148, "uₜ₋₁", "(B, N)"),
        (196, "wʷₜ₋₁", "(B, N)"),
        (446, "pₜ₋₁", "(B, N)"),
        (520, "Lₜ₋₁", "(B, N, N)"),
    )
    return [_box(16, y, 76, 40, [name, (shape, 12)], "data") for y, name, shape in boxes]


def _dnc_free() -> list[str]:
    """Stage 1: retention from the free gates and the previous reads, usage, allocation."""
    return [
        _frame(98, 64, 356, 184, "1 free"),
        _arrow((92, 112), (118, 112)),
        _box(120, 90, 150, 44, ["retention ψₜ", ("Πᵢ (1 − fⁱ wʳⁱₜ₋₁)", 12)], "attend"),
        _arrow((195, 134), (195, 146)),
        _text(203, 144, "ψₜ", 12, "start"),
        _arrow((92, 168), (118, 168)),
        _arrow((92, 216), (118, 216)),
        _box(120, 148, 150, 88, ["usage uₜ", *_small("(uₜ₋₁ + wʷₜ₋₁", "− uₜ₋₁ ∘ wʷₜ₋₁) ∘ ψₜ")], "attend"),
        _arrow((270, 192), (288, 192)),
        _box(290, 172, 150, 40, ["allocation aₜ", ("least-used rows first", 12)], "attend"),
    ]


def _dnc_write() -> list[str]:
    """Stage 2: the write weighting from allocation and content, the write on the memory lane."""
    x = _DNC_LANE
    return [
        _frame(98, 258, 578, 154, "2 allocate and write"),
        _arrow((92, 34), (x, 34), (x, 358)),
        _arrow((330, 212), (330, 282)),
        _text(338, 274, "aₜ", 12, "start"),
        _box(240, 284, 124, 58, ["write_weighting", *_small("wʷₜ = gʷ (gᵃ aₜ", "+ (1 − gᵃ) cʷ)")], "attend"),
        _dot(x, 313),
        _arrow((x, 313), (x - 28, 313)),
        _box(388, 291, 132, 44, ["content_addressing", ("cʷ = C(Mₜ₋₁, kʷ, βʷ)", 12)], "attend"),
        _arrow((388, 313), (366, 313)),
        _arrow((302, 342), (302, 380), (x - 72, 380)),
        _box(x - 70, 360, 140, 40, ["write → Mₜ", ("erase e, add v", 12)], "attend"),
    ]


def _dnc_link() -> list[str]:
    """Stage 3: the write weighting updates the link matrix (with the old precedence) and the precedence."""
    return [
        _frame(98, 422, 252, 146, "3 link"),
        _dot(302, 380),
        _arrow((302, 380), (302, 528), (272, 528)),
        _dot(302, 466),
        _arrow((302, 466), (272, 466)),
        _text(310, 500, "wʷₜ", 12, "start"),
        _arrow((92, 466), (118, 466)),
        _box(120, 446, 150, 40, ["precedence pₜ", ("(1 − Σ wʷₜ) pₜ₋₁ + wʷₜ", 12)], "attend"),
        _arrow((82, 486), (82, 508), (118, 508)),
        _arrow((92, 540), (118, 540)),
        _box(120, 498, 150, 60, ["link_matrix Lₜ", ("from Lₜ₋₁, wʷₜ, pₜ₋₁", 12)], "attend"),
    ]


def _dnc_read() -> list[str]:
    """Stage 4: forward and backward weightings from the new links, content on the new memory, the read."""
    x = _DNC_LANE
    return [
        _frame(98, 578, 578, 166, "4 read"),
        _arrow((195, 558), (195, 598)),
        _text(203, 592, "Lₜ", 12, "start"),
        _arrow((16, 112), (8, 112), (8, 628), (118, 628)),
        _box(120, 600, 198, 56, ["directional_weightings", ("f = Lₜ wʳₜ₋₁,  b = Lₜᵀ wʳₜ₋₁", 12)], "attend"),
        _arrow((x, 400), (x, 685)),
        _text(x + 8, 500, "Mₜ", 12, "start"),
        _dot(x, 628),
        _arrow((x, 628), (x - 28, 628)),
        _box(388, 606, 132, 44, ["content_addressing", ("cʳ = C(Mₜ, kʳ, βʳ)", 12)], "attend"),
        _arrow((270, 656), (270, 680)),
        _text(278, 672, "f, b", 12, "start"),
        _arrow((430, 650), (430, 680)),
        _text(422, 672, "cʳ", 12, "end"),
        _box(230, 682, 220, 50, ["read_weighting wʳₜ", ("π[1] b + π[2] cʳ + π[3] f", 12)], "attend"),
        _arrow((450, 707), (x - 57, 707)),
        _box(x - 55, 687, 110, 40, ["read → rₜ", ("Σᵢ wʳₜ[i] Mₜ[i]", 12)], "attend"),
        _arrow((x + 55, 707), (x + 74, 707)),
        _box(x + 76, 687, 42, 40, ["rₜ"], "data", 14),
    ]


def dnc_step() -> str:
    """One step of the Differentiable Neural Computer's memory: free, allocate and write, link, read (chapter 4)."""
    desc = (
        "The stages read top to bottom, 1 to 4; the left edge holds what step t takes from step t-1, each input "
        "beside the stage that first uses it, and the memory M_(t-1) runs along the top and down the right side "
        "through the write to M_t and on to the read. 1 free: the free gates and the previous reads w^r_(t-1) give "
        "the retention ψ, which with u_(t-1) and w^w_(t-1) gives the usage u_t and the allocation a_t. 2 allocate "
        "and write: a_t, the content weighting c^w on M_(t-1) and the gates g^a, g^w give the write weighting "
        "w^w_t, which erases and writes the memory M_t. 3 link: w^w_t also updates the precedence p_t and the "
        "link matrix L_t, from L_(t-1) and p_(t-1). 4 read: each read head mixes the backward and forward "
        "weightings b = L_tᵀ w^r_(t-1), f = L_t w^r_(t-1) and its content weighting c^r on M_t by its read modes "
        "π into w^r_t, and reads r_t from M_t."
    )
    body = [*_dnc_inputs(), *_dnc_free(), *_dnc_write(), *_dnc_link(), *_dnc_read(), _note(16, 776, _DNC_NOTE)]
    return _svg("dnc_step", 680, 810, "Differentiable Neural Computer: one step of its memory", desc, body)


# ---------------------------------------------------------------------------------------------------- chapter 9


_RAM_LOSS = [
    "ram_loss = cross-entropy + REINFORCE + (bₜ − R)²",
    ("REINFORCE: −(R − bₜ) log π(lₜ), reward R = 1 for a right answer", 12),
]
_RAM_NOTE = (
    "Dashed: lₜ is drawn from π and passes no gradient, so REINFORCE trains the policy (W_h, W_p, v).",
    "Backpropagation trains classifier, core and glimpse_net; the squared error trains the baseline.",
)


def glimpse_loop() -> str:
    """The recurrent attention model: where to look, a glimpse there, a GRU step; REINFORCE for the policy (ch. 9)."""
    out = [
        _box(14, 14, 120, 48, ["question", ("(B,)", 12)], "data"),
        _arrow((134, 38), (158, 38)),
        _box(160, 14, 150, 48, ["question: Embedding", ("h₀ = tanh(question(q))", 12)], "param"),
        _box(520, 14, 130, 48, ["images", ("(B, C, 24, 24)", 12)], "data"),
        _arrow((520, 38), (488, 38)),
        _box(330, 14, 156, 48, ["adaptive_avg_pool2d", ("periphery p (B, grid², C)", 12)], "data"),
        _arrow((650, 38), (664, 38), (664, 262), (652, 262)),
        _frame(8, 84, 648, 216, "each glimpse (2 in RAMConfig)"),
        _arrow((235, 62), (235, 114)),
        _box(170, 116, 130, 40, ["h  (B, hidden)"], "state"),
        _arrow((170, 136), (136, 136)),
        _box(14, 112, 120, 48, ["baseline: Linear", ("bₜ of h.detach()", 12)], "param"),
        _arrow((300, 136), (328, 136)),
        _arrow((408, 62), (408, 110)),
        _box(330, 112, 156, 54, ["additive_scores", *_small("vᵀ tanh(W_h h + W_p pⱼ)", "(B, grid²)")], "attend"),
        _arrow((486, 136), (518, 136)),
        _box(520, 112, 130, 48, ["policy π", ("softmax over grid²", 12)], "attend"),
        _arrow((585, 160), (585, 236), dash=True),
        _dot(585, 212),
        _arrow((585, 212), (420, 212), (420, 236), dash=True),
        _text(593, 200, "lₜ (B, 2)", 12, "start"),
        _lines(577, 190, [("sampled from π (training),", 12), ("argmax (eval)", 12)], anchor="end"),
        _box(520, 238, 130, 54, ["glimpse", *_small("crops of 6, 12 px", "→ 6 × 6 each")], "data"),
        _arrow((520, 265), (488, 265)),
        _box(330, 238, 156, 54, ["glimpse_net", *_small("relu(what(ρ)) and", "relu(where(lₜ))")], "param"),
        _arrow((330, 265), (302, 265)),
        _text(316, 258, "g", 12),
        _box(170, 240, 130, 50, ["core", ("nn.GRUCell", 12)], "state"),
        _arrow((205, 156), (205, 238)),
        _arrow((265, 240), (265, 158)),
        _text(213, 200, "h", 12, "start"),
        _text(273, 200, "new h", 12, "start"),
        _arrow((235, 290), (235, 330)),
        _text(243, 316, "after the last glimpse", 12, "start", fill=MUTED),
        _box(150, 332, 170, 48, ["classifier: Linear", ("→ logits (B, classes)", 12)], "param"),
        _arrow((235, 380), (235, 408)),
        _arrow((74, 160), (74, 408)),
        _text(82, 330, "bₜ", 12, "start"),
        _box(14, 410, 636, 48, _RAM_LOSS, "attend"),
        _note(14, 486, _RAM_NOTE),
    ]
    desc = (
        "The question's embedding sets the state h, and the image averaged down to grid × grid cells is the "
        "periphery. At each glimpse, additive scores of h against every place give the policy π, a place l_t is "
        "sampled from it (the most likely one in eval mode), a glimpse of 6- and 12-pixel crops is taken there, "
        "and glimpse_net and the GRU core fold it into h. After the last glimpse the classifier answers; the "
        "sampling is not differentiable, so REINFORCE with a baseline trains the policy."
    )
    return _svg("glimpse_loop", 680, 520, "Recurrent attention model: where to look, glimpse, remember", desc, out)


_VIT_ENCODER = [
    "encoder: num_layers × EncoderLayer",
    *_small("pre-LN (norm_first=True), final LayerNorm;", "self-attention over all 37 tokens"),
]
_TOKENS = ("0", "1", "2", "3", "…", "34", "35", "36")  # the token row of the vit figure: class token, patches


def _image(x: float, y: float, cells: int = 6, size: float = 16, heat: Sequence[float] | None = None) -> str:
    """A 24-pixel scene (a circle and a square) cut into ``cells`` × ``cells`` patches; ``heat``: one weight per
    patch, row by row, shaded over it."""
    side = cells * size
    out = [_tag("circle", cx=x + 64, cy=y + 32, r=11, fill="#c4651d"), _cell(x + 12, y + 68, 20, fill="#3f8f55")]
    if heat is not None:
        top = max(heat)
        out += [
            _cell(x + (k % cells) * size, y + (k // cells) * size, size, fill=ACCENT, fill_opacity=_n(0.8 * w / top))
            for k, w in enumerate(heat)
            if w / top > 0.05
        ]
    rules = "".join(
        f"M{_n(x + k * size)} {_n(y)}v{_n(side)}M{_n(x)} {_n(y + k * size)}h{_n(side)}" for k in range(1, cells)
    )
    out += [
        _tag("path", d=rules, stroke="#8795a3", stroke_width=0.8),
        _cell(x, y, side, fill="none", stroke=MUTED, stroke_width=1.2),
    ]
    return "".join(out)


def vit() -> str:
    """The Vision Transformer: patches as tokens, a class token with the question, encoder, rollout (chapter 9)."""
    heat = [math.exp(-((r - 1.5) ** 2 + (c - 3.5) ** 2) / 1.5) for r in range(6) for c in range(6)]
    out = [
        _image(24, 40),
        _text(72, 156, "images (B, C, 24, 24)", 12),
        _text(72, 172, "36 patches of 4 × 4 px", 12, fill=MUTED),
        _arrow((120, 72), (148, 72)),
        _box(
            150,
            40,
            240,
            64,
            ["stem: PatchEmbedding", *_small("patchify: (B, 36, 48) = (B, N, C·P·P)", "E: Linear(48, d_model)")],
            "param",
        ),
        _arrow((72, 40), (72, 24), (543, 24), (543, 38)),
        _box(
            420,
            40,
            246,
            64,
            ["or, hybrid: ConvStem", *_small("three 3 × 3 convs → (B, d_model, 6, 6)", "36 cells as tokens")],
            "param",
        ),
        _arrow((270, 104), (270, 198)),
        _arrow((543, 104), (543, 215), (426, 215)),
        _box(14, 194, 130, 42, ["cls + question(q)", ("(B, 1, d_model)", 12)], "param"),
        _arrow((144, 215), (168, 215)),
    ]
    for k, label in enumerate(_TOKENS):
        role = "param" if k == 0 else "data"
        out.append(_box(170 + 32 * k, 200, 30, 30, [(label, 12)], role))
    out += [
        _text(305, 252, "(B, 37, d_model)", 12, "start"),
        _arrow((297, 230), (297, 276)),
        _node(297, 290, "+"),
        _box(
            420,
            264,
            246,
            52,
            ["positions: LearnedPositions", *_small("E_pos = table (37, d_model)", "hybrid: positions=False")],
            "param",
        ),
        _arrow((420, 290), (311, 290)),
        _arrow((297, 302), (297, 330)),
        _box(150, 332, 294, 62, _VIT_ENCODER, "attend"),
        _arrow((220, 394), (220, 430)),
        _text(228, 418, "x[:, 0]", 12, "start"),
        _box(150, 432, 150, 48, ["head: Linear", ("→ logits (B, classes)", 12)], "param"),
        _arrow((444, 352), (543, 352), (543, 430)),
        _lines(551, 392, _small("attention of", "each layer", "(B, H, 37, 37)"), anchor="start"),
        _box(420, 432, 246, 48, ["attention_rollout", ("mean of heads, + I, product of layers", 12)], "attend"),
        _arrow((543, 480), (543, 508)),
        _box(420, 510, 246, 48, ["class_token_map(·, grid=6)", ("row 0 over the 36 patches", 12)], "attend"),
        _arrow((420, 534), (398, 534)),
        _image(300, 486, heat=heat),
        _text(348, 600, "(B, 6, 6), laid on the image", 12),
    ]
    desc = (
        "A 24 × 24 image is cut into 36 patches of 4 × 4 pixels, each flattened and mapped by the linear layer E to "
        "a token (the hybrid uses a convolutional stem instead). A class token carrying the question goes in front, "
        "learned positions are added, and a pre-LN encoder reads the 37 tokens; the class token's output gives "
        "the logits. Attention rollout multiplies the layers' attention, and the class token's row becomes a 6 × 6 "
        "map over the image."
    )
    return _svg("vit", 680, 616, "Vision Transformer: patches as tokens, a class token, attention rollout", desc, out)


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

_LAYER = "encoder.layer.i."  # a Hugging Face layer's prefix; attn's is encoder.layers.i.
_BERT_ROWS = (  # (Hugging Face name, attn name) as drawn, i the layer; checkpoint_names(6) maps one to the other
    ("embeddings.word_embeddings", "embedding.tokens"),
    ("embeddings.position_embeddings", "embedding.positions"),
    ("embeddings.token_type_embeddings", "embedding.segments"),
    ("embeddings.LayerNorm", "embedding.norm"),
    (_LAYER + "attention.self.query", "encoder.layers.i.self_attention.W_q"),
    (_LAYER + "attention.self.key", "encoder.layers.i.self_attention.W_k"),
    (_LAYER + "attention.self.value", "encoder.layers.i.self_attention.W_v"),
    (_LAYER + "attention.output.dense", "encoder.layers.i.self_attention.W_o"),
    (_LAYER + "attention.output.LayerNorm", "encoder.layers.i.norm1"),
    (_LAYER + "intermediate.dense", "encoder.layers.i.feed_forward.W_1"),
    (_LAYER + "output.dense", "encoder.layers.i.feed_forward.W_2"),
    (_LAYER + "output.LayerNorm", "encoder.layers.i.norm2"),
)


_BERT_NOTE = (
    "checkpoint_names(6): each name + .weight and .bias (the three tables: .weight only);",
    "a LayerNorm's .weight and .bias load attn's gamma and beta.",
    "Post-LN layers, GELU, [PAD] keys masked; d_model 384, 12 heads of 32, d_ff 1536.",
    "embed_sentences(model, tokenizer, sentences) tokenizes, runs and pools: (N, 384).",
)


def _rows_box(x: float, y: float, w: float, header: str, rows: Sequence[tuple[float, str]], role: str) -> str:
    """A box from ``y`` to just below its last row: a header line, then each row's text centred on its own y."""
    fill, stroke = ROLES[role]
    h = rows[-1][0] + 18 - y
    out = [_tag("rect", x=x, y=y, width=w, height=h, rx=5, fill=fill, stroke=stroke, stroke_width=1.5)]
    out.append(_text(x + w / 2, y + 20, header, 13))
    out += [_text(x + w / 2, ry + 4, text, 12) for ry, text in rows]
    return "".join(out)


def bert_mapping() -> str:
    """all-MiniLM-L6-v2's BERT in attn's layers, each beside the checkpoint tensor it is loaded from (chapter 11)."""
    ys = (140, 164, 188, 240, 362, 386, 410, 434, 486, 566, 606, 658)  # the y of each row of _BERT_ROWS
    embedding = [(140, "tokens (30522, 384)"), (164, "+ positions (512, 384)"), (188, "+ segments (2, 384)")]
    attention = [
        (y, f"{name}: Linear(384, 384)") for y, name in zip(ys[4:8], ("W_q", "W_k", "W_v", "W_o"), strict=True)
    ]
    feed_forward = [(566, "W_1: Linear(384, 1536)"), (586, "GELU"), (606, "W_2: Linear(1536, 384)")]
    out = [
        _text(14, 24, "attn: Bert = load_bert()", 13, "start", font_weight="bold"),
        _text(346, 24, "Hugging Face checkpoint: loaded from", 13, "start", font_weight="bold"),
        _box(80, 38, 220, 30, ["token ids (B, T)"], "data"),
        _arrow((190, 68), (190, 92)),
        _rows_box(80, 94, 220, "embedding: BertEmbedding", embedding, "param"),
        _arrow((190, 206), (190, 224)),
        _box(80, 226, 220, 28, ["embedding.norm"], "norm"),
        _frame(20, 266, 292, 418, "encoder.layers.i", "i = 0 … 5"),
        _arrow((190, 254), (190, 316)),
        _dot(190, 308),
        _arrow((190, 308), (40, 308), (40, 486), (78, 486)),
        _rows_box(80, 318, 220, "self_attention (12 heads)", attention, "attend"),
        _arrow((190, 452), (190, 470)),
        _box(80, 472, 220, 28, ["add & norm1"], "norm"),
        _arrow((190, 500), (190, 522)),
        _dot(190, 512),
        _arrow((190, 512), (40, 512), (40, 658), (78, 658)),
        _rows_box(80, 524, 220, "feed_forward", feed_forward, "state"),
        _arrow((190, 624), (190, 642)),
        _box(80, 644, 220, 28, ["add & norm2"], "norm"),
        _arrow((190, 672), (190, 700)),
        _box(80, 702, 220, 30, ["hidden (B, T, 384)"], "data"),
        _arrow((300, 717), (344, 717)),
        _box(346, 694, 320, 46, ["mean_pool", ("the mean over real tokens, at unit length", 12)], "attend"),
        _arrow((506, 740), (506, 758)),
        _box(346, 760, 320, 30, ["sentence embedding (B, 384)"], "data"),
    ]
    for (theirs, _), y in zip(_BERT_ROWS, ys, strict=True):
        out += [_box(346, y - 10, 320, 20, [(theirs, 12)], "data"), _arrow((346, y), (302, y))]
    out.append(_note(14, 836, _BERT_NOTE))
    desc = (
        "The BERT encoder of all-MiniLM-L6-v2 drawn in attn's modules, each beside the Hugging Face checkpoint "
        "tensor load_bert copies into it: the token, position and segment embeddings and their LayerNorm, then six "
        "post-LN encoder layers of self-attention (W_q, W_k, W_v, W_o), add & norm1, a GELU feed-forward network "
        "(W_1, W_2) and add & norm2. The hidden states (B, T, 384) are averaged over the real tokens and scaled to "
        "unit length: the sentence embedding."
    )
    return _svg("bert_mapping", 680, 880, "all-MiniLM-L6-v2: Hugging Face names mapped onto attn's BERT", desc, out)


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


_EXPLAIN_ROWS = (
    ("x₁", "s₁", 112, 0.15),
    ("x₂ ✓", "s₂", 148, 0.55),
    ("x₃", "s₃", 184, 0.1),
    ("x_{N}", "s_{N}", 240, 0.2),
)
_EXPLAIN_PROBES = (  # (x of the box, role, the method, its map, what the code calls it)
    (22, "attend", "attention", "aᵢ", "returned by forward"),
    (178, "attend", "attention × gradient", "(aᵢ ∂p/∂aᵢ)⁺", "attention_x_gradient"),
    (354, "data", "gradient × input", "∂p/∂sᵢ at s = 1", "gradient_x_input"),
    (510, "data", "occlusion", "p(s = 1) − p(sᵢ = 0)", "occlusion"),
)
_DELETION = (0, 0.55, 0.8, 0.88, 0.92, 0.93, 0.94, 0.95)  # the drop in p after k removals, a faithful map's order
_RANDOM = (0, 0.12, 0.28, 0.45, 0.62, 0.78, 0.88, 0.95)  # and a random order's
_AGREEMENT = (
    "AP, average_precision: the map's order",
    "mass, mass_on_truth: its positive mass on ✓",
    "excess, excess_mass: that mass above chance",
    "",
    "the truth is known: the supporting facts,",
    "the aligned source word, the tokens that",
    "see the asked object",
)
_DELETION_NOTE = (
    "solid: the map",
    "dashed: random_map",
    "deletion area,",
    "deletion_area:",
    "shaded area / p₀,",
    "smaller = more",
    "faithful",
)


def _explain_model() -> list[str]:
    """The N elements, each scaled by sᵢ, an attention over them inside the model, and p = answer(s)."""
    out = [
        _text(20, 30, "N input elements", 13, "start", font_weight="bold"),
        _text(20, 48, "sentences, source words or patches", 12, "start", fill=MUTED),
        _note(420, 32, ["the counter-test, adversarial_attention:", "other weights a′, the same answer p"]),
        _text(49, 92, "xᵢ", 14),
        _text(112, 92, "× sᵢ", 14),
        _frame(192, 60, 290, 212, "model: MemN2N, Seq2Seq or ViT"),
        _box(208, 80, 122, 178, [], "attend"),
        _text(269, 100, "attention aᵢ", 13),
    ]
    for x, s, y, a in _EXPLAIN_ROWS:  # element, scale, row, an example weight
        out += [
            _box(20, y - 14, 58, 28, [x], "data", 16),
            _arrow((78, y), (97, y)),
            _tag("circle", cx=112, cy=y, r=14, fill="#ffffff", stroke=INK, stroke_width=1.5),
            _text(112, y + 5, s, 16),
            _arrow((126, y), (206, y)),
            _tag("rect", x=218, y=y - 6, width=a * 160, height=12, fill=ACCENT),
        ]
    return out + [
        *[_text(x, 218, "⋮", 16) for x in (49, 112, 230)],
        _arrow((330, 166), (350, 166)),
        _box(352, 124, 118, 84, ["the rest", "of the model", *_small("reads Σᵢ aᵢ vᵢ")], "param"),
        _arrow((470, 166), (504, 166)),
        _box(506, 132, 158, 68, ["p = answer(s)", *_small("the answer's", "probability (B,)")], "data"),
        _note(20, 290, ["sᵢ = 1: as is, sᵢ = 0: removed", "✓ a true element (known)"]),
    ]


def _explain_probes() -> list[str]:
    """Four probes, two that read the attention and two that vary the inputs, each a map over the N elements."""
    out = [
        _frame(14, 318, 320, 106, "read the attention"),
        _frame(346, 318, 320, 106, "ignore it: vary the scales sᵢ"),
        _arrow((269, 258), (269, 318)),
        _text(277, 296, "aᵢ", 14, "start"),
        _arrow((585, 200), (585, 318)),
        _text(593, 266, "p", 14, "start"),
    ]
    for x, role, name, formula, code in _EXPLAIN_PROBES:
        out += [
            _box(x, 344, 148, 66, [name, (formula, 14), (code, 12)], role),
            _arrow((x + 74, 410), (x + 74, 446), head=False),
        ]
    return out + [
        _arrow((96, 446), (584, 446), head=False),
        _arrow((170, 446), (170, 478)),
        _arrow((502, 446), (502, 478)),
        _text(336, 466, "each a map (B, N): larger = more important", 12, fill=MUTED),
    ]


def _explain_scores() -> list[str]:
    """Agreement with the true elements, and faithfulness: the deletion curve of the map's order against random."""
    x0, y0, kx, py = 366, 630, 19, 80  # the chart's origin, px per element removed, px per unit of p
    curve = [(x0 + kx * k, y0 - py * (1 - d)) for k, d in enumerate(_DELETION)]
    chance = [(x0 + kx * k, y0 - py * (1 - d)) for k, d in enumerate(_RANDOM)]
    area = " ".join(f"{_n(x)},{_n(y)}" for x, y in [*curve, (curve[-1][0], y0), (x0, y0)])
    title = [
        "faithfulness: deletion_curve",
        *_small("remove the elements in the map's order", "(map_order) and watch p fall"),
    ]
    return [
        _box(20, 480, 300, 176, ["agreement with the truth", *_small(*_AGREEMENT)], "norm"),
        _box(340, 480, 324, 176, [], "norm"),
        _lines(502, 510, title),
        _tag("polygon", points=area, fill=ROLES["attend"][0]),
        _arrow((x0, y0), (x0, y0 - py - 10)),
        _arrow((x0, y0), (x0 + kx * 7 + 10, y0)),
        _arrow(*curve, head=False, width=2),
        _arrow(*chance, head=False, dash=True),
        _text(x0 - 8, y0 - py + 4, "p", 13, "end"),
        _text(x0 + 4, y0 + 18, "elements removed →", 12, "start"),
        _note(522, 590, _DELETION_NOTE),
    ]


def explain() -> str:
    """Does attention explain the answer? (chapter 13): four attribution maps over a model's N input elements,
    scored against the known true elements and by how fast deleting in their order makes the answer fall."""
    body = [*_explain_model(), *_explain_probes(), *_explain_scores()]
    desc = (
        "A model reads N input elements x_1 to x_N (sentences in memory, source words or image patches), each "
        "scaled by s_i (1 = as is, 0 = removed), attends over them with weights a_i and gives p = answer(s), the "
        "probability of its answer. Four probes each give a map over the N elements: the attention a_i itself; "
        "attention times gradient, the positive part of a_i dp/da_i (attention_x_gradient); gradient times input, "
        "dp/ds_i at s = 1 (gradient_x_input); and occlusion, p with every element minus p without element i. "
        "Every map gets two scores: agreement with the true elements, which are known (the supporting facts, the "
        "aligned source word, the tokens that see the object), as AP (average_precision: the precision at each "
        "true element in the map's order, averaged), mass (mass_on_truth: the share of the map's positive mass on "
        "the true elements) and excess (excess_mass: that mass above chance); and faithfulness, the "
        "deletion_curve of p as the elements are removed in the map's order, whose area (the deletion area, "
        "deletion_area) is smaller the sooner the map finds what the answer needs, compared with a random order "
        "(random_map). "
        "adversarial_attention asks the opposite: other weights that leave the answer as it is."
    )
    return _svg("explain", 680, 670, "Does attention explain the answer? Four maps, two scores", desc, body)


FIGURES: dict[str, Callable[[], str]] = {
    "bahdanau": bahdanau,
    "memory_hops": memory_hops,
    "soft_dictionary": soft_dictionary,
    "multi_head": multi_head,
    "transformer": transformer,
    "bert_vs_gpt": bert_vs_gpt,
    "soft_lookup": soft_lookup,
    "ntm": ntm,
    "dnc_step": dnc_step,
    "glimpse_loop": glimpse_loop,
    "vit": vit,
    "positions": positions,
    "bert_mapping": bert_mapping,
    "tiles": tiles,
    "explain": explain,
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
