"""The simulated cuDNN's arithmetic against the independent numpy reference, and its status names
against the real libraries (no device needed for either)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from tests import reference_conv as ref
from tests.cuda_header import cuda_error_names
from ucudnn._native import SIMULATED, _cuda, _cudnn
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import NoDeviceError
from ucudnn.testing.simulator import numerics, statuses
from ucudnn.testing.simulator.problem import SimProblem


def _sim(problem: ConvProblem, kernel: str) -> SimProblem:
    return SimProblem(
        kernel=kernel, dtype=problem.dtype, compute_dtype=problem.compute_dtype,
        math_type=problem.math_type, layout=problem.layout,
        filter_layout=problem.filter_layout, x_dims=problem.x_dims, w_dims=problem.w_dims,
        y_dims=problem.y_dims, padding=problem.padding, stride=problem.stride,
        dilation=problem.dilation, groups=problem.groups, mode=problem.mode,
        padding_after=problem.padding_end,
    )  # fmt: skip


def _run(problem: ConvProblem, kernel: str, x, w, dy) -> np.ndarray:
    inputs = {"forward": (x, w), "backward_data": (w, dy), "backward_filter": (x, dy)}
    return numerics.convolve(_sim(problem, kernel), *inputs[kernel])


def _stored(values: np.ndarray, dtype: str) -> np.ndarray:
    """Random values as the device stores them (bfloat16 as float32 bfloat16 values)."""
    if dtype == "bfloat16":
        return numerics.to_bfloat16(values.astype(np.float32))
    return values.astype(dtype)


# --- convolutions against the reference ------------------------------------------------------

GEOMETRIES = [
    # size, filter, padding, stride, dilation, groups, mode
    ((7, 6), 3, 1, 1, 1, 1, "cross_correlation"),
    ((9, 8), (3, 2), (0, 1), (2, 1), (1, 2), 2, "convolution"),
    ((8, 8), 3, 2, 3, 2, 4, "cross_correlation"),
    ((5, 5), 1, 0, 2, 1, 1, "convolution"),
    ((5, 6, 4), 3, (1, 1, 0), (1, 2, 1), 1, 1, "cross_correlation"),
    ((6, 5, 7), (2, 3, 3), 1, 1, (2, 1, 1), 3, "convolution"),
]
# (dtype, math type): float32 under every math type but "fma" multiplies TF32-rounded inputs.
NUMERICS = [
    ("float64", "default"),
    ("float32", "fma"),
    ("float32", "default"),
    ("float32", "tensor_op_allow_conversion"),
    ("float16", "tensor_op"),
    ("float16", "fma"),
    ("bfloat16", "tensor_op"),
]
KERNELS = ("forward", "backward_data", "backward_filter")


def _problem(geometry, dtype: str = "float64", math_type: str = "default") -> ConvProblem:
    size, filt, padding, stride, dilation, groups, mode = geometry
    return ConvProblem.create(
        3, 2 * groups, 3 * groups, size, filt, padding, stride, dilation, groups=groups,
        mode=mode, dtype=dtype, math_type=math_type,
    )  # fmt: skip


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize(("dtype", "math_type"), NUMERICS)
def test_every_kernel_matches_the_reference(geometry, dtype: str, math_type: str) -> None:
    problem = _problem(geometry, dtype, math_type)
    rng = np.random.default_rng(0)
    x, w, dy = (_stored(rng.standard_normal(d), dtype)
                for d in (problem.x_dims, problem.w_dims, problem.y_dims))  # fmt: skip
    tf32 = dtype == "float32" and math_type != "fma"
    seen = {
        name: numerics.to_tf32(v) if tf32 else v for name, v in (("x", x), ("w", w), ("dy", dy))
    }
    expected = {
        "forward": ref.forward(problem, seen["x"], seen["w"]),
        "backward_data": ref.backward_data(problem, seen["w"], seen["dy"]),
        "backward_filter": ref.backward_filter(problem, seen["x"], seen["dy"]),
    }
    accumulator = np.float64 if dtype == "float64" else np.float32
    tolerance = 1e-12 if dtype == "float64" else 1e-5
    for kernel in KERNELS:
        got = _run(problem, kernel, x, w, dy)
        assert got.dtype == accumulator, kernel
        np.testing.assert_allclose(got, expected[kernel], rtol=tolerance, atol=tolerance,
                                   err_msg=kernel)  # fmt: skip


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_the_adjoint_identities_tie_the_three_kernels_together(geometry) -> None:
    """<conv(x, w), dy> == <x, backward_data(w, dy)> == <w, backward_filter(x, dy)>."""
    problem = _problem(geometry)
    rng = np.random.default_rng(1)
    x, w, dy = (rng.standard_normal(d) for d in (problem.x_dims, problem.w_dims, problem.y_dims))
    inner = np.vdot(_run(problem, "forward", x, w, dy), dy)
    assert np.vdot(x, _run(problem, "backward_data", x, w, dy)) == pytest.approx(inner)
    assert np.vdot(w, _run(problem, "backward_filter", x, w, dy)) == pytest.approx(inner)


@pytest.mark.parametrize(
    ("size", "filt", "pre", "post", "stride", "dilation"),
    [((7, 6), 3, (2, 0), (0, 1), (2, 1), 1),
     ((6, 5, 4), (3, 2, 3), (0, 1, 2), (2, 0, 1), (1, 2, 1), (1, 1, 2))],
)  # fmt: skip
def test_unequal_pre_and_post_paddings_match_a_direct_convolution(
    size, filt, pre, post, stride, dilation
) -> None:
    """A border slab's padding (issue 40), against the direct convolution tests/test_slabs.py
    checks its geometry with; integer values make every sum exact."""
    from tests import test_slabs as direct

    problem = ConvProblem.create(
        2, 3, 4, size, filt, pre, stride, dilation, padding_after=post, dtype="float64"
    )
    rng = np.random.default_rng(40)
    x, w, dy = (rng.integers(-3, 4, d).astype(np.float64)
                for d in (problem.x_dims, problem.w_dims, problem.y_dims))  # fmt: skip
    expected = {
        "forward": direct._forward(problem, x, w),
        "backward_data": direct._backward_data(problem, w, dy),
        "backward_filter": direct._backward_filter(problem, x, dy),
    }
    for kernel in KERNELS:
        np.testing.assert_array_equal(_run(problem, kernel, x, w, dy), expected[kernel])


def test_a_batch_too_big_to_unroll_at_once_is_convolved_in_slices(monkeypatch) -> None:
    problem = _problem(GEOMETRIES[1])
    rng = np.random.default_rng(2)
    x, w, dy = (rng.standard_normal(d) for d in (problem.x_dims, problem.w_dims, problem.y_dims))
    whole = [_run(problem, kernel, x, w, dy) for kernel in KERNELS]
    monkeypatch.setattr(numerics, "_UNROLLED_LIMIT", 1)  # one sample per slice
    for kernel, expected in zip(KERNELS, whole, strict=True):
        np.testing.assert_allclose(_run(problem, kernel, x, w, dy), expected, atol=1e-12)


def test_an_empty_batch_gives_an_empty_output_and_a_zero_filter_gradient() -> None:
    problem = ConvProblem.create(0, 2, 3, (5, 5), 3, padding=1, dtype="float32")
    x, w = np.zeros(problem.x_dims, np.float32), np.ones(problem.w_dims, np.float32)
    dy = np.zeros(problem.y_dims, np.float32)
    assert _run(problem, "forward", x, w, dy).shape == problem.y_dims
    assert _run(problem, "backward_data", x, w, dy).shape == problem.x_dims
    np.testing.assert_array_equal(_run(problem, "backward_filter", x, w, dy), np.zeros(w.shape))


# --- accumulation, TF32 and bfloat16 on known values -----------------------------------------


def _one_by_one(channels: int, dtype: str, math_type: str) -> ConvProblem:
    return ConvProblem.create(1, channels, 1, (1, 1), 1, dtype=dtype, math_type=math_type)


def test_float32_data_accumulates_in_float32_and_float64_in_float64() -> None:
    """(1 + 2**-20)**2 = 1 + 2**-19 + 2**-40: float32 loses the last term, float64 keeps it."""
    value = 1 + 2**-20
    for dtype, expected in (("float32", 1 + 2**-19), ("float64", 1 + 2**-19 + 2**-40)):
        problem = _one_by_one(1, dtype, "fma" if dtype == "float32" else "default")
        x = np.full(problem.x_dims, value, dtype)
        y = _run(problem, "forward", x, np.full(problem.w_dims, value, dtype), None)
        assert y.dtype == dtype
        assert y.item() == expected


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_accumulate_in_float32(dtype: str) -> None:
    """2048 + 1 + 1: a float16 or bfloat16 accumulator would stop at 2048 (its spacing there
    is 2 or 16); float32 reaches 2050."""
    problem = _one_by_one(3, dtype, "tensor_op")
    x = _stored(np.array([2048.0, 1.0, 1.0]).reshape(problem.x_dims), dtype)
    w = _stored(np.ones(problem.w_dims), dtype)
    y = _run(problem, "forward", x, w, None)
    assert y.dtype == np.float32 and y.item() == 2050


@pytest.mark.parametrize(
    ("dtype", "math_type", "expected"),
    [
        ("float32", "fma", 1 + 2**-11),
        ("float32", "default", 1.0),  # 1 + 2**-11 is half a TF32 step: to even, 1
        ("float32", "tensor_op", 1.0),
        ("float32", "tensor_op_allow_conversion", 1.0),
        ("float64", "default", 1 + 2**-11),
    ],
)
def test_only_float32_under_tensor_core_math_rounds_to_tf32(dtype, math_type, expected) -> None:
    problem = _one_by_one(1, dtype, math_type)
    x = np.full(problem.x_dims, 1 + 2**-11, dtype)
    assert _run(problem, "forward", x, np.ones(problem.w_dims, dtype), None).item() == expected


def test_tf32_rounds_to_nearest_even() -> None:
    step = 2**-10  # TF32's spacing in [1, 2)
    values = [1 + step / 2, 1 + 3 * step / 2, 1 + step / 2 + 2**-20, -(1 + 3 * step / 2),
              1 + step, np.finfo(np.float32).max, np.inf, -np.inf]  # fmt: skip
    expected = [1, 1 + 2 * step, 1 + step, -(1 + 2 * step), 1 + step, np.inf, np.inf, -np.inf]
    got = numerics.to_tf32(np.array(values, np.float32))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
    assert np.isnan(numerics.to_tf32(np.array([np.nan], np.float32))).all()


def test_bfloat16_rounds_to_nearest_even() -> None:
    step = 2**-7  # bfloat16's spacing in [1, 2)
    values = [1 + step / 2, 1 + 3 * step / 2, 1 + step / 2 + 2**-16, -(1 + step / 2), 1 + step,
              np.finfo(np.float32).max, np.inf]  # fmt: skip
    expected = [1, 1 + 2 * step, 1 + step, -1, 1 + step, np.inf, np.inf]
    np.testing.assert_array_equal(numerics.to_bfloat16(np.array(values, np.float32)), expected)
    assert np.isnan(numerics.to_bfloat16(np.array([np.nan], np.float32))).all()


def test_bfloat16_rounding_keeps_nan_and_its_sign_silently() -> None:
    """A signalling NaN (0x7F810000, whose payload lies below bfloat16's bits) stays NaN and
    turns quiet, as on the device, with no numpy warning; a negative NaN stays negative."""
    nans = np.array([0x7F810000, 0xFFC00000, 0x7FC00000], np.uint32).view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rounded = numerics.to_bfloat16(nans)
    assert rounded.dtype == np.float32 and np.isnan(rounded).all()
    np.testing.assert_array_equal(np.signbit(rounded), [False, True, False])


# --- storing results -------------------------------------------------------------------------


def test_blend_never_reads_the_old_output_when_beta_is_zero() -> None:
    result = np.ones(4, np.float32)
    for old in (None, np.full(4, np.nan, np.float32)):
        stored = numerics.blend(result, old, 2.0, 0.0, "float16")
        assert stored.dtype == np.float16
        np.testing.assert_array_equal(stored, [2] * 4)
    with pytest.raises(ValueError, match="beta"):
        numerics.blend(result, None, 1.0, 1.0, "float32")


def test_blend_reads_alpha_and_beta_as_float32_unless_the_output_is_float64() -> None:
    blended = numerics.blend(np.ones(2, np.float32), np.full(2, 3.0, np.float32), 0.5, 0.1,
                             "float32")  # fmt: skip
    assert blended.dtype == np.float32
    assert blended[0] == np.float32(0.5) + np.float32(0.1) * np.float32(3.0)
    assert numerics.blend(np.ones(1), None, 0.1, 0.0, "float64")[0] == 0.1


def test_blend_rounds_to_the_storage_dtype_silently() -> None:
    bf16 = numerics.blend(np.array([1 + 2**-8, 3.0], np.float32), None, 1.0, 0.0, "bfloat16")
    assert bf16.dtype == np.float32
    np.testing.assert_array_equal(bf16, [1.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # overflow is inf on the device, not a warning
        assert numerics.blend(np.array([1e6], np.float32), None, 1.0, 0.0, "float16")[0] == np.inf


# --- bias, add, activation, pooling, softmax -------------------------------------------------


def test_add_tensor_repeats_size_one_dims_and_refuses_others() -> None:
    bias = np.arange(3.0, dtype=np.float32).reshape(1, 3, 1, 1)
    added = numerics.add_tensor(bias, (2, 3, 2, 2))
    assert added.shape == (2, 3, 2, 2) and added.dtype == np.float32
    np.testing.assert_array_equal(added[1, :, 1, 0], [0, 1, 2])
    for shape in ((3, 1, 1), (1, 2, 1, 1)):  # a rank short; a dim neither 1 nor c's
        with pytest.raises(ValueError, match="broadcast"):
            numerics.add_tensor(np.zeros(shape, np.float32), (2, 3, 2, 2))


def test_backward_bias_sums_all_but_the_channels() -> None:
    dy = np.arange(2 * 3 * 2 * 2 * 2, dtype=np.float16).reshape(2, 3, 2, 2, 2)
    db = numerics.backward_bias(dy)
    assert db.shape == (1, 3, 1, 1, 1) and db.dtype == np.float32
    np.testing.assert_array_equal(db.ravel(), dy.astype(np.float64).sum(axis=(0, 2, 3, 4)))


ACTIVATIONS = {
    # mode: (coef, forward of X)
    "relu": (0.0, [0, 0, 0, 0.5, 2]),
    "clipped_relu": (1.0, [0, 0, 0, 0.5, 1]),
    "elu": (0.5, [0.5 * np.expm1(-2), 0.5 * np.expm1(-0.5), 0, 0.5, 2]),
    "sigmoid": (0.0, 1 / (1 + np.exp(-np.array([-2, -0.5, 0, 0.5, 2])))),
    "tanh": (0.0, np.tanh([-2, -0.5, 0, 0.5, 2])),
}
X = np.array([-2, -0.5, 0, 0.5, 2])


@pytest.mark.parametrize("mode", ACTIVATIONS)
def test_activations_on_known_values(mode: str) -> None:
    coef, expected = ACTIVATIONS[mode]
    np.testing.assert_allclose(numerics.activation_forward(mode, coef, X), expected, atol=1e-15)


@pytest.mark.parametrize("mode", ACTIVATIONS)
def test_activation_backward_is_the_gradient_of_forward(mode: str) -> None:
    coef = ACTIVATIONS[mode][0] or 1.0
    x = np.array([-1.5, -0.3, 0.4, 0.7, 2.5])
    y = numerics.activation_forward(mode, coef, x)
    dy = np.array([1.0, -2.0, 0.5, 3.0, 1.5])
    step = 1e-7
    slope = (numerics.activation_forward(mode, coef, x + step) - y) / step
    np.testing.assert_allclose(numerics.activation_backward(mode, coef, y, dy, x), dy * slope,
                               atol=1e-5)  # fmt: skip


def test_relu_maps_nan_to_zero_as_cudnn_does_without_nan_propagation() -> None:
    x = np.array([np.nan, 1.0], np.float32)
    np.testing.assert_array_equal(numerics.activation_forward("relu", 0.0, x), [0, 1])
    np.testing.assert_array_equal(numerics.activation_forward("clipped_relu", 6.0, x), [0, 1])
    assert np.isnan(numerics.activation_forward("sigmoid", 0.0, x)[0])


GRID = np.array([[1.0, -2.0, 0.0], [3.0, 0.5, 3.0], [-1.0, 4.0, 2.0]]).reshape(1, 1, 3, 3)


def test_max_pooling_skips_padding_and_sends_gradients_to_the_first_maximum() -> None:
    y = numerics.pooling_forward("max", (2, 2), (1, 1), (2, 2), GRID)
    np.testing.assert_array_equal(y[0, 0], [[1, 0], [3, 4]])  # 1 + (3 + 2 - 2) // 2 = 2
    ones = np.ones_like(y)
    dx = numerics.pooling_backward("max", (2, 2), (1, 1), (2, 2), y, ones, GRID)
    np.testing.assert_array_equal(dx[0, 0], [[1, 0, 1], [1, 0, 0], [0, 1, 0]])
    # Overlapping 2x2 windows, stride 1: the 4 at (2, 1) is the maximum of two windows.
    y = numerics.pooling_forward("max_deterministic", (2, 2), (0, 0), (1, 1), GRID)
    np.testing.assert_array_equal(y[0, 0], [[3, 3], [4, 4]])
    dx = numerics.pooling_backward("max_deterministic", (2, 2), (0, 0), (1, 1), y, ones, GRID)
    np.testing.assert_array_equal(dx[0, 0], [[0, 0, 0], [1, 0, 1], [0, 2, 0]])
    # A tie goes to the first maximum in the window's row-major order.
    tie = np.array([[1.0, 2.0], [2.0, 2.0]]).reshape(1, 1, 2, 2)
    y = numerics.pooling_forward("max", (2, 2), (0, 0), (1, 1), tie)
    dx = numerics.pooling_backward("max", (2, 2), (0, 0), (1, 1), y, np.ones_like(y), tie)
    np.testing.assert_array_equal(dx[0, 0], [[0, 1], [0, 0]])


def test_max_pooling_passes_over_nan() -> None:
    x = np.array([[np.nan, 1.0], [2.0, np.nan]], np.float32).reshape(1, 1, 2, 2)
    assert numerics.pooling_forward("max", (2, 2), (0, 0), (1, 1), x).item() == 2.0


def test_average_pooling_counts_padding_or_not() -> None:
    window, padding, stride = (2, 2), (1, 1), (2, 2)
    included = numerics.pooling_forward("average", window, padding, stride, GRID)
    np.testing.assert_allclose(included[0, 0], [[0.25, -0.5], [0.5, 2.375]])
    excluded = numerics.pooling_forward("average_exclude_padding", window, padding, stride, GRID)
    np.testing.assert_allclose(excluded[0, 0], [[1.0, -1.0], [1.0, 2.375]])
    ones = np.ones_like(excluded)
    dx = numerics.pooling_backward("average_exclude_padding", window, padding, stride,
                                   excluded, ones, GRID)  # fmt: skip
    np.testing.assert_allclose(dx[0, 0], [[1, 0.5, 0.5], [0.5, 0.25, 0.25], [0.5, 0.25, 0.25]])
    dx = numerics.pooling_backward("average", window, padding, stride, included, ones, GRID)
    np.testing.assert_allclose(dx[0, 0], np.full((3, 3), 0.25))


@pytest.mark.parametrize("mode", ["max", "average", "average_exclude_padding"])
def test_pooling_backward_is_the_gradient_of_forward_in_3d(mode: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 4, 5, 3))
    args = ((2, 3, 2), (1, 1, 0), (2, 1, 1))
    y = numerics.pooling_forward(mode, *args, x)
    assert y.shape == (2, 2, 3, 5, 2)
    dy = rng.standard_normal(y.shape)
    dx = numerics.pooling_backward(mode, *args, y, dy, x)
    step = 1e-7
    for index in [(0, 0, 0, 0, 0), (1, 1, 2, 3, 1), (0, 1, 3, 4, 2)]:
        bumped = x.copy()
        bumped[index] += step
        slope = np.vdot(numerics.pooling_forward(mode, *args, bumped) - y, dy) / step
        assert dx[index] == pytest.approx(slope, rel=1e-5, abs=1e-6)


def test_softmax_runs_over_channels_or_over_the_whole_sample() -> None:
    x = np.log(np.array([1.0, 3.0, 2.0, 2.0])).reshape(1, 2, 1, 2)  # C=2, W=2
    channel = numerics.softmax_forward("accurate", "channel", x)
    np.testing.assert_allclose(channel.reshape(2, 2), [[1 / 3, 0.6], [2 / 3, 0.4]])
    instance = numerics.softmax_forward("accurate", "instance", x)
    np.testing.assert_allclose(instance.ravel(), [0.125, 0.375, 0.25, 0.25])
    log = numerics.softmax_forward("log", "instance", x)
    np.testing.assert_allclose(log, np.log(instance))


def test_fast_softmax_has_no_overflow_protection() -> None:
    x = np.array([100.0, 99.0], np.float32).reshape(1, 2, 1, 1)  # exp(100) > float32's max
    assert np.isnan(numerics.softmax_forward("fast", "channel", x)).all()
    accurate = numerics.softmax_forward("accurate", "channel", x)
    np.testing.assert_allclose(accurate.ravel(), [1, np.exp(-1)] / (1 + np.exp(-1)), rtol=1e-6)
    small = x / 100
    np.testing.assert_allclose(numerics.softmax_forward("fast", "channel", small),
                               numerics.softmax_forward("accurate", "channel", small))  # fmt: skip


SOFTMAXES = list(itertools.product(("fast", "accurate", "log"), ("channel", "instance")))


@pytest.mark.parametrize(("algorithm", "mode"), SOFTMAXES)
def test_softmax_backward_is_the_gradient_of_forward(algorithm: str, mode: str) -> None:
    rng = np.random.default_rng(4)
    x, dy = rng.standard_normal((2, 3, 2, 2)), rng.standard_normal((2, 3, 2, 2))
    y = numerics.softmax_forward(algorithm, mode, x)
    dx = numerics.softmax_backward(algorithm, mode, y, dy)
    step = 1e-6
    for index in [(0, 0, 0, 0), (1, 2, 1, 0), (0, 1, 1, 1)]:
        bumped = x.copy()
        bumped[index] += step
        slope = np.vdot(numerics.softmax_forward(algorithm, mode, bumped) - y, dy) / step
        assert dx[index] == pytest.approx(slope, rel=1e-4, abs=1e-6)


def test_unknown_modes_are_refused() -> None:
    x = np.zeros((1, 2, 2, 2), np.float32)
    for call in (
        lambda: numerics.activation_forward("swish", 0.0, x),
        lambda: numerics.pooling_forward("median", (1, 1), (0, 0), (1, 1), x),
        lambda: numerics.softmax_forward("exact", "channel", x),
        lambda: numerics.softmax_backward("accurate", "pixel", x, x),
    ):
        with pytest.raises(ValueError, match="unknown"):
            call()


# --- status names against the real libraries -------------------------------------------------

real_libraries = pytest.mark.skipif(SIMULATED, reason="compares with the real libraries")
UNKNOWN_CODES = [-1, 12345, 2**31 - 1, -(2**31)]


@real_libraries
def test_cudnn_status_names_are_cudnns() -> None:
    """Every status cudnn_graph.h defines (all below 6000), and codes it does not."""
    codes = [*range(6000), *UNKNOWN_CODES]
    differ = [(s, statuses.cudnn_status_name(s), _cudnn.status_name(s)) for s in codes
              if statuses.cudnn_status_name(s) != _cudnn.status_name(s)]  # fmt: skip
    assert differ == []


# The codes the simulated libraries may raise, each of which must be named.
SIMULATED_CUDA_CODES = {0, 1, 2, 3, 34, 35, 46, 100, 101, 400, 600, 700, 716, 803, 804, 999}


@real_libraries
def test_cuda_error_names_are_the_runtimes() -> None:
    """Each code the simulator knows is named as the runtime names it (cudaGetErrorName gives
    the identifier of the runtime header's cudaError enum), and a code the runtime does not
    know, the simulator does not know either. (Descriptions come from the runtime only inside
    its errors: the one a machine without a driver raises is checked.)"""
    names = cuda_error_names()
    unrecognized = statuses.cuda_error_name(12345)
    codes = [*range(1000), *UNKNOWN_CODES]
    known = {c for c in codes if statuses.cuda_error_name(c) != unrecognized}
    assert known >= SIMULATED_CUDA_CODES
    assert known <= set(names), known - set(names)
    for code in known:
        assert statuses.cuda_error_name(code) == names[code], code
    try:
        _cuda.device_count()
    except NoDeviceError as exc:
        assert statuses.cuda_error_string(exc.code) == exc.description
