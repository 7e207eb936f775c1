"""The simulated cuDNN's arithmetic against the independent numpy reference (no device)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests import reference_conv as ref
from ucudnn.core.problem import ConvProblem
from ucudnn.testing.simulator import numerics
from ucudnn.testing.simulator.problem import SimProblem


def _sim(problem: ConvProblem, kernel: str) -> SimProblem:
    return SimProblem(
        kernel=kernel, dtype=problem.dtype, compute_dtype=problem.compute_dtype,
        math_type=problem.math_type, layout=problem.layout,
        filter_layout=problem.filter_layout, x_dims=problem.x_dims, w_dims=problem.w_dims,
        y_dims=problem.y_dims, padding=problem.padding, stride=problem.stride,
        dilation=problem.dilation, groups=problem.groups, mode=problem.mode,
    )  # fmt: skip


CASES = [
    # size, filter, padding, stride, dilation, groups, mode
    ((7, 6), 3, 1, 1, 1, 1, "cross_correlation"),
    ((9, 8), (3, 2), (0, 1), (2, 1), (1, 2), 2, "convolution"),
    ((5, 6, 4), 3, (1, 1, 0), (1, 2, 1), 1, 1, "cross_correlation"),
    ((6, 5, 7), (2, 3, 3), 1, 1, (2, 1, 1), 3, "convolution"),
]


@pytest.mark.parametrize("case", CASES)
def test_the_three_kernels_match_the_reference(case) -> None:
    size, filt, padding, stride, dilation, groups, mode = case
    problem = ConvProblem.create(3, 2 * groups, 3 * groups, size, filt, padding, stride,
                                 dilation, groups=groups, mode=mode, dtype="float64")  # fmt: skip
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(problem.x_dims), rng.standard_normal(problem.w_dims)
    dy = rng.standard_normal(problem.y_dims)
    got = {
        "forward": numerics.convolve(_sim(problem, "forward"), x, w),
        "backward_data": numerics.convolve(_sim(problem, "backward_data"), w, dy),
        "backward_filter": numerics.convolve(_sim(problem, "backward_filter"), x, dy),
    }
    np.testing.assert_allclose(got["forward"], ref.forward(problem, x, w), atol=1e-12)
    np.testing.assert_allclose(got["backward_data"], ref.backward_data(problem, w, dy), atol=1e-12)
    np.testing.assert_allclose(
        got["backward_filter"], ref.backward_filter(problem, x, dy), atol=1e-12
    )
    # The adjoint identities tie the three together, whatever the reference does.
    inner = np.vdot(got["forward"], dy)
    assert np.vdot(x, got["backward_data"]) == pytest.approx(inner)
    assert np.vdot(w, got["backward_filter"]) == pytest.approx(inner)


def test_half_types_and_tf32_accumulate_in_float32() -> None:
    problem = ConvProblem.create(2, 8, 4, (6, 6), 3, padding=1, dtype="float16")
    rng = np.random.default_rng(1)
    x = rng.standard_normal(problem.x_dims).astype(np.float16)
    w = rng.standard_normal(problem.w_dims).astype(np.float16)
    y = numerics.convolve(_sim(problem, "forward"), x, w)
    assert y.dtype == np.float32
    exact = ref.forward(problem, x.astype(np.float64), w.astype(np.float64))
    assert np.abs(y - exact).max() < 1e-4
    tf32 = ConvProblem.create(2, 8, 4, (6, 6), 3, padding=1, math_type="default")
    fma = ConvProblem.create(2, 8, 4, (6, 6), 3, padding=1, math_type="fma")
    x32, w32 = x.astype(np.float32) + np.float32(2**-14), w.astype(np.float32)
    rounded = numerics.convolve(_sim(tf32, "forward"), x32, w32)
    exact32 = numerics.convolve(_sim(fma, "forward"), x32, w32)
    assert 0 < np.abs(rounded - exact32).max() < 1e-2


def test_rounding_to_tf32_and_bfloat16_goes_to_nearest_even() -> None:
    values = np.array([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-10, np.nan], np.float32)
    np.testing.assert_array_equal(numerics.to_tf32(values)[:3], [1, 1 + 2**-9, 1 + 2**-10])
    assert np.isnan(numerics.to_tf32(values)[3])
    np.testing.assert_array_equal(
        numerics.to_bfloat16(np.array([1 + 2**-8, 1 + 3 * 2**-8], np.float32)), [1, 1 + 2**-6]
    )


def test_blend_never_reads_the_old_output_when_beta_is_zero() -> None:
    result = np.ones(4, np.float32)
    old = np.full(4, np.nan, np.float32)
    np.testing.assert_array_equal(numerics.blend(result, old, 2.0, 0.0, "float16"), [2] * 4)
    blended = numerics.blend(result, np.full(4, 3.0), 0.5, 0.1, "float32")
    assert blended.dtype == np.float32
    # alpha and beta are float32 for non-double outputs: 0.1 is not exactly 0.1 then.
    assert blended[0] == np.float32(0.5) + np.float32(0.1) * np.float32(3.0)


def test_framework_operations_on_hand_computed_cases() -> None:
    x = np.array([[[[1.0, -2.0], [3.0, 0.5]]]], np.float32)  # (1, 1, 2, 2)
    np.testing.assert_array_equal(numerics.activation_forward("relu", 0, x), np.maximum(x, 0))
    np.testing.assert_array_equal(
        numerics.activation_forward("clipped_relu", 2.0, x), np.clip(x, 0, 2)
    )
    pooled = numerics.pooling_forward("max", (2, 2), (0, 0), (1, 1), x)
    assert pooled.shape == (1, 1, 1, 1) and pooled[0, 0, 0, 0] == 3.0
    ones = np.ones_like(pooled)
    back = numerics.pooling_backward("max", (2, 2), (0, 0), (1, 1), pooled, ones, x)
    np.testing.assert_array_equal(back, [[[[0, 0], [1, 0]]]])
    mean = numerics.pooling_forward("average_exclude_padding", (2, 2), (1, 1), (2, 2), x)
    np.testing.assert_allclose(mean[0, 0], [[1.0, -2.0], [3.0, 0.5]])
    padded = numerics.pooling_forward("average", (2, 2), (1, 1), (2, 2), x)
    np.testing.assert_allclose(padded[0, 0], [[0.25, -0.5], [0.75, 0.125]])
    bias = numerics.backward_bias(np.ones((2, 3, 4, 5), np.float32))
    np.testing.assert_array_equal(bias, np.full((1, 3, 1, 1), 40))
    np.testing.assert_array_equal(
        numerics.add_tensor(np.arange(3.0).reshape(1, 3, 1, 1), (2, 3, 2, 2))[1, :, 1, 1],
        [0, 1, 2],
    )


SOFTMAXES = list(itertools.product(("accurate", "log"), ("channel", "instance")))


@pytest.mark.parametrize(("algorithm", "mode"), SOFTMAXES)
def test_softmax_backward_is_the_gradient_of_forward(algorithm, mode) -> None:
    rng = np.random.default_rng(2)
    x, dy = rng.standard_normal((2, 3, 2, 2)), rng.standard_normal((2, 3, 2, 2))
    y = numerics.softmax_forward(algorithm, mode, x)
    dx = numerics.softmax_backward(algorithm, mode, y, dy)
    step = 1e-6
    for index in [(0, 0, 0, 0), (1, 2, 1, 0), (0, 1, 1, 1)]:
        bumped = x.copy()
        bumped[index] += step
        slope = np.vdot(numerics.softmax_forward(algorithm, mode, bumped) - y, dy) / step
        assert dx[index] == pytest.approx(slope, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("mode", ["sigmoid", "relu", "tanh", "clipped_relu", "elu"])
def test_activation_backward_is_the_gradient_of_forward(mode) -> None:
    x = np.array([-1.5, -0.3, 0.4, 1.2, 2.5])
    y = numerics.activation_forward(mode, 1.0, x)
    dx = numerics.activation_backward(mode, 1.0, y, np.ones_like(x), x)
    step = 1e-7
    slope = (numerics.activation_forward(mode, 1.0, x + step) - y) / step
    np.testing.assert_allclose(dx, slope, atol=1e-5)
