"""Architecture schematics, one per mechanism, drawn in code as small hand-built SVG files.

Every function returns the SVG text of one figure, the same bytes on every run: no matplotlib, no fonts,
images or links from outside, nothing downloaded. The labels use the names the code uses (``W_a``, ``E[k]``,
``W_q``, ``norm1``, shapes such as ``(B, H, T, d_k)``), and ``tests/test_diagrams.py`` checks them against the
modules. ``python -m attn.viz.diagrams notebooks/figures`` writes the committed copies the chapters show.
"""

from __future__ import annotations

import argparse
import numbers
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

__all__ = ["FIGURES", "bahdanau", "memory_hops", "soft_dictionary", "multi_head", "transformer", "bert_vs_gpt"]

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


def _arrow(*points: tuple[float, float], width: float = 1.5, head: bool = True) -> str:
    """A polyline through ``points`` with an arrowhead at the last one (``head=False``: a plain line)."""
    path = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
    end = "url(#arrow)" if head else None
    return _tag("polyline", points=path, fill="none", stroke=INK, stroke_width=width, marker_end=end)


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


FIGURES: dict[str, Callable[[], str]] = {
    "bahdanau": bahdanau,
    "memory_hops": memory_hops,
    "soft_dictionary": soft_dictionary,
    "multi_head": multi_head,
    "transformer": transformer,
    "bert_vs_gpt": bert_vs_gpt,
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
    """``python -m attn.viz.diagrams OUTDIR [--force]``; returns the exit status (1: a differing file was kept)."""
    parser = argparse.ArgumentParser(
        prog="python -m attn.viz.diagrams",
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
