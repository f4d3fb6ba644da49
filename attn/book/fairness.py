"""What each side of a comparison got: the budget and the search of its settings, shown as one small table.

An expert reading "A beats B" first asks whether B had the same chance: the same data and steps, and the same
search of its own natural knob (a learning rate, a decay, a length penalty), chosen by the same rule on held-out
data. A chapter that compares arms shows it::

    show_arms([
        Arm("softmax", parameters=0, steps=0, data="N = 4 … 64 pairs",
            searched="scale ∈ 20 values", chosen="scale = 4 (held-out recall)"),
        Arm("delta rule", parameters=0, steps=0, data="N = 4 … 64 pairs",
            searched="β ∈ {0.25, 0.5, 1}", chosen="β = 0.5 (held-out recall)"),
    ])

The table is text (what nbval compares) and HTML that scrolls inside its own box on a narrow screen.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Arm", "ArmsTable", "show_arms"]

COLUMNS = ("arm", "parameters", "steps", "data", "settings searched", "setting chosen")


@dataclass(frozen=True)
class Arm:
    """One side of a comparison: its name, its budget, the settings searched and the one chosen (and by what)."""

    name: str
    parameters: int | str
    steps: int | str
    data: str
    searched: str
    chosen: str

    def cells(self) -> tuple[str, ...]:
        """The row as text: counts with thousands separators."""
        count = lambda x: f"{x:,}" if isinstance(x, int) else str(x)  # noqa: E731
        return (self.name, count(self.parameters), count(self.steps), self.data, self.searched, self.chosen)


@dataclass(frozen=True)
class ArmsTable:
    """The arms of one comparison, shown as a text table and as HTML."""

    arms: tuple[Arm, ...]

    def __str__(self) -> str:
        rows = [COLUMNS, *(arm.cells() for arm in self.arms)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        lines = [" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.insert(1, "-+-".join("-" * w for w in widths))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in arm.cells()) + "</tr>" for arm in self.arms
        )
        return (
            "<div class='attn-table' style='overflow-x:auto;max-width:100%'>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}


def show_arms(arms: Iterable[Arm]) -> ArmsTable:
    """The table of what each arm of a comparison got (display it, or print it for the text alone)."""
    arms = tuple(arms)
    if len(arms) < 2:
        raise ValueError(f"arms must hold at least two sides of a comparison, got {len(arms)}")
    for arm in arms:
        if not isinstance(arm, Arm):
            raise ValueError(f"arms must be Arm records, got {type(arm).__name__}")
        if not arm.searched.strip() or not arm.chosen.strip():
            raise ValueError(f"arm {arm.name!r}: say which settings were searched and which was chosen (and how)")
    return ArmsTable(arms)
