"""The arithmetic of the simulated cuDNN, in numpy, on arrays in logical order.

x is (N, C, *spatial), w (K, C/groups, *filter), y (N, K, *out), for 2 or 3 spatial dims.
Sums run in cuDNN's accumulator type: float32 for float16, bfloat16 and float32 data, float64
for float64. float32 data under a math type that lets cuDNN use tensor cores (anything but
"fma") is rounded to TF32 first, as Ampere and later GPUs do. Loops run over filter or window
offsets only, each a strided slice of the padded input, so small problems stay fast.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from ucudnn.core.array import bfloat16_bits, bfloat16_values
from ucudnn.testing.simulator.problem import SimProblem

Array = np.ndarray[Any, np.dtype[Any]]


def accumulator(dtype: str) -> type[np.floating[Any]]:
    return np.float64 if dtype == "float64" else np.float32


def to_tf32(values: Array) -> Array:
    """float32 values rounded to TF32's 10 explicit mantissa bits, to nearest even."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    rounded = (bits + np.uint32(0xFFF) + ((bits >> 13) & np.uint32(1))) & np.uint32(0xFFFFE000)
    return np.where(np.isnan(values), values, rounded.view(np.float32))


def to_bfloat16(values: Array) -> Array:
    """float32 values rounded to bfloat16 (to nearest even), as float32."""
    return bfloat16_values(bfloat16_bits(values))


def _operand(values: Array, problem: SimProblem) -> Array:
    """An input as the multipliers see it, in the accumulator type."""
    acc = accumulator(problem.dtype)
    if problem.dtype == "float32" and problem.math_type != "fma":
        return to_tf32(values).astype(acc)
    return values.astype(acc)


# --- convolutions ----------------------------------------------------------------------------


def convolve(problem: SimProblem, first: Array, second: Array) -> Array:
    """The kernel's result from its two inputs in role order: forward (x, w) -> y,
    backward_data (w, dy) -> dx, backward_filter (x, dy) -> dw; in the accumulator type."""
    a, b = _operand(first, problem), _operand(second, problem)
    if problem.kernel == "forward":
        return _forward(problem, a, b)
    if problem.kernel == "backward_data":
        return _backward_data(problem, a, b)
    return _backward_filter(problem, a, b)


def _at(trailing: tuple[int, ...] | tuple[slice, ...]) -> tuple[Any, ...]:
    """An index that takes `trailing` in the last dims (numpy's stubs cannot type the tuple
    written out)."""
    return (..., *trailing)


def _grouped(a: Array, groups: int) -> Array:
    """(N, C, ...) -> (N, G, C/G, ...)."""
    return a.reshape(a.shape[0], groups, a.shape[1] // groups, *a.shape[2:])


def _filter(problem: SimProblem, w: Array) -> Array:
    """(K, C/G, *f) -> (G, K/G, C/G, *f); "convolution" mode flips the filter."""
    if problem.mode == "convolution":
        w = np.flip(w, axis=tuple(range(2, w.ndim)))
    return w.reshape(problem.groups, w.shape[0] // problem.groups, *w.shape[1:])


def _windows(problem: SimProblem) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """Each filter offset, with the slices of the padded input it meets at every output."""
    out = problem.y_dims[2:]
    for offset in itertools.product(*(range(f) for f in problem.filter_size)):
        yield (
            offset,
            tuple(
                slice(o * d, o * d + s * (n - 1) + 1, s)
                for o, d, s, n in zip(offset, problem.dilation, problem.stride, out, strict=True)
            ),
        )


def _padding(problem: SimProblem) -> list[tuple[int, int]]:
    return [(0, 0), (0, 0), *((p, p) for p in problem.padding)]


def _forward(problem: SimProblem, x: Array, w: Array) -> Array:
    xp = _grouped(np.pad(x, _padding(problem)), problem.groups)
    wg = _filter(problem, w)
    y = np.zeros((x.shape[0], problem.groups, wg.shape[1], *problem.y_dims[2:]), x.dtype)
    for offset, slices in _windows(problem):
        y += np.einsum("ngc...,gkc->ngk...", xp[_at(slices)], wg[_at(offset)])
    return y.reshape(problem.y_dims)


def _backward_data(problem: SimProblem, w: Array, dy: Array) -> Array:
    wg = _filter(problem, w)
    dyg = _grouped(dy, problem.groups)
    n, c, *size = problem.x_dims
    padded = [s + 2 * p for s, p in zip(size, problem.padding, strict=True)]
    dx = np.zeros((n, problem.groups, c // problem.groups, *padded), dy.dtype)
    for offset, slices in _windows(problem):
        dx[_at(slices)] += np.einsum("ngk...,gkc->ngc...", dyg, wg[_at(offset)])
    inner = tuple(slice(p, p + s) for p, s in zip(problem.padding, size, strict=True))
    return np.asarray(dx.reshape(n, c, *padded)[_at(inner)])


def _flat(a: Array) -> Array:
    """(N, G, C, *spatial) -> (N, G, C, positions)."""
    return a.reshape(*a.shape[:3], -1)


def _backward_filter(problem: SimProblem, x: Array, dy: Array) -> Array:
    xp = _grouped(np.pad(x, _padding(problem)), problem.groups)
    dyg = _flat(_grouped(dy, problem.groups))
    k = problem.w_dims[0]
    dw = np.zeros((problem.groups, k // problem.groups, *problem.w_dims[1:]), x.dtype)
    for offset, slices in _windows(problem):
        dw[_at(offset)] = np.einsum("ngkp,ngcp->gkc", dyg, _flat(xp[_at(slices)]))
    dw = dw.reshape(problem.w_dims)
    if problem.mode == "convolution":
        dw = np.flip(dw, axis=tuple(range(2, dw.ndim)))
    return dw


# --- storing results -------------------------------------------------------------------------


def blend(result: Array, old: Array | None, alpha: float, beta: float, dtype: str) -> Array:
    """alpha * result + beta * old, rounded to `dtype` (bfloat16 as float32 values). alpha and
    beta are read as float32 unless the output is float64, as cuDNN reads them; with beta 0,
    `old` is never read, so whatever it held (NaN included) cannot leak through."""
    acc = accumulator(dtype)
    out = acc(alpha) * result.astype(acc)
    if beta != 0:
        if old is None:
            raise ValueError("beta != 0 needs the old output")
        out = out + acc(beta) * old.astype(acc)
    if dtype == "bfloat16":
        return to_bfloat16(out)
    return np.asarray(out.astype(dtype))


# --- element-wise, bias, activation, pooling, softmax ----------------------------------------


def _acc(values: Array) -> Array:
    return values.astype(np.float64 if values.dtype == np.float64 else np.float32)


def add_tensor(a: Array, c_shape: tuple[int, ...]) -> Array:
    """a broadcast over c's shape (its size-1 dims repeated), as cudnnAddTensor adds it."""
    return np.broadcast_to(_acc(a), c_shape)


def backward_bias(dy: Array) -> Array:
    """dy summed over every dim but the channels: (1, K, 1, ...)."""
    axes = tuple(i for i in range(dy.ndim) if i != 1)
    return np.asarray(_acc(dy).sum(axis=axes, keepdims=True))


def activation_forward(mode: str, coef: float, x: Array) -> Array:
    x = _acc(x)
    if mode == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if mode == "relu":
        return np.maximum(x, 0)
    if mode == "tanh":
        return np.tanh(x)
    if mode == "clipped_relu":
        return np.asarray(np.minimum(np.maximum(x, 0), x.dtype.type(coef)))
    if mode == "elu":
        return np.where(x > 0, x, x.dtype.type(coef) * np.expm1(np.minimum(x, 0)))
    raise ValueError(f"unknown activation mode {mode!r}")


def activation_backward(mode: str, coef: float, y: Array, dy: Array, x: Array) -> Array:
    """dx from the forward's output y, the gradient dy and its input x."""
    y, dy, x = _acc(y), _acc(dy), _acc(x)
    if mode == "sigmoid":
        return np.asarray(dy * y * (1 - y))
    if mode == "relu":
        return dy * (x > 0)
    if mode == "tanh":
        return np.asarray(dy * (1 - y * y))
    if mode == "clipped_relu":
        return dy * ((x > 0) & (x < coef))
    if mode == "elu":
        return np.where(x > 0, dy, dy * (y + x.dtype.type(coef)))
    raise ValueError(f"unknown activation mode {mode!r}")


def _pool_windows(
    window: tuple[int, ...], stride: tuple[int, ...], out: tuple[int, ...]
) -> Iterator[tuple[slice, ...]]:
    for offset in itertools.product(*(range(w) for w in window)):
        yield tuple(
            slice(o, o + s * (n - 1) + 1, s) for o, s, n in zip(offset, stride, out, strict=True)
        )


def _pooled_size(
    size: tuple[int, ...],
    window: tuple[int, ...],
    padding: tuple[int, ...],
    stride: tuple[int, ...],
) -> tuple[int, ...]:
    return tuple(
        1 + (n + 2 * p - w) // s for n, w, p, s in zip(size, window, padding, stride, strict=True)
    )


def _pad(x: Array, padding: tuple[int, ...], value: float) -> Array:
    return np.pad(x, [(0, 0), (0, 0), *((p, p) for p in padding)], constant_values=value)


def _divisors(
    mode: str, shape: tuple[int, ...], window: tuple[int, ...], padding: tuple[int, ...],
    stride: tuple[int, ...], dtype: np.dtype[Any],
) -> Array:  # fmt: skip
    """What average pooling divides each output by: the window, or its part inside x."""
    if mode == "average":
        return np.asarray(float(np.prod(window)))
    inside = _pad(np.ones((1, 1, *shape[2:]), dtype), padding, 0)
    out = _pooled_size(shape[2:], window, padding, stride)
    return np.asarray(sum(inside[_at(s)] for s in _pool_windows(window, stride, out)))


def pooling_forward(
    mode: str, window: tuple[int, ...], padding: tuple[int, ...], stride: tuple[int, ...], x: Array
) -> Array:
    x = _acc(x)
    out = _pooled_size(x.shape[2:], window, padding, stride)
    if mode.startswith("max"):
        xp = _pad(x, padding, -np.inf)
        return np.asarray(
            np.maximum.reduce([xp[_at(s)] for s in _pool_windows(window, stride, out)])
        )
    xp = _pad(x, padding, 0)
    total = sum(xp[_at(s)] for s in _pool_windows(window, stride, out))
    return total / _divisors(mode, x.shape, window, padding, stride, x.dtype)  # type: ignore[no-any-return]


def pooling_backward(
    mode: str, window: tuple[int, ...], padding: tuple[int, ...], stride: tuple[int, ...],
    y: Array, dy: Array, x: Array,
) -> Array:  # fmt: skip
    """dx: max pooling sends each gradient to the first input that was the maximum; average
    pooling spreads it over the window."""
    y, dy, x = _acc(y), _acc(dy), _acc(x)
    out = y.shape[2:]
    dx = np.zeros(_pad(x, padding, 0).shape, x.dtype)
    if mode.startswith("max"):
        xp = _pad(x, padding, -np.inf)
        taken = np.zeros(y.shape, bool)
        for s in _pool_windows(window, stride, out):
            first = (xp[_at(s)] == y) & ~taken
            dx[_at(s)] += dy * first
            taken |= first
    else:
        share = dy / _divisors(mode, x.shape, window, padding, stride, x.dtype)
        for s in _pool_windows(window, stride, out):
            dx[_at(s)] += share
    inner = tuple(slice(p, p + n) for p, n in zip(padding, x.shape[2:], strict=True))
    return np.asarray(dx[_at(inner)])


def _softmax_axes(mode: str, ndim: int) -> tuple[int, ...]:
    return (1,) if mode == "channel" else tuple(range(1, ndim))


def softmax_forward(algorithm: str, mode: str, x: Array) -> Array:
    """softmax (fast and accurate alike: both are the same function) or log-softmax, over the
    channels at each position ("channel") or over all of a sample ("instance")."""
    x = _acc(x)
    axes = _softmax_axes(mode, x.ndim)
    shifted = x - x.max(axis=axes, keepdims=True)
    if algorithm == "log":
        return np.asarray(shifted - np.log(np.exp(shifted).sum(axis=axes, keepdims=True)))
    e = np.exp(shifted)
    return e / e.sum(axis=axes, keepdims=True)  # type: ignore[no-any-return]


def softmax_backward(algorithm: str, mode: str, y: Array, dy: Array) -> Array:
    y, dy = _acc(y), _acc(dy)
    axes = _softmax_axes(mode, y.ndim)
    if algorithm == "log":
        return dy - np.exp(y) * dy.sum(axis=axes, keepdims=True)  # type: ignore[no-any-return]
    return y * (dy - (dy * y).sum(axis=axes, keepdims=True))  # type: ignore[no-any-return]
