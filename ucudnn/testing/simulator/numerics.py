"""The arithmetic of the simulated cuDNN, in numpy, on arrays in logical order.

x is (N, C, *spatial), w (K, C/groups, *filter), y (N, K, *out), for 2 or 3 spatial dims.
Arrays arrive in their storage dtype (bfloat16 as float32 arrays of bfloat16 values); results
come back in cuDNN's accumulator type, float32 for float16, bfloat16 and float32 data and float64
for float64, and `blend` rounds them to the storage dtype as the output is written.

Convolutions unroll the input once per filter offset (im2col) and multiply with one matmul, so
the loops run over filter offsets, never over pixels. Every function computes like the device:
inf and NaN are values, never numpy warnings.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ParamSpec, TypeVar

import ml_dtypes
import numpy as np

from ucudnn.testing.simulator.problem import SimProblem

__all__ = [
    "activation_backward",
    "activation_forward",
    "add_tensor",
    "backward_bias",
    "blend",
    "convolve",
    "pooling_backward",
    "pooling_forward",
    "softmax_backward",
    "softmax_forward",
    "to_bfloat16",
    "to_tf32",
]

Array = np.ndarray[Any, np.dtype[Any]]
_P = ParamSpec("_P")
_R = TypeVar("_R")

# Math types that let cuDNN run float32 convolutions on TF32 tensor cores (Ampere and later).
_TF32_MATH = ("default", "tensor_op", "tensor_op_allow_conversion")
# The most elements one unrolled batch slice may hold (64 MiB of float32): larger batches are
# convolved a slice at a time.
_UNROLLED_LIMIT = 2**24


def _quiet(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run `function` with numpy's floating-point warnings off: overflow to inf, NaN inputs
    and 0/0 are results on the device, not errors."""

    @functools.wraps(function)
    def quiet(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with np.errstate(all="ignore"):
            return function(*args, **kwargs)

    return quiet


# --- rounding --------------------------------------------------------------------------------


def to_tf32(values: Array) -> Array:
    """float32 values rounded to TF32 (10 explicit mantissa bits, to nearest even), as float32;
    NaN stays NaN, and values past TF32's largest round to inf."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    rounded = (bits + np.uint32(0xFFF) + ((bits >> 13) & np.uint32(1))) & np.uint32(0xFFFFE000)
    return np.where(np.isnan(values), values, rounded.view(np.float32))


@_quiet
def to_bfloat16(values: Array) -> Array:
    """float32 values rounded to bfloat16 (7 explicit mantissa bits, to nearest even), as
    float32; NaN stays NaN (a signalling one turns quiet, without numpy's warning)."""
    rounded = np.asarray(values, dtype=np.float32).astype(ml_dtypes.bfloat16)
    return rounded.astype(np.float32)


def _accumulator(dtype: str) -> type[np.floating[Any]]:
    """cuDNN's accumulator for a storage dtype."""
    return np.float64 if dtype == "float64" else np.float32


def _acc(values: Array) -> Array:
    """Values in the accumulator type of their storage dtype (bfloat16 arrives as float32)."""
    return values.astype(np.float64 if values.dtype == np.float64 else np.float32)


# --- convolutions ----------------------------------------------------------------------------


@_quiet
def convolve(problem: SimProblem, first: Array, second: Array) -> Array:
    """The kernel's exact result from its two inputs in role order, in the accumulator type:
    forward (x, w) -> y, backward_data (w, dy) -> dx, backward_filter (x, dy) -> dw."""
    a, b = _operand(first, problem), _operand(second, problem)
    n = problem.batch
    per_sample = problem.x_dims[1] * math.prod(problem.filter_size) * math.prod(problem.y_dims[2:])
    step = max(1, _UNROLLED_LIMIT // per_sample)
    starts = range(0, max(n, 1), step)
    if problem.kernel == "forward":
        return np.concatenate([_forward(problem, a[i : i + step], b) for i in starts])
    if problem.kernel == "backward_data":
        return np.concatenate([_backward_data(problem, a, b[i : i + step]) for i in starts])
    dw = _backward_filter(problem, a[:step], b[:step])
    for i in starts[1:]:
        dw += _backward_filter(problem, a[i : i + step], b[i : i + step])
    return dw


def _operand(values: Array, problem: SimProblem) -> Array:
    """An input as the multipliers see it, in the accumulator type. Half types are exact in
    float32; float32 under a tensor-core math type is rounded to TF32 first."""
    if problem.dtype == "float32" and problem.math_type in _TF32_MATH:
        values = to_tf32(values)
    return values.astype(_accumulator(problem.dtype))


def _at(trailing: tuple[int, ...] | tuple[slice, ...]) -> tuple[Any, ...]:
    """An index that takes `trailing` in the last dims (numpy's stubs cannot type the tuple
    written out)."""
    return (..., *trailing)


def _windows(
    size: Sequence[int], dilation: Sequence[int], stride: Sequence[int], out: Sequence[int]
) -> Iterator[tuple[slice, ...]]:
    """For each offset in a window of `size` (row-major), the slices of the padded input it
    meets at every output position."""
    for offset in itertools.product(*(range(f) for f in size)):
        yield tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offset, dilation, stride, out, strict=True)
        )


def _filter_windows(problem: SimProblem) -> Iterator[tuple[slice, ...]]:
    return _windows(problem.filter_size, problem.dilation, problem.stride, problem.y_dims[2:])


def _pad(
    values: Array, padding: Sequence[int], value: float = 0, after: Sequence[int] | None = None
) -> Array:
    """(N, C, *spatial) padded with `value` by `padding` before each spatial dim and `after`
    (default: `padding`) after it."""
    widths = zip(padding, padding if after is None else after, strict=True)
    return np.pad(values, [(0, 0), (0, 0), *widths], constant_values=value)


def _inner(padding: Sequence[int], size: Sequence[int]) -> tuple[Any, ...]:
    """The index of the unpadded part of a padded (N, C, *spatial) array."""
    return _at(tuple(slice(p, p + n) for p, n in zip(padding, size, strict=True)))


def _filter_matrix(problem: SimProblem, w: Array) -> Array:
    """(K, C/G, *f) -> (G, K/G, C/G * F); "convolution" mode flips the filter."""
    if problem.mode == "convolution":
        w = np.flip(w, axis=tuple(range(2, w.ndim)))
    k, per_group = w.shape[0] // problem.groups, w.shape[1] * math.prod(w.shape[2:])
    return w.reshape(problem.groups, k, per_group)


def _columns(problem: SimProblem, x: Array) -> Array:
    """x unrolled (im2col): (N, G, C/G * F, P), for each input channel and filter offset (in
    the filter's order) the padded input value each of the P output positions meets."""
    n, c = x.shape[:2]
    out = problem.y_dims[2:]
    xp = _pad(x, problem.padding, after=problem.padding_end)
    columns = np.empty((n, c, math.prod(problem.filter_size), *out), x.dtype)
    for i, slices in enumerate(_filter_windows(problem)):
        columns[:, :, i] = xp[_at(slices)]
    g = problem.groups
    return columns.reshape(n, g, c // g * math.prod(problem.filter_size), math.prod(out))


def _by_group(values: Array, groups: int) -> Array:
    """(N, K, *out) -> (N, G, K/G, P)."""
    n, k = values.shape[:2]
    return values.reshape(n, groups, k // groups, math.prod(values.shape[2:]))


def _forward(problem: SimProblem, x: Array, w: Array) -> Array:
    y = _filter_matrix(problem, w) @ _columns(problem, x)  # (N, G, K/G, P)
    return y.reshape(x.shape[0], *problem.y_dims[1:])


def _backward_data(problem: SimProblem, w: Array, dy: Array) -> Array:
    n, c, size = dy.shape[0], problem.x_dims[1], problem.x_dims[2:]
    columns = _filter_matrix(problem, w).swapaxes(1, 2) @ _by_group(dy, problem.groups)
    columns = columns.reshape(n, c, math.prod(problem.filter_size), *problem.y_dims[2:])
    padded = (s + p + q for s, p, q in zip(size, problem.padding, problem.padding_end, strict=True))
    dx = np.zeros((n, c, *padded), dy.dtype)
    for i, slices in enumerate(_filter_windows(problem)):
        dx[_at(slices)] += columns[:, :, i]
    return np.asarray(dx[_inner(problem.padding, size)])


def _backward_filter(problem: SimProblem, x: Array, dy: Array) -> Array:
    columns = _columns(problem, x).swapaxes(2, 3)  # (N, G, P, C/G * F)
    per_sample = _by_group(dy, problem.groups) @ columns  # (N, G, K/G, C/G * F)
    dw: Array = np.sum(per_sample, axis=0).reshape(problem.w_dims)
    if problem.mode == "convolution":
        dw = np.flip(dw, axis=tuple(range(2, dw.ndim)))
    return dw


# --- storing results -------------------------------------------------------------------------


@_quiet
def blend(result: Array, old: Array | None, alpha: float, beta: float, dtype: str) -> Array:
    """alpha * result + beta * old, rounded to `dtype` (bfloat16 as float32 values). alpha and
    beta are read as float32 unless the output is float64, as cuDNN reads them; with beta 0,
    `old` is never read, so whatever it held (NaN included) cannot leak through."""
    acc = _accumulator(dtype)
    out = acc(alpha) * result.astype(acc)
    if beta != 0:
        if old is None:
            raise ValueError("beta != 0 needs the old output")
        out = out + acc(beta) * old.astype(acc)
    if dtype == "bfloat16":
        return to_bfloat16(out)
    return np.asarray(out.astype(dtype))


# --- element-wise, bias, activation, pooling, softmax ----------------------------------------


@_quiet
def add_tensor(a: Array, c_shape: tuple[int, ...]) -> Array:
    """a broadcast over c's shape, as cudnnAddTensor adds it: each of a's dims is 1 (repeated)
    or c's."""
    fits = a.ndim == len(c_shape) and all(
        m in (1, n) for m, n in zip(a.shape, c_shape, strict=True)
    )
    if not fits:
        raise ValueError(f"a tensor of shape {a.shape} does not broadcast to {c_shape}")
    return np.broadcast_to(_acc(a), c_shape)


@_quiet
def backward_bias(dy: Array) -> Array:
    """dy summed over every dim but the channels: (1, K, 1, ...)."""
    axes = tuple(i for i in range(dy.ndim) if i != 1)
    return np.asarray(_acc(dy).sum(axis=axes, keepdims=True))


# The bindings set CUDNN_NOT_PROPAGATE_NAN, under which relu and clipped relu map NaN to 0 and
# max pooling passes over NaN inputs; comparisons written `x > 0` do exactly that.


@_quiet
def activation_forward(mode: str, coef: float, x: Array) -> Array:
    """coef is clipped relu's ceiling and elu's alpha."""
    x = _acc(x)
    c = x.dtype.type(coef)
    if mode == "sigmoid":
        return np.asarray(1 / (1 + np.exp(-x)))
    if mode == "relu":
        return np.where(x > 0, x, 0)
    if mode == "tanh":
        return np.tanh(x)
    if mode == "clipped_relu":
        return np.where(x > 0, np.minimum(x, c), 0)
    if mode == "elu":
        return np.where(x > 0, x, c * np.expm1(np.minimum(x, 0)))
    raise ValueError(f"unknown activation mode {mode!r}")


@_quiet
def activation_backward(mode: str, coef: float, y: Array, dy: Array, x: Array) -> Array:
    """dx from the forward's output y, the gradient dy and the forward's input x."""
    y, dy, x = _acc(y), _acc(dy), _acc(x)
    if mode == "sigmoid":
        return np.asarray(dy * y * (1 - y))
    if mode == "relu":
        return np.where(x > 0, dy, 0)
    if mode == "tanh":
        return np.asarray(dy * (1 - y * y))
    if mode == "clipped_relu":
        return np.where((x > 0) & (x < x.dtype.type(coef)), dy, 0)
    if mode == "elu":
        return np.where(x > 0, dy, dy * (y + x.dtype.type(coef)))
    raise ValueError(f"unknown activation mode {mode!r}")


def _pooled_size(
    size: Sequence[int], window: Sequence[int], padding: Sequence[int], stride: Sequence[int]
) -> tuple[int, ...]:
    """cuDNN's pooling output extents: every window lies inside the padded input."""
    return tuple(
        1 + (n + 2 * p - w) // s for n, w, p, s in zip(size, window, padding, stride, strict=True)
    )


def _pool_windows(
    window: Sequence[int], stride: Sequence[int], out: Sequence[int]
) -> Iterator[tuple[slice, ...]]:
    return _windows(window, (1,) * len(window), stride, out)


def _divisors(
    mode: str, size: Sequence[int], window: Sequence[int], padding: Sequence[int],
    stride: Sequence[int], dtype: np.dtype[Any],
) -> Array:  # fmt: skip
    """What average pooling divides each output by: the whole window ("average"), or the part
    of it inside x ("average_exclude_padding")."""
    if mode == "average":
        return np.asarray(math.prod(window), dtype)
    if mode != "average_exclude_padding":
        raise ValueError(f"unknown pooling mode {mode!r}")
    inside = _pad(np.ones((1, 1, *size), dtype), padding)
    out = _pooled_size(size, window, padding, stride)
    return functools.reduce(np.add, (inside[_at(s)] for s in _pool_windows(window, stride, out)))


def _is_max(mode: str) -> bool:
    # max_deterministic differs only in the order the backward adds overlapping windows' shares.
    return mode in ("max", "max_deterministic")


@_quiet
def pooling_forward(
    mode: str, window: tuple[int, ...], padding: tuple[int, ...], stride: tuple[int, ...], x: Array
) -> Array:
    """Max pooling ignores padding (and NaN); average pooling counts padding as zeros."""
    x = _acc(x)
    out = _pooled_size(x.shape[2:], window, padding, stride)
    windows = _pool_windows(window, stride, out)
    if _is_max(mode):
        xp = _pad(x, padding, -np.inf)
        return functools.reduce(np.fmax, (xp[_at(s)] for s in windows))
    divisors = _divisors(mode, x.shape[2:], window, padding, stride, x.dtype)
    xp = _pad(x, padding)
    total: Array = functools.reduce(np.add, (xp[_at(s)] for s in windows))
    return total / divisors


@_quiet
def pooling_backward(
    mode: str, window: tuple[int, ...], padding: tuple[int, ...], stride: tuple[int, ...],
    y: Array, dy: Array, x: Array,
) -> Array:  # fmt: skip
    """dx. Max pooling sends each output's gradient to the first input of its window (in
    row-major order) that holds the window's maximum, found again from x (y gives only the
    output's shape); average pooling spreads it evenly over the window. Overlapping windows
    add up."""
    dy, x = _acc(dy), _acc(x)
    out = y.shape[2:]
    dx = np.zeros(_pad(x, padding).shape, x.dtype)
    if _is_max(mode):
        xp = _pad(x, padding, -np.inf)
        windows = [xp[_at(s)] for s in _pool_windows(window, stride, out)]
        peak = functools.reduce(np.fmax, windows)
        taken = np.zeros(peak.shape, bool)
        for s, values in zip(_pool_windows(window, stride, out), windows, strict=True):
            first = (values == peak) & ~taken
            dx[_at(s)] += np.where(first, dy, 0)
            taken |= first
    else:
        share = dy / _divisors(mode, x.shape[2:], window, padding, stride, x.dtype)
        for s in _pool_windows(window, stride, out):
            dx[_at(s)] += share
    return np.asarray(dx[_inner(padding, x.shape[2:])])


def _softmax_axes(mode: str, ndim: int) -> tuple[int, ...]:
    """The axes a softmax runs over: C at each position for mode "channel", C and every
    spatial dim of each sample for "instance"."""
    if mode not in ("channel", "instance"):
        raise ValueError(f"unknown softmax mode {mode!r}")
    return (1,) if mode == "channel" else tuple(range(1, ndim))


def _total(values: Array, axes: tuple[int, ...]) -> Array:
    return np.asarray(values.sum(axis=axes, keepdims=True))


@_quiet
def softmax_forward(algorithm: str, mode: str, x: Array) -> Array:
    """Softmax, or log-softmax for algorithm "log". "fast" exponentiates x as it is, without
    the overflow protection cuDNN documents for "accurate" and "log" (subtracting the
    maximum first), so large inputs give NaN there as on the device."""
    x = _acc(x)
    axes = _softmax_axes(mode, x.ndim)
    if algorithm == "fast":
        e = np.exp(x)
        return e / _total(e, axes)
    shifted: Array = x - x.max(axis=axes, keepdims=True)
    if algorithm == "log":
        return shifted - np.log(_total(np.exp(shifted), axes))
    if algorithm != "accurate":
        raise ValueError(f"unknown softmax algorithm {algorithm!r}")
    e = np.exp(shifted)
    return e / _total(e, axes)


@_quiet
def softmax_backward(algorithm: str, mode: str, y: Array, dy: Array) -> Array:
    """dx from the forward's output y: y * (dy - sum(dy * y)) for softmax, and
    dy - exp(y) * sum(dy) for log-softmax (whose y is log-probabilities)."""
    y, dy = _acc(y), _acc(dy)
    axes = _softmax_axes(mode, y.ndim)
    if algorithm == "log":
        dx: Array = dy - np.exp(y) * _total(dy, axes)
    elif algorithm in ("fast", "accurate"):
        dx = y * (dy - _total(dy * y, axes))
    else:
        raise ValueError(f"unknown softmax algorithm {algorithm!r}")
    return dx
