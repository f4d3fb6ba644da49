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

from collections.abc import Iterable
from dataclasses import dataclass

from attn._checks import check
from attn.book.show import Table, table

__all__ = ["Arm", "show_arms"]

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


def show_arms(arms: Iterable[Arm]) -> Table:
    """The table of what each arm of a comparison got (display it, or print it for the text alone)."""
    arms = tuple(arms)
    check(len(arms) >= 2, f"arms must hold at least two sides of a comparison, got {len(arms)}")
    strangers = [arm for arm in arms if not isinstance(arm, Arm)]
    check(not strangers, lambda: f"arms must be Arm records, got {type(strangers[0]).__name__}")
    vague = [arm for arm in arms if not arm.searched.strip() or not arm.chosen.strip()]
    check(not vague, lambda: f"arm {vague[0].name!r}: say which settings were searched and which was chosen (and how)")
    return table(COLUMNS, (arm.cells() for arm in arms))
