"""ipywidgets panels for a live kernel. Each redraws a plot from :mod:`attn.viz.plots` as a PNG image.

The figure is drawn off-screen (``matplotlib.figure.Figure``, not pyplot) and shown as an ``<img>`` in an
``HTML`` widget, at its own pixel size and with a text alternative that says what it shows (``Image`` widgets
have no alt text). The panel's last state is saved with the notebook and shows in the static book (with a note
that its controls need a kernel); JupyterLab draws a panel only once its cell has run. Precomputed weights that
should stay interactive in the static book go to :func:`attn.viz.attention_viewer` instead.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from attn._checks import check, check_in_range, checked, is_real_number
from attn.data.babi import split_sentences
from attn.data.translation import Translation
from attn.functional import content_addressing, dot_product_scores, softmax
from attn.memory.addressing import interpolate, sharpen, shift
from attn.viz.images import image_attention
from attn.viz.plots import bar_weights, heatmap, hop_heatmap, lookup_figure


class Answer(Protocol):
    """What :func:`memory_panel` shows of an answer (:class:`attn.memn2n.Answer` has it): views read results, they
    import no model."""

    answer: str
    probability: float
    sentences: list[str]
    hop_attention: torch.Tensor
    unknown: list[str]


class Look(Protocol):
    """What :func:`scene_panel` shows of a look at a scene (:class:`attn.vision.Look` has it): its ``answer`` id,
    its ``attention (G, G)`` map and, for a glimpsing model, its ``boxes``."""

    answer: int
    attention: torch.Tensor
    boxes: torch.Tensor | None


__all__ = [
    "softmax_panel",
    "lookup_panel",
    "translation_panel",
    "addressing_panel",
    "memory_panel",
    "ntm_addressing_panel",
    "head_panel",
    "sampling_panel",
    "scene_panel",
]


@dataclass(frozen=True)
class Frame:
    """What a panel shows after an input: the plot (empty after a bad input), the text above it, the plot's alt."""

    png: bytes
    readout: str
    alt: str = ""

    def __post_init__(self) -> None:
        check(not self.png or self.alt.strip(),
              "alt must say what the plot shows (a plot without it is hidden from screen readers)")  # fmt: skip


LEGIBLE_SHARE = 0.8  # a plot is never shown under 80 % of its size: its 10-px labels stay at 8 px or more
SCALE = 2  # device pixels per CSS pixel: sharp on high-density screens (the <img> is shown at half its pixel size)


def _png(draw: Callable[[Figure], None], size: tuple[float, float]) -> bytes:
    """The figure of ``size`` inches at 80 CSS pixels per inch, drawn at ``SCALE`` times that."""
    fig = Figure(figsize=size, dpi=80 * SCALE)
    draw(fig)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _weights_table(labels: Sequence[str], weights: torch.Tensor) -> str:
    cells = "".join(
        f"<td style='padding:0 6px'>{html.escape(str(name))}<br><b>{float(w):.3f}</b></td>"
        for name, w in zip(labels, weights, strict=True)
    )
    return f"<table><tr>{cells}</tr></table>"


def _error_html(error: ValueError) -> str:
    """A bad input's message, shown in the panel instead of raised."""
    return f"<span style='color:#b00'>{html.escape(str(error))}</span>"


def _unknown_html(words: Sequence[str]) -> str:
    """A line naming the words read as ``<unk>`` (empty if there are none)."""
    if not words:
        return ""
    return f"<br><i>not in the vocabulary, read as &lt;unk&gt;: {', '.join(html.escape(w) for w in words)}</i>"


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height in pixels, from a PNG's header (its IHDR chunk)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _img(png: bytes, alt: str) -> str:
    """An ``<img>`` of ``png`` at its CSS size (its pixel size / ``SCALE``; never stretched to the notebook's
    width), with ``alt``; in a narrower column it shrinks to at most ``LEGIBLE_SHARE`` of that size (its text
    stays at 8 px or more; the online book's panel then scrolls inside its box)."""
    width, height = (n // SCALE for n in _png_size(png))
    source = base64.b64encode(png).decode("ascii")
    return (
        f'<img src="data:image/png;base64,{source}" alt="{html.escape(alt, quote=True)}" width="{width}" '
        f'height="{height}" style="max-width:100%;height:auto;min-width:{math.ceil(LEGIBLE_SHARE * width)}px">'
    )


def _show(figure: widgets.HTML, frame: Frame) -> None:
    """Show the frame's plot, or hide the figure when there is none (a bad input: the message above says why,
    and no broken-image icon appears)."""
    if not frame.png:
        figure.value = ""
        figure.layout.display = "none"
        return
    figure.value = _img(frame.png, frame.alt)
    figure.layout.display = None


def _strongest(weights: torch.Tensor, rows: Sequence[str], cols: Sequence[str], limit: int = 10) -> str:
    """Each row's largest weight in words, for alt texts: "ich → I (0.91); bin → am (0.85); ..."."""
    best, where = weights.max(-1)
    parts = [f"{r} → {cols[int(j)]} ({float(w):.2f})" for r, w, j in zip(rows, best, where, strict=True)]
    more = f"; and {len(parts) - limit} more rows" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def _listed(labels: Sequence[str], weights: torch.Tensor) -> str:
    """Labels with their weights, for alt texts: "a 0.67, b 0.24, c 0.09"."""
    return ", ".join(f"{name} {float(w):.2f}" for name, w in zip(labels, weights, strict=True))


def _panel(controls: list[widgets.Widget], render: Callable[[], Frame]) -> widgets.VBox:
    figure = widgets.HTML()
    readout = widgets.HTML()

    def update(_change: object = None) -> None:
        frame = render()
        readout.value = frame.readout
        _show(figure, frame)

    for control in controls:
        control.observe(update, names="value")
    update()
    return widgets.VBox([*controls, readout, figure])


# --- the checks at each door: a panel draws its first frame while it is built, so panels are not @checked (the
# library functions that frame calls, softmax, content_addressing, the plots, keep their own checks); each calls its
# door on its first line. Panels that take the caller's functions (translate, answer, read, sample) could not be
# @checked anyway: the caller's code would run unchecked inside.


def _check_slider(name: str, value: object, low: float, high: float) -> None:
    ok = is_real_number(value) and low <= value <= high
    check(ok, lambda: f"{name} must be a number in [{low:g}, {high:g}] (the slider's range), got {value!r}")


def _softmax_panel_args(logits: torch.Tensor, labels: Sequence[str], temperature: float = 1.0) -> None:
    shape = tuple(torch.as_tensor(logits, dtype=torch.float32).shape)
    check(labels is not None and len(shape) == 1 and len(labels) == shape[0],
          lambda: f"logits must be 1-D with one label each, got logits {shape} and labels {labels!r}")  # fmt: skip
    _check_slider("temperature", temperature, 0.01, 100)


def _lookup_panel_args(
    keys: torch.Tensor, labels: Sequence[str], query: Sequence[float] = (1.0, 0.0), temperature: float = 1.0
) -> None:
    shape = tuple(torch.as_tensor(keys, dtype=torch.float32).shape)
    check(labels is not None and len(shape) == 2 and shape[1] == 2 and len(labels) == shape[0],
          lambda: f"keys must have shape (M, 2) with one label per key, got {shape} and labels {labels!r}")  # fmt: skip
    coordinates = tuple(float(c) for c in query)
    check(len(coordinates) == 2,
          f"query must have 2 coordinates (q_x, q_y), got {len(coordinates)}: {coordinates}")  # fmt: skip
    _check_slider("temperature", temperature, 0.01, 100)


def _addressing_panel_args(
    key: torch.Tensor, memory: torch.Tensor, labels: Sequence[str], strength: float = 1.0
) -> None:
    k, M = (tuple(torch.as_tensor(x, dtype=torch.float32).shape) for x in (key, memory))
    check(len(k) == 1 and len(M) == 2 and M[1] == k[0] and len(labels) == M[0],
          f"need key (d,), memory (M, d) and M labels, got key {k}, memory {M} and {len(labels)} labels")  # fmt: skip
    _check_slider("strength", strength, 0, 50)


def _ntm_addressing_panel_args(
    key: torch.Tensor, memory: torch.Tensor, previous: torch.Tensor, labels: Sequence[str]
) -> None:
    k, M, w = (tuple(torch.as_tensor(x, dtype=torch.float32).shape) for x in (key, memory, previous))
    N = M[0] if len(M) == 2 else -1
    check(len(k) == 1 and N >= 3 and M[1] == k[0] and w == (N,) and len(labels) == N,
          f"need key (W,), memory (N, W) with N >= 3, previous (N,) and N labels, got key {k}, memory {M}, "
          f"previous {w} and {len(labels)} labels")  # fmt: skip


def _scene_panel_args(
    images: torch.Tensor,
    answer: Callable[[torch.Tensor, int], Look],
    questions: Sequence[str],
    answers: Sequence[str],
    truth: Callable[[int, int], str | None],
) -> None:
    check(isinstance(images, torch.Tensor) and images.dim() == 4 and len(images) > 0,
          lambda: f"images must be a non-empty (N, C, H, W) tensor, "
          f"got {getattr(images, 'shape', images)!r}")  # fmt: skip
    check(questions and answers, "questions and answers must name at least one question and one answer")


# --- the panels ----------------------------------------------------------------------------------------------------


def _temperature_slider(value: float) -> widgets.FloatLogSlider:
    return widgets.FloatLogSlider(
        value=value,
        base=10,
        min=-2,
        max=2,
        step=0.05,
        description="temperature τ",
        continuous_update=True,
        style={"description_width": "initial"},
    )


def softmax_panel(logits: torch.Tensor, labels: Sequence[str], temperature: float = 1.0) -> widgets.VBox:
    """A temperature slider over ``softmax(logits / τ)``: a bar chart and the exact weights."""
    _softmax_panel_args(logits, labels, temperature)
    logits = torch.as_tensor(logits, dtype=torch.float32)
    slider = _temperature_slider(temperature)

    def render() -> Frame:
        p = softmax(logits, temperature=slider.value)
        title = f"softmax(x / {slider.value:.2f})"
        png = _png(lambda fig: bar_weights(p, labels, ax=fig.add_subplot(), title=title), (4.5, 2.6))
        return Frame(png, _weights_table(labels, p), f"Bar chart of {title}: {_listed(labels, p)}")

    return _panel([slider], render)


def lookup_panel(
    keys: torch.Tensor,
    labels: Sequence[str],
    query: Sequence[float] = (1.0, 0.0),
    temperature: float = 1.0,
) -> widgets.VBox:
    """Move a 2-D query with sliders and watch ``p = softmax(K q / τ)`` and the weighted sum ``pᵀK``."""
    _lookup_panel_args(keys, labels, query, temperature)
    keys = torch.as_tensor(keys, dtype=torch.float32)  # (M, 2)
    query = tuple(float(c) for c in query)
    lim = max(float(keys.abs().max()), *(abs(c) for c in query)) * 1.5  # the query always fits the sliders
    sliders = [
        widgets.FloatSlider(value=float(value), min=-lim, max=lim, step=0.05, description=name)
        for name, value in zip(("q_x", "q_y"), query, strict=True)
    ]
    tau = _temperature_slider(temperature)

    def render() -> Frame:
        q = torch.tensor([s.value for s in sliders])
        p = softmax(dot_product_scores(q[None, :], keys)[0], temperature=tau.value)  # (M,)
        out = p @ keys  # (2,)
        png = _png(lambda fig: lookup_figure(keys, q, p, out, labels, ax=fig.add_subplot()), (4.4, 4.4))
        alt = (
            f"The keys as points in the plane, sized by their weight ({_listed(labels, p)}), the query at "
            f"({q[0]:.2f}, {q[1]:.2f}) and the output, their weighted average, at ({out[0]:.2f}, {out[1]:.2f})"
        )
        return Frame(png, _weights_table(labels, p), alt)

    return _panel([*sliders, tau], render)


def _alignment_png(
    weights: torch.Tensor,
    x_tokens: Sequence[str],
    y_tokens: Sequence[str],
    title: str,
    axes: tuple[str, str] = ("key", "query"),
) -> bytes:
    Tq, Tk = weights.shape
    size = (0.45 * Tk + 2.4, 0.4 * Tq + 1.6)

    def draw(fig: Figure) -> None:
        heatmap(weights, x_tokens, y_tokens, ax=fig.add_subplot(), title=title, vmax=1.0, xlabel=axes[0],
                ylabel=axes[1])  # fmt: skip

    return _png(draw, size)


def _follow(choose: widgets.Dropdown, text: widgets.Text) -> None:
    """Picking an example types it into ``text``; typing something else clears the pick (no stale example)."""

    def picked(change: dict) -> None:
        if change["new"] is not None:
            text.value = change["new"]

    def typed(change: dict) -> None:
        if choose.value is not None and change["new"] != choose.value:
            choose.value = None

    choose.observe(picked, names="value")
    text.observe(typed, names="value")


def translation_panel(
    translate: Callable[[str], Translation], examples: Sequence[str], value: str | None = None
) -> widgets.VBox:
    """Pick an example or type a sentence: its translation and alignment heatmap.

    ``translate(sentence)`` returns a :class:`attn.data.translation.Translation`; unknown words are named under the
    translation, and a ``ValueError`` (empty or over-long input) is shown as a message, never raised.
    """
    check(examples, "examples must hold at least one sentence for the drop-down")
    choose = widgets.Dropdown(options=list(examples), value=examples[0], description="example",
                              layout={"width": "95%"})  # fmt: skip
    text = widgets.Text(value=value if value is not None else examples[0], description="source",
                        continuous_update=False, layout={"width": "95%"})  # fmt: skip
    _follow(choose, text)

    def render() -> Frame:
        try:
            result = translate(text.value)
        except ValueError as error:
            return Frame(b"", _error_html(error))
        readout = f"<b>{html.escape(' '.join(result.target) or '(nothing)')}</b>"
        readout += _unknown_html(result.unknown)
        if result.alignment is None:
            return Frame(b"", readout + "<br>(this model has no attention: no alignment to show)")
        if not result.finished:
            readout += "<br><i>cut off: the model did not end the sentence</i>"
        source, rows = [*result.source, "<eos>"], result.row_labels()
        png = _alignment_png(result.alignment, source, rows, "alignment",
                             ("English (source)", "German (translation)"))  # fmt: skip
        alt = ("Alignment heatmap, German translation (rows) by English source (columns). Where each German word "
               f"looks most: {_strongest(result.alignment, rows, source)}")  # fmt: skip
        return Frame(png, readout, alt)

    return _panel([choose, text], render)


def addressing_panel(
    key: torch.Tensor, memory: torch.Tensor, labels: Sequence[str], strength: float = 1.0
) -> widgets.VBox:
    """A sharpness slider β over content addressing ``w = softmax(β cos(key, M_i))``: uniform at β = 0,
    one memory row as β grows."""
    _addressing_panel_args(key, memory, labels, strength)
    key, memory = torch.as_tensor(key, dtype=torch.float32), torch.as_tensor(memory, dtype=torch.float32)
    slider = widgets.FloatSlider(value=strength, min=0.0, max=50.0, step=0.5, description="sharpness β",
                                 style={"description_width": "initial"})  # fmt: skip

    def render() -> Frame:
        _, w = content_addressing(key, memory, slider.value)
        title = f"w = softmax({slider.value:g} · cos(k, M_i))"
        png = _png(lambda fig: bar_weights(w, labels, ax=fig.add_subplot(), title=title), (4.8, 2.6))
        return Frame(png, _weights_table(labels, w), f"Bar chart of {title}: {_listed(labels, w)}")

    return _panel([slider], render)


def _soft_shift_args(offset: float) -> None:
    check_in_range("offset", offset, -1, 1)


@checked(_soft_shift_args)
def soft_shift(offset: float) -> torch.Tensor:
    """A shift distribution over offsets -1, 0, +1 for a fractional ``offset`` in [-1, 1]: 0.25 -> [0, 0.75, 0.25]."""
    return torch.tensor([max(-offset, 0.0), 1 - abs(offset), max(offset, 0.0)])


def ntm_addressing_panel(
    key: torch.Tensor, memory: torch.Tensor, previous: torch.Tensor, labels: Sequence[str]
) -> widgets.VBox:
    """Sliders for an NTM head's key strength β, gate g, shift and γ (Graves et al. 2014, eqs. 5-9): the weighting
    after each of the four steps, drawn two by two."""
    _ntm_addressing_panel_args(key, memory, previous, labels)
    key, memory = torch.as_tensor(key, dtype=torch.float32), torch.as_tensor(memory, dtype=torch.float32)
    previous = torch.as_tensor(previous, dtype=torch.float32)
    style = {"description_width": "initial"}
    sliders = [
        widgets.FloatSlider(value=5.0, min=0.0, max=50.0, step=0.5, description="key strength β", style=style),
        widgets.FloatSlider(value=1.0, min=0.0, max=1.0, step=0.05, description="gate g (1 = content)", style=style),
        widgets.FloatSlider(value=0.0, min=-1.0, max=1.0, step=0.05, description="shift", style=style),
        widgets.FloatSlider(value=1.0, min=1.0, max=20.0, step=0.5, description="sharpening γ", style=style),
    ]

    def render() -> Frame:
        beta, gate, offset, gamma = (control.value for control in sliders)
        _, content = content_addressing(key, memory, beta)
        gated = interpolate(content, previous, gate)
        shifted = shift(gated, soft_shift(offset))
        sharp = sharpen(shifted, gamma)
        steps = [("content (eq. 5)", content), ("gated (eq. 7)", gated), ("shifted (eq. 8)", shifted),
                 ("sharpened (eq. 9)", sharp)]  # fmt: skip

        def draw(fig: Figure) -> None:
            for k, (title, w) in enumerate(steps):  # two by two: each panel wide enough for its row labels
                bar_weights(w, labels, ax=fig.add_subplot(2, 2, k + 1), title=title)

        alt = "Four bar charts, the weighting after each step. " + ". ".join(
            f"{title}: {_listed(labels, w)}" for title, w in steps
        )
        return Frame(_png(draw, (8.4, 4.8)), "final weighting:" + _weights_table(labels, sharp), alt)

    return _panel(sliders, render)


def memory_panel(
    answer: Callable[[Sequence[str], str], Answer], stories: Sequence[tuple[Sequence[str], str]]
) -> widgets.VBox:
    """Pick a story or type one and a question: the answer and each hop's attention. A sentence ends at a line
    break or after ``.``, ``!`` or ``?`` (:func:`attn.data.babi.split_sentences`); the boxes update when you leave
    them (Tab, or a click outside), the question box also on Enter.

    ``answer(sentences, question)`` returns an :class:`attn.memn2n.Answer`; unknown words are named, and a
    ``ValueError`` (an empty story or question) is shown as a message, never raised.
    """
    check(stories, "stories must hold at least one (sentences, question) pair for the drop-down")
    names = [f"{i + 1}: {question[:1].upper()}{question[1:]}" for i, (_, question) in enumerate(stories)]
    choose = widgets.Dropdown(options=list(zip(names, range(len(stories)), strict=True)), value=0,
                              description="example", layout={"width": "95%"})  # fmt: skip
    story = widgets.Textarea(value="\n".join(stories[0][0]), description="story", rows=8,
                             continuous_update=False, layout={"width": "95%"})  # fmt: skip
    question = widgets.Text(value=stories[0][1], description="question", continuous_update=False,
                            layout={"width": "95%"})  # fmt: skip

    def pick(change: dict) -> None:
        if change["new"] is not None:
            sentences, asked = stories[change["new"]]
            story.value, question.value = "\n".join(sentences), asked

    def typed(box: int) -> Callable[[dict], None]:
        def clear_pick(change: dict) -> None:  # the text is no longer the example picked
            picked = choose.value
            if picked is not None and change["new"] != ("\n".join(stories[picked][0]), stories[picked][1])[box]:
                choose.value = None

        return clear_pick

    choose.observe(pick, names="value")
    story.observe(typed(0), names="value")
    question.observe(typed(1), names="value")

    def render() -> Frame:
        sentences = split_sentences(story.value)  # a line break or . ! ? ends a sentence
        try:
            result = answer(sentences, question.value)
        except ValueError as error:
            return Frame(b"", _error_html(error))
        readout = f"answer: <b>{html.escape(result.answer)}</b> (p = {result.probability:.2f})"
        if len(sentences) == 1:
            readout += ("<br><i>the story is one sentence, so the memory has one slot: end each sentence with a "
                        "full stop, or put one per line</i>")  # fmt: skip
        readout += _unknown_html(result.unknown)
        K, M = result.hop_attention.shape
        size = (0.7 * K + 0.09 * max(len(s) for s in result.sentences) + 2.5, max(0.32 * M + 1.4, 2.4))
        png = _png(lambda fig: hop_heatmap(result.hop_attention, result.sentences, ax=fig.add_subplot()), size)
        hops = [f"hop {k + 1}" for k in range(K)]
        alt = ("Heatmap of each hop's attention (columns) over the story's sentences (rows). Where each hop looks "
               f"most: {_strongest(result.hop_attention, hops, result.sentences)}")  # fmt: skip
        return Frame(png, readout, alt)

    return _panel([choose, story, question], render)


def head_panel(
    read: Callable[[str], tuple[Sequence[torch.Tensor], Sequence[str]]],
    examples: Sequence[str],
    layer: int = 0,
    head: int = 0,
) -> widgets.VBox:
    """Type a sentence (or pick one) and choose a layer and a head: that head's attention heatmap.

    ``read(sentence)`` returns a tuple over layers of ``(1, H, T, T)`` weights and the T tokens; a
    ``ValueError`` it raises is shown as a message, never raised.
    """
    check(examples, "examples must hold at least one sentence for the drop-down")
    attention, _ = read(examples[0])
    L, H = len(attention), attention[0].shape[1]
    check(0 <= layer < L and 0 <= head < H,
          f"layer must be in 0..{L - 1} and head in 0..{H - 1}, got layer={layer}, head={head}")  # fmt: skip
    choose = widgets.Dropdown(options=list(examples), value=examples[0], description="example",
                              layout={"width": "95%"})  # fmt: skip
    text = widgets.Text(value=examples[0], description="sentence", continuous_update=False,
                        layout={"width": "95%"})  # fmt: skip
    _follow(choose, text)
    layer_slider = widgets.IntSlider(value=layer + 1, min=1, max=L, description="layer")
    head_slider = widgets.IntSlider(value=head + 1, min=1, max=H, description="head")

    def render() -> Frame:
        try:
            attention, tokens = read(text.value)
        except ValueError as error:
            return Frame(b"", _error_html(error))
        weights = attention[layer_slider.value - 1][0, head_slider.value - 1]  # (T, T)
        title = f"layer {layer_slider.value}, head {head_slider.value}"
        alt = (f"Heatmap of {title}: each token (rows) over the tokens it attends to (columns). Where each token "
               f"looks most: {_strongest(weights, tokens, tokens)}")  # fmt: skip
        return Frame(_alignment_png(weights, tokens, tokens, title), f"<b>{len(tokens)} tokens</b>", alt)

    return _panel([choose, text, layer_slider, head_slider], render)


def sampling_panel(sample: Callable[[float], Sequence[str]], temperature: float = 1.0) -> widgets.VBox:
    """A temperature slider over text a model writes: ``sample(τ)`` returns sentences drawn at temperature τ."""
    _check_slider("temperature", temperature, 0.01, 100)
    slider = _temperature_slider(temperature)
    out = widgets.HTML()

    def update(_change: object = None) -> None:
        try:
            written = sample(slider.value)
        except ValueError as error:
            out.value = _error_html(error)
            return
        lines = "".join(f"<li>{html.escape(s) or '(empty)'}</li>" for s in written)
        out.value = f"<b>τ = {slider.value:.2f}</b><ol>{lines}</ol>"

    slider.observe(update, names="value")
    update()
    return widgets.VBox([slider, out])


def scene_panel(
    images: torch.Tensor,
    answer: Callable[[torch.Tensor, int], Look],
    questions: Sequence[str],
    answers: Sequence[str],
    truth: Callable[[int, int], str | None],
) -> widgets.VBox:
    """Pick a scene and a question: the model's answer and where it looked, drawn over the image.

    ``images (N, C, H, W)``; ``answer(image, question)`` returns an :class:`attn.vision.Look` (its ``answer`` an id
    into ``answers``, its ``attention`` a ``(G, G)`` map, optional glimpse ``boxes``); ``questions`` names the
    question ids; ``truth(i, question)`` is the right answer for scene ``i``, or None when the question has none
    there (no object of that colour): the model answers anyway, and the panel says so.
    """
    _scene_panel_args(images, answer, questions, answers, truth)
    scene = widgets.IntSlider(value=0, min=0, max=len(images) - 1, description="scene", continuous_update=False)
    question = widgets.Dropdown(options=[(q, k) for k, q in enumerate(questions)], value=0, description="question",
                                layout={"width": "60%"})  # fmt: skip

    def render() -> Frame:
        look = answer(images[scene.value], question.value)
        right = truth(scene.value, question.value)
        said = answers[look.answer]
        if right is None:
            verdict = "there is no such object here: the model had to answer anyway"
        else:
            verdict = f"right: <b>{html.escape(right)}</b> ({'correct' if said == right else 'wrong'})"
        readout = f"{html.escape(questions[question.value])} model: <b>{html.escape(said)}</b>; {verdict}"

        def draw(fig: Figure) -> None:
            ax_image, ax_map = fig.subplots(1, 2)
            image_attention(images[scene.value], None, ax=ax_image, title="the scene", boxes=look.boxes)
            image_attention(images[scene.value], look.attention, ax=ax_map, title="where it looked")

        alt = (f"Scene {scene.value} beside the same scene with the model's attention drawn over it (brighter: "
               f"more attention). {questions[question.value]} The model answers {said}.")  # fmt: skip
        return Frame(_png(draw, (5.0, 2.7)), readout, alt)

    return _panel([scene, question], render)
