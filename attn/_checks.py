"""Argument checks shared by the library's layers (no torch modules imported: every layer may use them)."""

from __future__ import annotations

import numbers

__all__ = ["check_positive_int", "check_nonnegative_int", "check_dropout"]


def check_positive_int(name: str, value: object) -> int:
    """``value`` if it is an int >= 1, else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def check_nonnegative_int(name: str, value: object) -> int:
    """``value`` if it is an int >= 0, else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return int(value)


def check_dropout(value: object) -> float:
    """``value`` if it is a probability in [0, 1), else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"dropout must be a probability in [0, 1), got {value!r}")
    return float(value)
