"""The checks of the values that timing tables and plans hold: layer names, mini-batch sizes
and each Candidate field, with the limits past which a value is a mistake, not a measurement."""

from __future__ import annotations

import functools
import numbers
import sys
import unicodedata
from collections.abc import Callable

from ucudnn.core.checks import integer, shown
from ucudnn.core.engines import canonical_tag
from ucudnn.core.problem import MATH_TYPES, MAX_DIM

# Beyond these a row is a mistake, not a measurement (a convolution of 11 days, a workspace of
# a pebibyte), and the numbers would leave the range where the WD solver stays exact.
MAX_TIME_MS = 1e9
MAX_WORKSPACE_BYTES = 2**50

# The largest value of each integer column: the checks refuse more, and the readers refuse a
# cell with more digits than it has before converting the cell.
INTEGER_MAXIMUM = {
    "batch": MAX_DIM, "micro_batch": MAX_DIM, "algo": MAX_DIM,
    "workspace_bytes": MAX_WORKSPACE_BYTES, "slab": MAX_DIM,
}  # fmt: skip

# Characters that would break a name across lines or hide in it: C0/C1 controls (NUL, tab,
# newline, ...) and the Unicode line and paragraph separators.
_UNPRINTABLE = ("Cc", "Zl", "Zp")


def layer_name(value: object, what: str = "layer") -> str:
    """`value` if it can name a layer: text on one line, without control characters, that
    neither starts nor ends with a space (CSV readers strip cells, so it would not come back)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be text, got {shown(value)}")
    if not value:
        raise ValueError(f"{what} must be a non-empty name, got {value!r}")
    bad = next((c for c in value if unicodedata.category(c) in _UNPRINTABLE), None)
    if bad is not None:
        raise ValueError(f"{what} {shown(value)} contains the control character {bad!r}")
    if value != value.strip():
        raise ValueError(f"{what} {shown(value)} starts or ends with white space")
    return value


def check_batch(value: object) -> int:
    """A mini-batch N as cuDNN takes it: an integer from 1 to 2**31 - 1."""
    return integer(value, "batch", minimum=1, maximum=INTEGER_MAXIMUM["batch"])


def _time_ms(value: object) -> float:
    # A float is asked first: readers check 1e4 of them, and numbers.Real's check is slow.
    if type(value) is not float and (
        isinstance(value, bool) or not isinstance(value, numbers.Real)
    ):
        raise TypeError(f"time_ms must be a number, got {shown(value)}")
    # -0.0 is 0: a zero time must read as zero everywhere (speedups, JSON).
    time_ms = float(value) + 0.0
    if not 0 <= time_ms <= MAX_TIME_MS:
        raise ValueError(f"time_ms must be a number between 0 and {MAX_TIME_MS:g}, got {time_ms}")
    return time_ms


def _math_type(value: object) -> str:
    if not isinstance(value, str) or value not in MATH_TYPES:
        raise ValueError(f"math_type {shown(value)} is not one of {', '.join(MATH_TYPES)}")
    return value


# The longest tag of the engine configurations recorded in tests/data and the simulator's data
# is 57 characters (8 knobs); cuDNN 9 has about 40 knob types, each once per tag. Past this a
# tag is no configuration but a pasted mistake, which would fill messages and plan reports.
MAX_ENGINE_TAG_LENGTH = 512


def _engine(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"engine must be text (an engine tag, or empty), got {shown(value)}")
    if len(value) > MAX_ENGINE_TAG_LENGTH:
        raise ValueError(
            f"engine tag {shown(value)} is longer than {MAX_ENGINE_TAG_LENGTH} characters, "
            "the most an engine configuration's tag has"
        )
    return _canonical_tag(value) if value else ""


# Tables repeat a few thousand tags over tens of thousands of rows.
_canonical_tag = functools.lru_cache(maxsize=4096)(canonical_tag)


def flag(value: object, name: str) -> bool:
    """`value` as a bool: True or False (numpy's too, as its comparisons give them), or 1 or 0
    as C enums and numpy integers give them; other numbers are refused."""
    # A numpy bool exists only once numpy is loaded, and planning alone does not load it.
    numpy = sys.modules.get("numpy")
    if (numpy is not None and isinstance(value, numpy.bool_)) or (
        isinstance(value, numbers.Integral) and value in (0, 1)
    ):
        return bool(value)
    raise TypeError(f"{name} must be true or false, got {shown(value)}")


# The check of each Candidate field, shared by the constructor and the readers (which name the
# column of a bad value).
CANDIDATE_CHECKS: dict[str, Callable[[object], object]] = {
    "micro_batch": functools.partial(
        integer, name="micro_batch", minimum=1, maximum=INTEGER_MAXIMUM["micro_batch"]
    ),
    "algo": functools.partial(integer, name="algo", minimum=0, maximum=INTEGER_MAXIMUM["algo"]),
    "time_ms": _time_ms,
    "workspace_bytes": functools.partial(
        integer, name="workspace_bytes", minimum=0, maximum=INTEGER_MAXIMUM["workspace_bytes"]
    ),
    "math_type": _math_type,
    "deterministic": functools.partial(flag, name="deterministic"),
    "engine": _engine,
    # Planes per slab of the sliced tensor (`ucudnn.core.slabs`); 0: the whole volume.
    "slab": functools.partial(integer, name="slab", minimum=0, maximum=INTEGER_MAXIMUM["slab"]),
}


def check_engine_index(engine: str, algo: int) -> None:
    """An engine candidate's algo is its engine index, which its canonical tag starts with."""
    if engine and engine.partition("_")[0] != f"eng{algo}":
        raise ValueError(
            f"engine {engine} is a configuration of engine {engine.partition('_')[0][3:]}, but "
            f"algo is {algo} (an engine candidate's algo is its engine index)"
        )
