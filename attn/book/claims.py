"""What a chapter claims about a trained model, checked in code against a bound with a measured margin.

A trained model's digits are not portable: torch picks CPU kernels by processor, so floats differ in their last
bits from machine to machine, and training turns that into a different model. What the prose says about it (the
attention model translates more than 90 % of held-out sentences; three hops beat one) must hold on every machine,
so each such claim is a bound, checked in the cell that measures it::

    claim("held-out exact match", scores.exact_match, at_least=0.9, fmt=".1%")

shows ``✓ held-out exact match ≥ 90.0% (this run: 99.5%)``, and raises :class:`ClaimError`, naming the claim
and the value measured, when the bound does not hold. The bounds come from runs over several seeds and two
numeric paths (``benchmarks/claims.py``).

A claim knows its null: the same statistic measured under a control that lacks what the claim is about (chance
computed from the data, an untrained or ablated model, a shuffled map, the other arm at its best setting)::

    claim("held-out exact match", exact, at_least=0.9, fmt=".1%", null=untrained_exact, control="untrained")

shows ``(this run: 99.5%; untrained: 0.3%)`` and fails when the null also meets the bound: such a check could not
fail, so it is a red cell, not a claim. A check that has no null (an exact comparison with a reference) says why
with ``no_null="..."``. Each check is also saved in the output's metadata (key ``attn.claim``),
so that tools can read every claim of an executed notebook back (:func:`recorded_claims`).
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, replace
from numbers import Real
from typing import Any

import numpy as np
import torch

__all__ = ["Claim", "ClaimError", "claim", "recorded_claims", "METADATA_KEY", "SECOND_NUMERIC_PATH"]

METADATA_KEY = "attn.claim"  # where a claim's record sits in the metadata of its display output

# Another CPU, on this one: torch's portable (not vectorized) kernels and MKL's compatible code path. Every
# chapter's claims must hold under it too (CI executes every chapter so; benchmarks/claims.py measures margins).
SECOND_NUMERIC_PATH = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}


class ClaimError(AssertionError):
    """A claim the prose makes does not hold in this run."""


@dataclass(frozen=True)
class Claim:
    """One checked claim: what it says, the bound, the value this run measured and whether it holds."""

    statement: str
    value: float | str | bool
    at_least: float | None = None
    at_most: float | None = None
    equals: str | None = None
    fmt: str = ""
    holds: bool = False
    null: float | str | bool | None = None
    control: str = "null"
    no_null: str | None = None
    null_holds: bool = False

    def bound(self) -> str:
        """The bound in words, e.g. ``≥ 90.0%`` or ``= 'yellow'``."""
        if self.equals is not None:
            return f"= {self.equals!r}"
        parts = []
        if self.at_least is not None:
            parts.append(f"≥ {self.at_least:{self.fmt}}")
        if self.at_most is not None:
            parts.append(f"≤ {self.at_most:{self.fmt}}")
        return " and ".join(parts)

    def measured(self, value: object = ...) -> str:
        """The value this run measured (or ``value``), formatted like the bound."""
        value = self.value if value is ... else value
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, str):
            return repr(value)
        return f"{value:{self.fmt}}"

    @property
    def passed(self) -> bool:
        """The claim holds and its null does not: a check that could have failed, and did not."""
        return self.holds and not self.null_holds

    def _null_note(self) -> str:
        if self.null is None:
            return ""
        note = f"{self.control}: {self.measured(self.null)}"
        return note + (", which meets the bound too: this check cannot fail" if self.null_holds else "")

    def __str__(self) -> str:
        mark = "✓" if self.passed else "✗"
        null = self._null_note()
        if isinstance(self.value, bool):
            return f"{mark} {self.statement}" + (f" ({null})" if null else "")
        if self.equals is not None:
            text = f"{mark} {self.statement}: {self.measured()}" + ("" if self.holds else f", not {self.equals!r}")
            return text + (f" ({null})" if null else "")
        return f"{mark} {self.statement} {self.bound()} (this run: {self.measured()}" + (f"; {null})" if null else ")")

    def record(self) -> dict[str, Any]:
        """The claim as JSON-ready data (a NaN value becomes None)."""
        data = asdict(self)
        if isinstance(self.value, float) and math.isnan(self.value):
            data["value"] = None
        return data

    def _repr_html_(self) -> str:
        """The line as a paragraph that wraps like the prose around it (a printed line wraps mid-word)."""
        kind = "pass" if self.passed else "fail"
        mark, text = str(self).split(" ", 1)
        mark_html = f"<span class='attn-claim-mark'>{mark}</span>"
        return f"<p class='attn-claim attn-claim-{kind}'>{mark_html} {html.escape(text)}</p>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}, {METADATA_KEY: self.record()}


def _number(statement: str, name: str, x: object) -> float:
    """A real number from a Python number, a numpy scalar or a one-element tensor."""
    if isinstance(x, torch.Tensor):
        if x.numel() != 1 or x.is_complex():
            raise ValueError(
                f"claim {statement!r}: {name} must be one real number, got a tensor of shape {tuple(x.shape)}"
            )
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, Real):
        raise ValueError(f"claim {statement!r}: {name} must be a real number, got {type(x).__name__} {x!r}")
    try:
        return float(x)
    except OverflowError:
        raise ValueError(f"claim {statement!r}: {name} is too large to compare as a float") from None


def _yes_no(x: object) -> object:
    """A numpy bool or a one-element bool tensor as Python's bool (a yes/no claim); anything else as it is."""
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, torch.Tensor) and x.dtype == torch.bool and x.numel() == 1:
        return bool(x.item())
    return x


def _check(statement: object, value: object, at_least: object, at_most: object, equals: object, fmt: str) -> Claim:
    """The claim without its null: the bound checked against this run's value."""
    if not isinstance(statement, str) or not statement.strip():
        raise ValueError(f"statement must be a non-empty string saying what is claimed, got {statement!r}")
    if not isinstance(fmt, str):
        raise ValueError(f"fmt must be a format spec such as '.1%' or '.2f', got {fmt!r}")
    bounds = [b for b in (at_least, at_most) if b is not None]
    value = _yes_no(value)
    if isinstance(value, bool):  # a yes/no claim: it holds when value is True
        if bounds or equals is not None:
            raise ValueError(f"claim {statement!r}: a yes/no value takes no at_least, at_most or equals")
        return Claim(statement, value, holds=value)
    if equals is not None:
        if bounds:
            raise ValueError(f"claim {statement!r}: give equals or at_least/at_most, not both")
        if not isinstance(equals, str) or not isinstance(value, str):
            raise ValueError(f"claim {statement!r}: equals compares strings, got value {value!r} and equals {equals!r}")
        return Claim(statement, value, equals=equals, holds=value == equals)
    if not bounds:
        raise ValueError(f"claim {statement!r} has no bound: give at_least, at_most or both (or a yes/no value)")
    number = _number(statement, "value", value)
    low = None if at_least is None else _number(statement, "at_least", at_least)
    high = None if at_most is None else _number(statement, "at_most", at_most)
    if any(math.isnan(b) for b in (low, high) if b is not None):
        raise ValueError(f"claim {statement!r}: a bound is NaN")
    if low is not None and high is not None and low > high:
        raise ValueError(f"claim {statement!r}: at_least={low} is above at_most={high}")
    try:
        format(number, fmt)
    except ValueError as error:
        raise ValueError(f"claim {statement!r}: fmt {fmt!r} is not a number format ({error})") from None
    return Claim(statement, number, low, high, fmt=fmt, holds=_within(number, low, high))


def _within(number: float, low: float | None, high: float | None) -> bool:
    return not math.isnan(number) and (low is None or number >= low) and (high is None or number <= high)


def _with_null(checked: Claim, null: object, control: object, no_null: object) -> Claim:
    """The claim with its null measured under a control (or the reason it has none) and whether the null holds."""
    name = checked.statement
    if not isinstance(control, str) or not control.strip():
        raise ValueError(f"claim {name!r}: control must name the null's control (e.g. 'chance'), got {control!r}")
    if no_null is not None:
        if null is not None:
            raise ValueError(f"claim {name!r}: give null (a measured value) or no_null (why there is none), not both")
        if not isinstance(no_null, str) or not no_null.strip():
            raise ValueError(f"claim {name!r}: no_null must say why the claim has no null, got {no_null!r}")
        return replace(checked, no_null=no_null)
    if null is None:
        return checked
    null = _yes_no(null)
    if isinstance(checked.value, bool):
        if not isinstance(null, bool):
            raise ValueError(f"claim {name!r}: a yes/no claim's null is yes/no too, got {type(null).__name__}")
        return replace(checked, null=null, control=control, null_holds=null)
    if checked.equals is not None:
        if not isinstance(null, str):
            raise ValueError(f"claim {name!r}: a string claim's null is a string too, got {type(null).__name__}")
        return replace(checked, null=null, control=control, null_holds=null == checked.equals)
    number = _number(name, "null", null)
    if math.isnan(number):
        raise ValueError(f"claim {name!r}: the null is NaN; measure the control again")
    held = _within(number, checked.at_least, checked.at_most)
    return replace(checked, null=number, control=control, null_holds=held)


def claim(
    statement: str,
    value: float | torch.Tensor | str | bool,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
    equals: str | None = None,
    fmt: str = "",
    null: float | torch.Tensor | str | bool | None = None,
    control: str = "null",
    no_null: str | None = None,
) -> None:
    """Check a claim the prose makes about ``value``, show it, and raise :class:`ClaimError` if it does not hold.

    A number is checked against ``at_least`` and/or ``at_most`` (``fmt`` formats both, e.g. ``".1%"``); a string
    against ``equals``; a yes/no claim is a ``bool`` that must be True. The line shown ends with the value of
    this run, which differs between machines and seeds: the bound is the claim.

    ``null`` is the same statistic measured under a control that lacks what the claim is about (``control`` names
    it: "chance", "untrained", "shuffled map", "the other arm"); it is shown beside the value, and the claim fails
    when the null meets the bound too. ``no_null`` says why a check has none (an exact comparison with a reference).
    """
    checked = _with_null(_check(statement, value, at_least, at_most, equals, fmt), null, control, no_null)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython comes with the book's requirements
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(checked)  # text plus the record in the output's metadata
    else:
        print(checked)
    if not checked.holds:
        raise ClaimError(f"claim does not hold: {str(checked)[2:]}")
    if checked.null_holds:
        raise ClaimError(f"claim cannot fail: {str(checked)[2:]}")


def recorded_claims(notebook: Any) -> list[dict[str, Any]]:
    """Every claim checked in an executed notebook (an ``nbformat`` notebook), with its cell index, in order."""
    found = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            record = output.get("metadata", {}).get(METADATA_KEY)
            if record is not None:
                found.append({"cell": index, **record})
    return found
