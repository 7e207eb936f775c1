"""Equivalence-check bounds: which bound applies, and that they order as the arithmetic does."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ucudnn.core.problem import ConvProblem
from ucudnn.runtime.check import (
    CROSS_ALGORITHM_TOLERANCES,
    TOLERANCES,
    EquivalenceCheck,
    arithmetic,
    tolerance,
)


def _problem(dtype: str, math_type: str = "default") -> ConvProblem:
    return ConvProblem.create(4, 3, 5, (6, 6), 3, dtype=dtype, math_type=math_type)


@pytest.mark.parametrize(
    ("dtype", "math_type", "regime", "same", "cross"),
    [
        ("float32", "fma", "fp32", 1e-6, 1e-4),
        ("float32", "default", "tf32", 5e-3, 1e-2),
        ("float32", "tensor_op", "tf32", 5e-3, 1e-2),
        ("float16", "tensor_op", "float16", 5e-3, 1e-2),
        ("bfloat16", "default", "bfloat16", 2e-2, 4e-2),
        ("float64", "default", "float64", 1e-12, 1e-12),
    ],
)
def test_bounds_by_arithmetic(dtype, math_type, regime, same, cross) -> None:
    problem = _problem(dtype, math_type)
    assert arithmetic(problem) == regime
    assert tolerance(problem) == tolerance(problem, same_algorithm=True) == same
    assert tolerance(problem, same_algorithm=False) == cross


def test_other_algorithms_never_get_a_tighter_bound() -> None:
    assert TOLERANCES.keys() == CROSS_ALGORITHM_TOLERANCES.keys()
    assert all(CROSS_ALGORITHM_TOLERANCES[k] >= TOLERANCES[k] for k in TOLERANCES)


def test_the_fp32_cross_algorithm_bound_still_sees_a_missing_sample(caplog) -> None:
    """A backward-filter sum that lost one sample of 1000 is 1e-3 off: far above the bound,
    which is logged as a warning."""
    rng = np.random.default_rng(0)
    per_sample = rng.standard_normal((1000, 64)).astype(np.float32) + 1.0
    whole = per_sample.sum(axis=0)
    missing = per_sample[1:].sum(axis=0)
    check = EquivalenceCheck()
    problem = _problem("float32", "fma")
    check.record(
        "l", "backward_filter", problem, missing.view(np.uint8), whole.view(np.uint8), False
    )
    assert not check.results[0].ok
    assert check.results[0].tolerance == 1e-4
    (record,) = caplog.records
    assert (record.name, record.levelno) == ("ucudnn.runtime.check", logging.WARNING)
    assert record.getMessage().startswith("equivalence check of l backward_filter: normalised")
    assert record.getMessage().endswith("(bound 0.0001) TOO FAR")


def test_a_check_logs_which_bound_it_used_and_prints_nothing(caplog, capsys) -> None:
    caplog.set_level(logging.INFO, logger="ucudnn")
    check = EquivalenceCheck()
    values = np.arange(1, 9, dtype=np.float32)
    check.record("conv1", "forward", _problem("float32", "fma"), values.view(np.uint8),
                 values.view(np.uint8), True)  # fmt: skip
    assert check.results[0].ok
    (record,) = caplog.records
    assert (record.name, record.levelno) == ("ucudnn.runtime.check", logging.INFO)
    expected = "equivalence check of conv1 forward: normalised L2 distance 0 (bound 1e-06) ok"
    assert record.getMessage() == str(check.results[0]) == expected
    assert capsys.readouterr() == ("", "")
