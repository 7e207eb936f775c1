"""The algorithm seam's pure rules: which math type a reported variant runs with."""

from __future__ import annotations

import pytest

from ucudnn.runtime.backend import candidate_math_type


@pytest.mark.parametrize(
    ("requested", "reported", "runs_with"),
    [
        ("fma", "tensor_op", "fma"),
        ("fma", "tensor_op_allow_conversion", "fma"),
        ("fma", "default", "fma"),
        ("fma", "fma", "fma"),
        ("default", "tensor_op", "tensor_op"),
        ("default", "fma", "fma"),
        ("default", "tensor_op_allow_conversion", "default"),
        ("tensor_op", "default", "default"),
        ("tensor_op", "tensor_op_allow_conversion", "tensor_op"),
        ("tensor_op_allow_conversion", "tensor_op_allow_conversion", "tensor_op_allow_conversion"),
        ("tensor_op_allow_conversion", "fma", "fma"),
        ("default", "7", "default"),  # a math type these headers do not name
    ],
)
def test_a_variant_never_runs_less_precisely_than_asked(requested, reported, runs_with):
    assert candidate_math_type(requested, reported) == runs_with
