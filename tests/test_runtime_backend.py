"""The algorithm seam's pure rules: which math type a reported variant runs with, and how an
algorithm given by number or name becomes cuDNN's enum value (the native module loads without
a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from ucudnn._native import _cudnn
from ucudnn.runtime.backend import algorithm_number, candidate_math_type


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


@pytest.mark.parametrize("kernel", list(_cudnn.ALGORITHMS))
def test_algorithms_by_name_and_by_number_agree(kernel: str) -> None:
    names = _cudnn.ALGORITHMS[kernel]
    for number, name in enumerate(names):
        assert algorithm_number(kernel, name) == number
        assert algorithm_number(kernel, np.int64(number)) == number
        assert type(algorithm_number(kernel, np.uint8(number))) is int


def test_forward_algorithm_names_are_cudnns() -> None:
    assert algorithm_number("forward", "implicit_gemm") == 0
    assert algorithm_number("forward", "fft") == 4


@pytest.mark.parametrize(
    ("algo", "error", "got"),
    [
        (8, ValueError, "got 8"),
        (-1, ValueError, "got -1"),
        (np.int16(99), ValueError, "got 99"),
        ("nope", ValueError, "got 'nope'"),
        ("FFT", ValueError, "got 'FFT'"),  # names are cuDNN's, in its letter case
        (True, TypeError, r"got True \(bool\)"),
        (1.0, TypeError, r"got 1\.0 \(float\)"),
        (None, TypeError, r"got None \(NoneType\)"),
    ],
)
def test_a_bad_algorithm_gets_one_message_with_every_valid_value(algo, error, got) -> None:
    valid = "algo must be a forward algorithm, 0..7 or one of implicit_gemm, "
    with pytest.raises(error, match=f"^{valid}.*winograd_nonfused; {got}$"):
        algorithm_number("forward", algo)


def test_each_kernel_has_its_own_range() -> None:
    with pytest.raises(ValueError, match=r"backward_data algorithm, 0\.\.5 or one of algo_0, "):
        algorithm_number("backward_data", 6)
    assert algorithm_number("backward_filter", 6) == _cudnn.ALGORITHMS["backward_filter"].index(
        "fft_tiling"
    )


def test_an_unknown_kernel_is_refused() -> None:
    with pytest.raises(ValueError, match="kernel"):
        algorithm_number("sideways", 0)
