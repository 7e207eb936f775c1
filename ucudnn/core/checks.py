"""Argument checks shared by every layer: integers as Python users pass them, numbers and yes/no
values as users type them, and values shown in errors.

Python callers pass numpy integers (shapes, limits) as often as ints, so any integral type is
accepted through `operator.index`; bools are refused, since True is almost never meant as 1.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from typing import TypeVar

# A value an error shows whole has at most this many characters; of a longer one it shows the
# first _KEPT and the length.
_SHOWN = 80
_KEPT = 60


def shown(value: object) -> str:
    """`value` as an error message shows it: its repr, cut short past 80 characters with the
    full length said ("'xxx...'... (131072 characters)"), so that a pasted megabyte still
    makes a short message."""
    if isinstance(value, int) and abs(value) >= 10**_SHOWN:
        # str() of a huge int is slow, and Python refuses it past sys.get_int_max_str_digits().
        return f"an integer of {_digit_count(value)} digits"
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= _SHOWN:
        return repr(value)
    start = repr(text[:_KEPT]) if isinstance(value, str) else text[:_KEPT]
    return f"{start}... ({len(text)} characters)"


def _digit_count(number: int) -> int:
    """Decimal digits of `number`, without converting it to text."""
    number = max(abs(number), 1)  # 0 has one digit too
    at_least = int(number.bit_length() * math.log10(2))  # the count, or one less
    return at_least + int(number >= 10**at_least)


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
            f"{name} must be an integer, got {shown(value)} ({type(value).__name__})"
        ) from None
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {shown(number)}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {shown(number)}")
    return number


# Typed numbers (options, environment variables) longer than this are refused unread: every
# range here has at most 20 digits, and int() is slow on long text (past 4300 digits Python
# refuses it, in a message about Python).
MAX_NUMBER_TEXT = 40

_INTEGER = re.compile(r"[+-]?[0-9]+")
# Decimal notation only: no inf, nan or underscores, which float() would take.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

_Number = TypeVar("_Number", int, float)


def parse_int(text: str, name: str, minimum: int, maximum: int) -> int:
    """The integer in `text` (decimal digits, spaces around them allowed) if it is from
    `minimum` to `maximum`; else ValueError naming `name`, showing a long `text` cut short and
    saying the range."""
    return _parse_number(text, name, "an integer", _INTEGER, int, minimum, maximum)


def parse_float(text: str, name: str, minimum: float, maximum: float) -> float:
    """The number in `text` (decimal notation such as 2, 0.5 or 1e3) if it is from `minimum`
    to `maximum`; else ValueError as `parse_int` raises it."""
    return _parse_number(text, name, "a number", _DECIMAL, float, minimum, maximum)


def _parse_number(
    text: str,
    name: str,
    kind: str,
    pattern: re.Pattern[str],
    convert: Callable[[str], _Number],
    minimum: _Number,
    maximum: _Number,
) -> _Number:
    expected = f"expected {kind} from {_bound(minimum)} to {_bound(maximum)}"
    word = text.strip()
    if not pattern.fullmatch(word):  # linear in the text, unlike int()
        raise ValueError(f"{name}={shown(text)} is not {kind}; {expected}")
    if len(word) > MAX_NUMBER_TEXT or not minimum <= (number := convert(word)) <= maximum:
        raise ValueError(f"{name}={shown(text)} is out of range: {expected}")
    return number


def _bound(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off")


def parse_bool(text: str, name: str) -> bool:
    """A yes/no setting: 1/0, true/false, yes/no, on/off in any letter case; errors name
    `name` (the environment variable, the column)."""
    word = text.strip().lower()
    if word in _YES:
        return True
    if word in _NO:
        return False
    raise ValueError(
        f"{name}={shown(text)} is not a yes/no value; expected one of {', '.join(_YES + _NO)}"
    )


def boolean(value: object, name: str) -> bool:
    """A yes/no value passed from Python: True or False, numpy's included (1 or "no" are
    likelier slips than intent); errors name `name`, the argument."""
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {shown(value)}")
