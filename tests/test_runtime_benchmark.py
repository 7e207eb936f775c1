"""Benchmark buffer fills: harmless values in every dtype (checked on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from ucudnn.core.array import bfloat16_values
from ucudnn.core.problem import DTYPES
from ucudnn.runtime.benchmark import FILL_BYTES

# Largest value and smallest normal of each stored type, and the type products are summed in.
_RANGE = {
    "float16": (65504.0, 2.0**-14, np.float32),
    "bfloat16": (3.3895e38, 2.0**-126, np.float32),
    "float32": (3.4028e38, 2.0**-126, np.float32),
    "float64": (1.7976e308, 2.0**-1022, np.float64),
}
# cuDNN's sizes are 32-bit: no sum has more terms than this.
MOST_TERMS = 2**31


def _fill_value(dtype: str) -> float:
    raw = bytes([FILL_BYTES[dtype]]) * 8
    if dtype == "bfloat16":
        return float(bfloat16_values(np.frombuffer(raw[:2], np.uint16))[0])
    return float(np.frombuffer(raw, np.dtype(dtype), count=1)[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_values_are_normal_and_their_sums_stay_finite(dtype: str) -> None:
    largest, smallest_normal, accumulator = _RANGE[dtype]
    value = _fill_value(dtype)
    assert smallest_normal <= value <= largest
    product = accumulator(value) * accumulator(value)
    assert product >= np.finfo(accumulator).tiny  # no denormal products
    assert float(product) * MOST_TERMS < largest  # no overflow to inf, even in float16


def test_the_float16_fill_is_small() -> None:
    """0x3C3C is 1.06 in float16: a backward-filter sum of 6e4 products would overflow."""
    assert _fill_value("float16") == pytest.approx(0.0020, rel=0.01)
