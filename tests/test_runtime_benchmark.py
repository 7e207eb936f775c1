"""Benchmark buffer fills: harmless values for every (stored, compute) type pair, checked on the
CPU with numpy in the compute type itself."""

from __future__ import annotations

import numpy as np
import pytest

from ucudnn.core.dtypes import host_dtype
from ucudnn.core.problem import ConvProblem
from ucudnn.runtime.bench_buffers import FILL_BYTES, fill_byte

# Largest finite value of each type (bfloat16 has float32's exponent range).
_LARGEST = {
    "float16": 65504.0,
    "bfloat16": 3.3895e38,
    "float32": float(np.finfo(np.float32).max),
    "float64": float(np.finfo(np.float64).max),
}
# The longest sum assumed in each accumulator (see FILL_BYTES): cuDNN's sizes are 32-bit, and
# half-precision compute holds no sum of 2**16 terms near 1.
_MOST_TERMS = {"float16": 2**16, "float32": 2**31, "float64": 2**31}


def _fill_value(dtype: str, compute_dtype: str) -> float:
    """The value each element of a `dtype` buffer holds after the fill."""
    raw = bytes([fill_byte(dtype, compute_dtype)]) * 8
    return float(np.frombuffer(raw, host_dtype(dtype), count=1)[0])


@pytest.mark.parametrize(("dtype", "compute_dtype"), list(FILL_BYTES))
def test_fill_products_are_normal_in_the_compute_type(dtype: str, compute_dtype: str) -> None:
    compute = np.dtype(compute_dtype).type
    value = compute(_fill_value(dtype, compute_dtype))
    product = value * value  # computed in the compute type, as the device does
    assert product.dtype == np.dtype(compute_dtype)
    assert np.finfo(compute).tiny <= product < np.finfo(compute).max


@pytest.mark.parametrize(("dtype", "compute_dtype"), list(FILL_BYTES))
def test_fill_sums_stay_finite_where_computed_and_stored(dtype: str, compute_dtype: str) -> None:
    compute = np.dtype(compute_dtype).type
    value = compute(_fill_value(dtype, compute_dtype))
    largest_sum = float(value * value) * _MOST_TERMS[compute_dtype]
    assert largest_sum < min(_LARGEST[dtype], _LARGEST[compute_dtype])


def test_the_pseudo_half_fill_would_be_subnormal_in_half_compute() -> None:
    """Why the fill is keyed on the compute type too: 0x1818 (0.0020) suits float32 products
    stored in float16, but its products underflow in a float16 accumulator."""
    pseudo = np.float16(_fill_value("float16", "float32"))
    assert pseudo == pytest.approx(0.0020, rel=0.01)
    assert 0 < pseudo * pseudo < np.finfo(np.float16).tiny
    true_half = np.float16(_fill_value("float16", "float16"))
    assert true_half * true_half >= np.finfo(np.float16).tiny


def test_the_fill_of_every_default_problem_is_known() -> None:
    for dtype in ("float32", "float16", "bfloat16", "float64"):
        problem = ConvProblem.create(2, 3, 4, (5, 5), 3, dtype=dtype)
        assert fill_byte(problem.dtype, problem.compute_dtype) in range(256)


def test_a_pair_without_a_fill_is_named() -> None:
    with pytest.raises(ValueError, match="cannot benchmark float32 data computed in float16"):
        fill_byte("float32", "float16")
