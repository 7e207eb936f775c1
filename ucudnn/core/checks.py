"""Argument checks shared by every layer: integers as Python users pass them.

Python callers pass numpy integers (shapes, limits) as often as ints, so any integral type is
accepted through `operator.index`; bools are refused, since True is almost never meant as 1.
"""

from __future__ import annotations

import operator


def integer(
    value: object, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """`value` as an int within [minimum, maximum]; TypeError or ValueError naming `name`."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{name} must be an integer, got {value!r} ({type(value).__name__})"
        ) from None
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {number}")
    return number
