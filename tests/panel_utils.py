"""Read what a panel of :mod:`attn.viz.widgets` shows: its figure is an ``<img>`` in an ``HTML`` widget."""

from __future__ import annotations

import base64
import html
import re

IMG = re.compile(r'^<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)" width="(\d+)" height="(\d+)" ')


def shown(figure) -> tuple[bytes, str, int, int]:
    """The PNG a panel's figure shows, its alt text and its width and height in CSS pixels (an empty PNG when
    hidden): the PNG holds ``attn.viz.widgets.SCALE`` times as many pixels each way, for high-density screens."""
    from attn.viz.widgets import SCALE

    if figure.value == "":
        assert figure.layout.display == "none", "an empty figure must be hidden (no broken-image icon)"
        return b"", "", 0, 0
    match = IMG.match(figure.value)
    assert match, f"not a panel image: {figure.value[:120]!r}"
    png = base64.b64decode(match[1])
    assert png[:4] == b"\x89PNG" and figure.layout.display is None
    width, height = int(match[3]), int(match[4])
    drawn = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (drawn[0] // SCALE, drawn[1] // SCALE), (width, height, drawn)
    return png, html.unescape(match[2]), width, height
