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
from typing import Any, TypeVar, cast

import numpy as np
import torch

from attn._checks import check, checked, is_real_number

__all__ = ["Claim", "ClaimError", "claim", "recorded_claims", "METADATA_KEY", "SECOND_NUMERIC_PATH"]

METADATA_KEY = "attn.claim"  # where a claim's record sits in the metadata of its display output

# Another CPU, on this one: torch's portable (not vectorized) kernels and MKL's compatible code path. Every
# chapter's claims must hold under it too (CI executes every chapter so; benchmarks/claims.py measures margins).
SECOND_NUMERIC_PATH = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}

Number = float | torch.Tensor  # a claim's number: a Python or numpy number, or a one-element tensor
_T = TypeVar("_T")


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


def _fits_a_float(x: float) -> bool:
    try:
        float(x)
    except OverflowError:  # an int too large for a float
        return False
    return True


def _number(statement: str, name: str, x: object) -> float:
    """A real number from a Python number, a numpy scalar or a one-element tensor, else a ValueError naming it."""
    if isinstance(x, torch.Tensor):
        shape = tuple(x.shape)
        check(x.numel() == 1 and not x.is_complex(), lambda: f"claim {statement!r}: {name} must be one real number, "
              f"got a tensor of shape {shape}")  # fmt: skip
        x = x.item()
    check(is_real_number(x),
          lambda: f"claim {statement!r}: {name} must be a real number, got {type(x).__name__} {x!r}")  # fmt: skip
    x = cast(float, x)  # the check raised unless it is a real number
    check(_fits_a_float(x), lambda: f"claim {statement!r}: {name} is too large to compare as a float")
    return float(x)


def _real(x: Number) -> float:
    """A Python number, a numpy scalar or a one-element tensor as a float."""
    return float(x.item() if isinstance(x, torch.Tensor) else x)


def _yes_no(x: _T) -> _T | bool:
    """A numpy bool or a one-element bool tensor as Python's bool (a yes/no claim); anything else as it is."""
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, torch.Tensor) and x.dtype == torch.bool and x.numel() == 1:
        return bool(x.item())
    return x


def _kind(value: object, equals: object) -> str:
    """What a claim compares: ``"yes/no"`` (a bool value), ``"string"`` (with ``equals``) or ``"number"``."""
    return "yes/no" if isinstance(_yes_no(value), bool) else "string" if equals is not None else "number"


def _format_error(number: float, fmt: str) -> str | None:
    """Why ``fmt`` cannot format a number, or None if it can."""
    try:
        format(number, fmt)
    except ValueError as error:
        return str(error)
    return None


def _check_bounds(statement: str, value: object, at_least: object, at_most: object, fmt: str) -> None:
    """A measured number and its bounds: real numbers, not NaN, in order, and ``fmt`` formats them."""
    check(at_least is not None or at_most is not None,
          lambda: f"claim {statement!r} has no bound: give at_least, at_most or both (or a yes/no value)")  # fmt: skip
    number = _number(statement, "value", value)
    low = None if at_least is None else _number(statement, "at_least", at_least)
    high = None if at_most is None else _number(statement, "at_most", at_most)
    check(not any(math.isnan(b) for b in (low, high) if b is not None), lambda: f"claim {statement!r}: a bound is NaN")
    check(low is None or high is None or low <= high,
          lambda: f"claim {statement!r}: at_least={low} is above at_most={high}")  # fmt: skip
    error = _format_error(number, fmt)
    check(error is None, lambda: f"claim {statement!r}: fmt {fmt!r} is not a number format ({error})")


def _check_null(statement: str, kind: str, null: object, control: object, no_null: object) -> None:
    """The null's control is named, the null is of the claim's kind (or no_null says why there is none)."""
    check(isinstance(control, str) and control.strip(), lambda: f"claim {statement!r}: control must name the null's "
          f"control (e.g. 'chance'), got {control!r}")  # fmt: skip
    check(no_null is None or null is None,
          f"claim {statement!r}: give null (a measured value) or no_null (why there is none), not both")  # fmt: skip
    check(no_null is None or isinstance(no_null, str) and no_null.strip(),
          lambda: f"claim {statement!r}: no_null must say why the claim has no null, got {no_null!r}")  # fmt: skip
    null = _yes_no(null)
    check(kind != "yes/no" or null is None or isinstance(null, bool),
          lambda: f"claim {statement!r}: a yes/no claim's null is yes/no too, got {type(null).__name__}")  # fmt: skip
    check(kind != "string" or null is None or isinstance(null, str),
          lambda: f"claim {statement!r}: a string claim's null is a string too, got {type(null).__name__}")  # fmt: skip
    if kind == "number" and null is not None:
        check(not math.isnan(_number(statement, "null", null)),
              lambda: f"claim {statement!r}: the null is NaN; measure the control again")  # fmt: skip


def _measure(
    statement: str,
    value: Number | str | bool,
    at_least: float | None,
    at_most: float | None,
    equals: str | None,
    fmt: str,
) -> Claim:
    """The claim without its null: the bound checked against this run's value (checked by :func:`_claim_args`)."""
    value = _yes_no(value)
    if isinstance(value, bool):  # a yes/no claim: it holds when value is True
        return Claim(statement, value, holds=value)
    if equals is not None:  # a string claim: the value is a string
        return Claim(statement, cast(str, value), equals=equals, holds=value == equals)
    number = _real(cast(Number, value))
    low = None if at_least is None else _real(at_least)
    high = None if at_most is None else _real(at_most)
    return Claim(statement, number, low, high, fmt=fmt, holds=_within(number, low, high))


def _within(number: float, low: float | None, high: float | None) -> bool:
    return not math.isnan(number) and (low is None or number >= low) and (high is None or number <= high)


def _with_null(measured: Claim, null: Number | str | bool | None, control: str, no_null: str | None) -> Claim:
    """The claim with its null measured under a control (or the reason it has none) and whether the null holds
    (a null of the claim's kind, checked by :func:`_claim_args`)."""
    if no_null is not None:
        return replace(measured, no_null=no_null)
    if null is None:
        return measured
    null = _yes_no(null)
    if isinstance(measured.value, bool):
        yes = cast(bool, null)
        return replace(measured, null=yes, control=control, null_holds=yes)
    if measured.equals is not None:
        return replace(measured, null=cast(str, null), control=control, null_holds=null == measured.equals)
    number = _real(cast(Number, null))
    held = _within(number, measured.at_least, measured.at_most)
    return replace(measured, null=number, control=control, null_holds=held)


def _claim_args(
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
    check(isinstance(statement, str) and statement.strip(),
          lambda: f"statement must be a non-empty string saying what is claimed, got {statement!r}")  # fmt: skip
    check(isinstance(fmt, str), lambda: f"fmt must be a format spec such as '.1%' or '.2f', got {fmt!r}")
    kind = _kind(value, equals)
    bounded = at_least is not None or at_most is not None
    check(kind != "yes/no" or not bounded and equals is None,
          lambda: f"claim {statement!r}: a yes/no value takes no at_least, at_most or equals")  # fmt: skip
    check(kind != "string" or not bounded, lambda: f"claim {statement!r}: give equals or at_least/at_most, not both")
    check(kind != "string" or isinstance(equals, str) and isinstance(value, str), lambda: f"claim {statement!r}: "
          f"equals compares strings, got value {value!r} and equals {equals!r}")  # fmt: skip
    if kind == "number":
        _check_bounds(statement, value, at_least, at_most, fmt)
    _check_null(statement, kind, null, control, no_null)


@checked(_claim_args)
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
    measured = _with_null(_measure(statement, value, at_least, at_most, equals, fmt), null, control, no_null)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython comes with the book's requirements
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(measured)  # text plus the record in the output's metadata
    else:
        print(measured)
    if not measured.holds:
        raise ClaimError(f"claim does not hold: {str(measured)[2:]}")
    if measured.null_holds:
        raise ClaimError(f"claim cannot fail: {str(measured)[2:]}")


def recorded_claims(notebook: Any) -> list[dict[str, Any]]:
    """Every claim checked in an executed notebook (an ``nbformat`` notebook), with its cell index, in order."""
    found = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            record = output.get("metadata", {}).get(METADATA_KEY)
            if record is not None:
                found.append({"cell": index, **record})
    return found
