"""The NumPy functions: every bad input is refused before any device work (so these run on a
CPU), empty batches need no device, and on a GPU the results match the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

import ucudnn
from tests import reference_conv as ref
from ucudnn.core.problem import ConvProblem, to_physical
from ucudnn.runtime.check import normalised_l2, tolerance

X = np.zeros((2, 4, 8, 8), np.float32)
W = np.zeros((6, 4, 3, 3), np.float32)


def _w(k: int, c: int) -> np.ndarray:
    return np.zeros((k, c, 3, 3), np.float32)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: ucudnn.conv_forward(X.tolist(), W), TypeError, "x must be a numpy.ndarray"),
        (lambda: ucudnn.conv_forward(X, W.astype(np.float16)), TypeError, "share one dtype"),
        (lambda: ucudnn.conv_forward(X.astype(np.int32), W), TypeError, "dtype int32"),
        (lambda: ucudnn.conv_forward(X[..., ::2], W), ValueError, "not C-contiguous"),
        (lambda: ucudnn.conv_forward(X[0], W), ValueError, "rank 4"),
        (lambda: ucudnn.conv_forward(X, _w(6, 3)), ValueError, "x has 4 channels"),
        (lambda: ucudnn.conv_forward(X, _w(6, 1), groups=3), ValueError, "channels"),
        (lambda: ucudnn.conv_forward(X, _w(5, 2), groups=2), ValueError, "groups=2 must divide"),
        (lambda: ucudnn.conv_forward(X, W, padding=-1), ValueError, "padding"),
        (lambda: ucudnn.conv_forward(X, W, stride=(1, 2, 3)), ValueError, "stride"),
        (lambda: ucudnn.conv_forward(X, W, layout="NCDHW"), ValueError, "layout"),
        (lambda: ucudnn.conv_forward(X, W, colour="red"), TypeError, "unknown option"),
        (lambda: ucudnn.conv_forward(X[:, :, :0], W), ValueError, "spatial"),
        (lambda: ucudnn.conv_forward(X[:, :0], W[:, :0]), ValueError, "channels"),
        (
            lambda: ucudnn.conv_backward_data(W, np.zeros((2, 6, 5, 5), np.float32), X.shape),
            ValueError,
            r"dy has shape \(2, 6, 5, 5\), expected \(2, 6, 6, 6\)",
        ),
        (
            lambda: ucudnn.conv_backward_filter(X, np.zeros((2, 6, 6, 6), np.float64), W.shape),
            TypeError,
            "share one dtype",
        ),
    ],
)
def test_bad_input_is_named_before_device_work(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_empty_batch_needs_no_device() -> None:
    empty = X[:0]
    assert ucudnn.conv_forward(empty, W, padding=1).shape == (0, 6, 8, 8)
    dy = np.zeros((0, 6, 6, 6), np.float32)
    assert ucudnn.conv_backward_data(W, dy, empty.shape).shape == (0, 4, 8, 8)
    dw = ucudnn.conv_backward_filter(empty, dy, W.shape)
    assert dw.shape == W.shape and not dw.any()


# -- on a GPU --------------------------------------------------------------------------------
CASES = [
    ((3, 5, 9, 10), (6, 5, 3, 3), {"padding": 1}),
    ((2, 4, 11, 9), (8, 2, 3, 2), {"stride": (2, 1), "groups": 2, "dilation": (1, 2)}),
    ((2, 3, 6, 5, 7), (4, 3, 3, 3, 3), {"padding": 1}),
]
DTYPES = ["float32", "float16", "float64"]


def _stored(array: np.ndarray, channels_last: bool) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(array, 1, -1)) if channels_last else array


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=["2d", "2d-grouped", "3d"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
def test_matches_reference(case, dtype, channels_last, kernel) -> None:
    x_dims, w_dims, conv = case
    rank = len(x_dims) - 2
    layout = ("NHWC", "NDHWC")[rank - 2] if channels_last else ("NCHW", "NCDHW")[rank - 2]
    problem = ConvProblem.from_shapes(
        to_physical(x_dims, layout), to_physical(w_dims, layout), layout=layout, dtype=dtype,
        math_type="fma", **conv,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    x, w, dy = (rng.standard_normal(d).astype(dtype) for d in (x_dims, w_dims, problem.y_dims))
    options = {**conv, "layout": layout}
    if kernel == "forward":
        expected = ref.forward(problem, x, w)
        result = ucudnn.conv_forward(
            _stored(x, channels_last), _stored(w, channels_last), **options
        )
    elif kernel == "backward_data":
        expected = ref.backward_data(problem, w, dy)
        result = ucudnn.conv_backward_data(
            _stored(w, channels_last), _stored(dy, channels_last), problem.x_shape, **options
        )
    else:
        expected = ref.backward_filter(problem, x, dy)
        result = ucudnn.conv_backward_filter(
            _stored(x, channels_last), _stored(dy, channels_last), problem.w_shape, **options
        )
    assert result.dtype == np.dtype(dtype)
    logical = np.moveaxis(result, -1, 1) if channels_last else result
    assert normalised_l2(logical, expected) <= tolerance(problem)
