"""ipywidgets panels for a live kernel. Each redraws a plot from :mod:`attn.viz.plots` as a PNG image.

The figure is drawn off-screen (``matplotlib.figure.Figure``, not pyplot) and shown in an ``Image``
widget, so the panel's last state is saved with the notebook and still shows in the static book.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Sequence

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from attn.additive import Translation
from attn.functional import dot_product_scores, softmax
from attn.viz.plots import bar_weights, heatmap, lookup_figure

__all__ = ["softmax_panel", "lookup_panel", "snapshot_panel", "translation_panel"]


def _png(draw: Callable[[Figure], None], size: tuple[float, float]) -> bytes:
    fig = Figure(figsize=size, dpi=80)
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


def _panel(
    controls: list[widgets.Widget],
    render: Callable[[], tuple[bytes, str]],
) -> widgets.VBox:
    image = widgets.Image(format="png")
    readout = widgets.HTML()

    def update(_change: object = None) -> None:
        image.value, readout.value = render()

    for control in controls:
        control.observe(update, names="value")
    update()
    return widgets.VBox([*controls, readout, image])


def _temperature_slider(value: float) -> widgets.FloatLogSlider:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.01 <= value <= 100:
        raise ValueError(f"temperature must be a number in [0.01, 100] (the slider's range), got {value!r}")
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
    logits = torch.as_tensor(logits, dtype=torch.float32)
    if labels is None or logits.dim() != 1 or len(labels) != logits.numel():
        raise ValueError(
            f"logits must be 1-D with one label each, got logits {tuple(logits.shape)} and labels {labels!r}"
        )
    slider = _temperature_slider(temperature)

    def render() -> tuple[bytes, str]:
        p = softmax(logits, temperature=slider.value)
        title = f"softmax(x / {slider.value:.2f})"
        png = _png(lambda fig: bar_weights(p, labels, ax=fig.add_subplot(), title=title), (4.5, 2.6))
        return png, _weights_table(labels, p)

    return _panel([slider], render)


def lookup_panel(
    keys: torch.Tensor,
    labels: Sequence[str],
    query: Sequence[float] = (1.0, 0.0),
    temperature: float = 1.0,
) -> widgets.VBox:
    """Move a 2-D query with sliders and watch ``p = softmax(K q / τ)`` and the weighted sum ``pᵀK``."""
    keys = torch.as_tensor(keys, dtype=torch.float32)
    if labels is None or keys.dim() != 2 or keys.shape[1] != 2 or len(labels) != keys.shape[0]:
        raise ValueError(
            f"keys must have shape (M, 2) with one label per key, got {tuple(keys.shape)} and labels {labels!r}"
        )
    query = tuple(float(c) for c in query)
    if len(query) != 2:
        raise ValueError(f"query must have 2 coordinates (q_x, q_y), got {len(query)}: {query}")
    lim = max(float(keys.abs().max()), *(abs(c) for c in query)) * 1.5  # the query always fits the sliders
    sliders = [
        widgets.FloatSlider(value=float(value), min=-lim, max=lim, step=0.05, description=name)
        for name, value in zip(("q_x", "q_y"), query, strict=True)
    ]
    tau = _temperature_slider(temperature)

    def render() -> tuple[bytes, str]:
        q = torch.tensor([s.value for s in sliders])
        p = softmax(dot_product_scores(q[None, :], keys)[0], temperature=tau.value)  # (M,)
        out = p @ keys  # (2,)
        png = _png(lambda fig: lookup_figure(keys, q, p, out, labels, ax=fig.add_subplot()), (4.4, 4.4))
        return png, _weights_table(labels, p)

    return _panel([*sliders, tau], render)


def _alignment_png(weights: torch.Tensor, x_tokens: Sequence[str], y_tokens: Sequence[str], title: str) -> bytes:
    Tq, Tk = weights.shape
    size = (0.45 * Tk + 2.4, 0.4 * Tq + 1.6)

    def draw(fig: Figure) -> None:
        heatmap(weights, x_tokens, y_tokens, ax=fig.add_subplot(), title=title, vmax=1.0)

    return _png(draw, size)


def snapshot_panel(
    snapshots: Sequence[torch.Tensor],
    labels: Sequence[str],
    x_tokens: Sequence[str],
    y_tokens: Sequence[str],
    index: int = -1,
) -> widgets.VBox:
    """A slider over saved ``(Tq, Tk)`` weight matrices (e.g. one per training checkpoint): watch them change."""
    if not snapshots or len(labels) != len(snapshots):
        raise ValueError(f"need one label per snapshot, got {len(snapshots)} snapshots and {len(labels)} labels")
    shapes = {tuple(s.shape) for s in snapshots}
    if shapes != {(len(y_tokens), len(x_tokens))}:
        raise ValueError(
            f"every snapshot must have shape (len(y_tokens), len(x_tokens)) = ({len(y_tokens)}, {len(x_tokens)}), "
            f"got {sorted(shapes)}"
        )
    slider = widgets.IntSlider(value=range(len(snapshots))[index], min=0, max=len(snapshots) - 1,
                               description="snapshot", continuous_update=True)  # fmt: skip

    def render() -> tuple[bytes, str]:
        label = labels[slider.value]
        return _alignment_png(snapshots[slider.value], x_tokens, y_tokens, label), f"<b>{html.escape(label)}</b>"

    return _panel([slider], render)


def translation_panel(
    translate: Callable[[str], Translation], examples: Sequence[str], value: str | None = None
) -> widgets.VBox:
    """Pick an example or type a sentence: its translation and alignment heatmap.

    ``translate(sentence)`` returns a :class:`attn.additive.Translation`; unknown words are named under the
    translation, and a ``ValueError`` (empty or over-long input) is shown as a message, never raised.
    """
    if not examples:
        raise ValueError("examples must hold at least one sentence for the drop-down")
    choose = widgets.Dropdown(options=list(examples), value=examples[0], description="example",
                              layout={"width": "95%"})  # fmt: skip
    text = widgets.Text(value=value if value is not None else examples[0], description="source",
                        continuous_update=False, layout={"width": "95%"})  # fmt: skip
    choose.observe(lambda change: setattr(text, "value", change["new"]), names="value")

    def render() -> tuple[bytes, str]:
        try:
            result = translate(text.value)
        except ValueError as error:
            return b"", f"<span style='color:#b00'>{html.escape(str(error))}</span>"
        readout = f"<b>{html.escape(' '.join(result.target) or '(nothing)')}</b>"
        if result.unknown:
            words = ", ".join(html.escape(w) for w in result.unknown)
            readout += f"<br><i>not in the vocabulary, read as &lt;unk&gt;: {words}</i>"
        if result.alignment is None:
            return b"", readout + "<br>(this model has no attention: no alignment to show)"
        if not result.finished:
            readout += "<br><i>cut off: the model did not end the sentence</i>"
        png = _alignment_png(result.alignment, [*result.source, "<eos>"], result.row_labels(), "alignment")
        return png, readout

    return _panel([choose, text], render)
