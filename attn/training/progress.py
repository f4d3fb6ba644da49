"""Progress bars for long work: tqdm's notebook bar in Jupyter, a text bar in a terminal.

``ATTN_PROGRESS=0`` (or ``false``, ``off``, ``no``) in the environment turns every bar off. ``make test`` and ``make
execute`` set it (and so does the test suite's ``conftest.py``), so the chapters' saved outputs, which nbval
compares, never hold a bar: its text is timings, different on every run. A reader's kernel has no such variable and
shows the bars.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from tqdm.auto import tqdm

__all__ = ["progress_bar"]


def progress_bar(iterable: Iterable | None = None, *, show: bool = True, **options: object) -> tqdm:
    """``tqdm(iterable, **options)``, hidden when ``show`` is False or ``ATTN_PROGRESS`` is 0 (false, off, no)."""
    hidden = not show or os.environ.get("ATTN_PROGRESS", "").strip().lower() in ("0", "false", "off", "no")
    return tqdm(iterable, disable=hidden, **options)
