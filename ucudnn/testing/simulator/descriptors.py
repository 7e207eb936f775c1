"""Simulated cuDNN descriptors, checked as cuDNN checks them (names from ucudnn.core.cudnn_names).

Python-side refusals (unknown names, wrong types, wrong lengths) repeat native/_cudnn.pyx word
for word; what cuDNN itself refuses raises CudnnError with the C call's name and a status the
real library gives for it (tests/test_simulator_differential.py holds both to the real ones).
"""

from __future__ import annotations

import math
from typing import Any

from ucudnn.core.cudnn_names import (
    ACTIVATIONS,
    CONVOLUTION_MODES,
    DTYPES,
    FILTER_LAYOUTS,
    MATH_TYPES,
    POOLING_MODES,
)
from ucudnn.core.problem import packed_strides
from ucudnn.testing.simulator.convert import (
    DIM_MAX,
    INT_MAX,
    cudnn_error,
    ints,
    lookup,
    to_c_int,
)
from ucudnn.testing.simulator.device import DeviceObject

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}

BAD_PARAM = 2000
NOT_SUPPORTED = 3000


class _Tracked(DeviceObject):
    """A descriptor, counted by the leak report while alive."""

    _KIND = "descriptor"


class _Addressed(_Tracked):
    """A descriptor whose C handle the binding shows as `ptr`."""

    @property
    def ptr(self) -> int:
        return self._number


class TensorDescriptor(_Addressed):
    """An Nd tensor: dtype name, logical dims (N, C, *spatial) and element strides."""

    def __init__(self, dtype: str, dims: Any, strides: Any) -> None:
        lookup(DTYPES, dtype, "dtype")
        self._dtype = dtype
        self._dims = ints(dims, DIM_MAX, "dims")
        if len(ints(strides, DIM_MAX, "strides")) != len(self._dims):
            raise ValueError(f"dims {tuple(dims)} and strides {tuple(strides)} differ in length")
        self._strides = ints(strides, DIM_MAX, "strides")
        _check_tensor(self._dims, self._strides)
        super().__init__()

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def dims(self) -> tuple[int, ...]:
        return self._dims

    @property
    def strides(self) -> tuple[int, ...]:
        return self._strides

    def __repr__(self) -> str:
        return f"TensorDescriptor({self._dtype!r}, dims={self._dims}, strides={self._strides})"


def _check_tensor(dims: tuple[int, ...], strides: tuple[int, ...]) -> None:
    call = "cudnnSetTensorNdDescriptor"
    if len(dims) < 2:
        raise cudnn_error(BAD_PARAM, call, f"a tensor needs at least 2 dims, got {len(dims)}")
    for i, (dim, stride) in enumerate(zip(dims, strides, strict=True)):
        if dim <= 0:
            raise cudnn_error(BAD_PARAM, call, f"tensor dim {i} has size {dim}, not > 0")
        if stride == 0 and dim != 1:
            raise cudnn_error(BAD_PARAM, call, f"tensor dim {i} has stride 0 but size {dim}")
    if sum((d - 1) * abs(s) for d, s in zip(dims, strides, strict=True)) + 1 > INT_MAX:
        raise cudnn_error(NOT_SUPPORTED, call, "the tensor spans more than 2**31 - 1 elements")


class FilterDescriptor(_Addressed):
    """A filter: dtype name, layout name and logical dims (K, C/groups, *spatial)."""

    def __init__(self, dtype: str, layout: str, dims: Any) -> None:
        lookup(DTYPES, dtype, "dtype")
        if layout not in FILTER_LAYOUTS:
            raise ValueError(
                f"unknown layout {layout!r}; expected one of {', '.join(FILTER_LAYOUTS)}"
            )
        rank = FILTER_LAYOUTS[layout][1]
        self._dims = ints(dims, DIM_MAX, "dims")
        if len(self._dims) != rank:
            raise ValueError(f"layout {layout} needs {rank} dims, got {tuple(dims)}")
        for i, dim in enumerate(self._dims):
            if dim <= 0:
                raise cudnn_error(
                    BAD_PARAM, "cudnnSetFilterNdDescriptor", f"filter dim {i} has size {dim}"
                )
        self._dtype, self._layout = dtype, layout
        super().__init__()

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def layout(self) -> str:
        return self._layout

    @property
    def dims(self) -> tuple[int, ...]:
        return self._dims

    def __repr__(self) -> str:
        return f"FilterDescriptor({self._dtype!r}, {self._layout!r}, dims={self._dims})"


def element_strides(desc: TensorDescriptor | FilterDescriptor) -> tuple[int, ...]:
    """A tensor's element strides in logical order; a filter is packed in its layout."""
    if isinstance(desc, TensorDescriptor):
        return desc.strides
    return packed_strides(desc.dims, desc.layout)


class ConvolutionDescriptor(_Addressed):
    """Padding, stride and dilation per spatial dim, mode, compute dtype, groups, math type."""

    def __init__(
        self,
        padding: Any,
        stride: Any,
        dilation: Any,
        mode: str = "cross_correlation",
        compute_dtype: str = "float32",
        groups: int = 1,
        math_type: str = "default",
    ) -> None:
        groups = to_c_int(groups, "groups")
        max_len = DIM_MAX - 2
        self._padding = ints(padding, max_len, "padding")
        rank = len(self._padding)
        self._stride = ints(stride, max_len, "stride")
        self._dilation = ints(dilation, max_len, "dilation")
        if len(self._stride) != rank or len(self._dilation) != rank:
            raise ValueError(
                f"padding {tuple(padding)}, stride {tuple(stride)} and dilation "
                f"{tuple(dilation)} must have one entry per spatial dim each"
            )
        lookup(CONVOLUTION_MODES, mode, "mode")
        lookup(DTYPES, compute_dtype, "compute_dtype")
        lookup(MATH_TYPES, math_type, "math_type")
        call = "cudnnSetConvolutionNdDescriptor"
        for name, values, least in (
            ("padding", self._padding, 0),
            ("stride", self._stride, 1),
            ("dilation", self._dilation, 1),
        ):
            for i, value in enumerate(values):
                if value < least:
                    raise cudnn_error(BAD_PARAM, call, f"convolution {name}[{i}] = {value}")
        if compute_dtype == "bfloat16":
            raise cudnn_error(BAD_PARAM, call, "bfloat16 is not a convolution compute type")
        if groups < 1:
            raise cudnn_error(BAD_PARAM, "cudnnSetConvolutionGroupCount", f"groups = {groups}")
        self._mode, self._compute, self._groups, self._math = mode, compute_dtype, groups, math_type
        super().__init__()

    @property
    def padding(self) -> tuple[int, ...]:
        return self._padding

    @property
    def stride(self) -> tuple[int, ...]:
        return self._stride

    @property
    def dilation(self) -> tuple[int, ...]:
        return self._dilation

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def compute_dtype(self) -> str:
        return self._compute

    @property
    def groups(self) -> int:
        return self._groups

    @property
    def math_type(self) -> str:
        return self._math

    def set_math_type(self, math_type: str) -> None:
        lookup(MATH_TYPES, math_type, "math_type")
        self._math = math_type

    def output_dims(self, x_desc: TensorDescriptor, w_desc: FilterDescriptor) -> tuple[int, ...]:
        """The forward output dims (N, K, *spatial) for input x_desc and filter w_desc."""
        not_none(x_desc, "x_desc", TensorDescriptor)
        not_none(w_desc, "w_desc", FilterDescriptor)
        call = "cudnnGetConvolutionNdForwardOutputDim"
        x, w = x_desc.dims, w_desc.dims
        if len(x) != len(w) or len(x) != len(self._padding) + 2:
            raise cudnn_error(BAD_PARAM, call, "x, the filter and the convolution differ in rank")
        if x[1] != self._groups * w[1]:
            raise cudnn_error(
                BAD_PARAM, call, f"x has {x[1]} channels, not groups {self._groups} x {w[1]}"
            )
        out = [
            (size + 2 * pad - dil * (f - 1) - 1) // step + 1
            for size, f, pad, step, dil in zip(
                x[2:], w[2:], self._padding, self._stride, self._dilation, strict=True
            )
        ]
        if min(out) < 1:
            raise cudnn_error(BAD_PARAM, call, f"the output would be {tuple(out)}")
        return (x[0], w[0], *out)

    def __repr__(self) -> str:
        return (
            f"ConvolutionDescriptor(padding={self._padding}, stride={self._stride}, "
            f"dilation={self._dilation}, mode={self._mode!r}, compute_dtype={self._compute!r}, "
            f"groups={self._groups}, math_type={self._math!r})"
        )


class ActivationDescriptor(_Tracked):
    """An activation function; coef is the ceiling of clipped_relu or the alpha of elu."""

    def __init__(self, mode: str, coef: float = 0.0) -> None:
        lookup(ACTIVATIONS, mode, "activation mode")
        self._mode, self._coef = mode, float(coef)
        super().__init__()

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def coef(self) -> float:
        return self._coef

    def __repr__(self) -> str:
        return f"ActivationDescriptor({self._mode!r}, coef={self._coef})"


class PoolingDescriptor(_Tracked):
    """Pooling over the spatial dims: mode name, window, padding and stride per spatial dim."""

    def __init__(self, mode: str, window: Any, padding: Any, stride: Any) -> None:
        lookup(POOLING_MODES, mode, "pooling mode")
        max_len = DIM_MAX - 2
        self._window = ints(window, max_len, "window")
        self._padding = ints(padding, max_len, "padding")
        self._stride = ints(stride, max_len, "stride")
        if not len(self._window) == len(self._padding) == len(self._stride):
            raise ValueError(
                f"window {tuple(window)}, padding {tuple(padding)} and stride "
                f"{tuple(stride)} must have one entry per spatial dim each"
            )
        call = "cudnnSetPoolingNdDescriptor"
        if min(self._window) <= 0 or min(self._stride) <= 0 or min(self._padding) < 0:
            raise cudnn_error(BAD_PARAM, call, "window and stride must be > 0, padding >= 0")
        self._mode = mode
        super().__init__()

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def window(self) -> tuple[int, ...]:
        return self._window

    @property
    def padding(self) -> tuple[int, ...]:
        return self._padding

    @property
    def stride(self) -> tuple[int, ...]:
        return self._stride

    def output_dims(self, x_desc: TensorDescriptor) -> tuple[int, ...]:
        """The pooled output dims (N, C, *spatial) for input x_desc."""
        not_none(x_desc, "x_desc", TensorDescriptor)
        dims = x_desc.dims
        if len(dims) != len(self._window) + 2:
            raise cudnn_error(
                BAD_PARAM, "cudnnGetPoolingNdForwardOutputDim", "x and the pooling differ in rank"
            )
        out = [
            1 + (size + 2 * pad - window) // step
            for size, window, pad, step in zip(
                dims[2:], self._window, self._padding, self._stride, strict=True
            )
        ]
        if min(out) < 1:
            raise cudnn_error(
                BAD_PARAM, "cudnnGetPoolingNdForwardOutputDim", f"the output would be {out}"
            )
        return (dims[0], dims[1], *out)

    def __repr__(self) -> str:
        return (
            f"PoolingDescriptor({self._mode!r}, window={self._window}, "
            f"padding={self._padding}, stride={self._stride})"
        )


def not_none(value: object, name: str, cls: type) -> None:
    """Cython's typed `not None` arguments."""
    if not isinstance(value, cls):
        got = "None" if value is None else type(value).__name__
        raise TypeError(
            f"Argument '{name}' has incorrect type (expected {cls.__qualname__}, got {got})"
        )


def extent_bytes(dims: tuple[int, ...], strides: tuple[int, ...], dtype: str) -> int:
    """Bytes from a tensor's first element to the end of its last."""
    return (sum((d - 1) * s for d, s in zip(dims, strides, strict=True)) + 1) * ITEMSIZE[dtype]


def packed_bytes(dims: tuple[int, ...], dtype: str) -> int:
    return math.prod(dims) * ITEMSIZE[dtype]
