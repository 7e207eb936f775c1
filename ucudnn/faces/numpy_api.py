"""NumPy in, NumPy out: the three convolutions, micro-batched on the GPU.

`conv_forward`, `conv_backward_data` and `conv_backward_filter` take numpy arrays of one dtype
(float32, float16, float64, or bfloat16 as ml_dtypes.bfloat16), C-contiguous and in native byte
order, and return new ones. They share their keyword options (listed in each one's
docstring): what the convolution is (`padding`, `stride`, `dilation`, `groups`, `layout`,
`mode`, `allow_tf32`, `math_type`) and how to run it (`workspace_limit`, `policy`, `database`,
`algo`, `engines`). Integers may be of any integral type (numpy's too), never bools.
`conv_forward` also takes a per-channel `bias`, and `conv_backward_bias` gives its gradient (on
the host).

When cuDNN runs none of its algorithms for a channels-last problem (cuDNN 9.19 runs no NDHWC
float64 forward convolution), the functions run the same convolution channels-first on
transposed copies, exact but slower, and say so in an INFO record of this module's logger. The
Handle never changes a layout behind its caller's back: it raises NoAlgorithmError.

Every argument is checked before any device work, so bad input raises ValueError or
TypeError naming the argument even on a machine without a GPU.

Each configuration (workspace limit, policy, database, engines) runs on its own Handle, kept
between calls so that its plans and workspace are reused. Only the handles of the 4 most
recently used configurations are kept: an older one is closed, its device workspace freed, so
sweeping limits in a loop does not pile up GPU memory (coming back to a closed configuration
plans it again, from the database when one is given). These functions are not for concurrent
use from several threads.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import operator
import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, SupportsIndex, TypeVar

import numpy as np
import numpy.typing as npt

from ucudnn.core.argtypes import Dimensions, PerDimension, PolicyArgument, Size
from ucudnn.core.checks import boolean, shown
from ucudnn.core.padding import AsymmetricPaddingError
from ucudnn.core.problem import LAYOUTS, MAX_DIM, ConvProblem, to_logical, to_physical
from ucudnn.planner.config import Config, byte_count, file_path, micro_batch_policy, slab_policy
from ucudnn.planner.errors import NoAlgorithmError
from ucudnn.runtime.steps import ROLES

if TYPE_CHECKING:
    from ucudnn.runtime.handle import Handle

logger = logging.getLogger(__name__)

_DTYPES = ("float32", "float16", "bfloat16", "float64")

# The options the three functions share, described once and appended to each docstring.
_OPTIONS_DOC = """
    Keyword options:

    padding, stride, dilation: one integer for every spatial dimension, or one each
        (defaults 0, 1 and 1). padding may also be "valid" (none) or "same" (the output
        keeps x's extent, stride 1 only), as PyTorch means them: where "same" needs one more
        after than before (an even kernel), x is padded explicitly.
    groups: the number of channel groups (1).
    layout: the order the arrays are stored in, "NCHW" or "NHWC" (2D), "NCDHW" or "NDHWC"
        (3D); "" (the default) is channels-first. The filter is stored in the same order.
    mode: "cross_correlation" (the default) or "convolution" (the filter flipped).
    allow_tf32: whether float32 convolutions may use TF32 tensor cores; None (the default):
        UCUDNN_ALLOW_TF32, else False (see ucudnn.core.problem.default_math_type).
    math_type: cuDNN's math type, "default", "tensor_op", "tensor_op_allow_conversion" or
        "fma", instead of allow_tf32; None (the default): "fma" for float32 ("default" with
        TF32 allowed), "tensor_op" for float16 and bfloat16, "default" for float64.
    workspace_limit: the workspace each call may use, in bytes or as text such as "64MiB";
        None (the default): UCUDNN_DEFAULT_WORKSPACE_LIMIT, else 64 MiB.
    policy: the micro-batch sizes to try: "powerOfTwo", "all" or "undivided" (any letter
        case), text such as "1,8,32", or an iterable of positive sizes; None (the default):
        UCUDNN_BATCH_SIZE_POLICY, else "powerOfTwo".
    slab_policy: the slab extents also tried at each micro-batch size, each kernel cut into
        slabs of its outermost spatial axis (D, or H in 2D; docs/spatial.md): "undivided"
        (none), "powerOfTwo", text such as "4,16" or an iterable of positive extents; None
        (the default): UCUDNN_SLAB_POLICY, else "undivided".
    database: the SQLite file that keeps benchmarks between runs; None (the default):
        UCUDNN_DATABASE, else ucudnn/benchmarks.sqlite in the user's cache directory.
    algo: run this one cuDNN algorithm on the whole batch, within workspace_limit: its
        number, or its name (ucudnn.cudnn.ALGORITHMS lists them by kernel:
        "forward", "backward_data", "backward_filter"); None (the default): plan
        micro-batches.
    engines: whether to measure cuDNN's graph-API engine configurations besides the legacy
        algorithms; None (the default): UCUDNN_ENGINES, else wherever they can run (cuDNN 9.2
        or newer, and heuristics that answer).
"""

# What the three functions raise, alike.
_RAISES_DOC = """
    Raises:
        TypeError: an array that is not a numpy.ndarray (a masked array included), of a dtype
            not supported or of non-native byte order, arrays of different dtypes, or an
            option of the wrong type (a bool or a float where an integer goes, a size that is
            neither an integer nor text).
        ValueError: an array of the wrong rank or shape, not C-contiguous or with more than
            2**31 - 1 elements, channels that do not match, or an option out of range
            (negative padding, groups that do not divide the channels, an unknown layout,
            mode, math type, policy or algorithm, text that is no size, an `algo` whose
            workspace exceeds workspace_limit).
        ImportError: cuDNN or the CUDA runtime cannot be loaded (the message lists every place
            tried).
        NoDeviceError: no usable CUDA device (no driver, a driver too old, no device visible).
        InfeasibleError: no schedule fits workspace_limit; its message names the smallest
            limit that would. NoAlgorithmError, a subclass, when cuDNN runs none of its
            algorithms for the problem (for a channels-last problem: channels-first neither).
        CudaOutOfMemoryError: the arrays do not fit in device memory.
        CudaError, CudnnError: a CUDA or cuDNN call fails.
"""

_Function = TypeVar("_Function", bound=Callable[..., Any])


def _with_shared_doc(function: _Function) -> _Function:
    if function.__doc__ is not None:  # None under python -OO
        function.__doc__ += _OPTIONS_DOC + _RAISES_DOC
    return function


@_with_shared_doc
def conv_forward(
    x: npt.NDArray[Any],
    w: npt.NDArray[Any],
    *,
    bias: npt.NDArray[Any] | None = None,
    padding: PerDimension | str = 0,
    stride: PerDimension = 1,
    dilation: PerDimension = 1,
    groups: SupportsIndex = 1,
    layout: str = "",
    mode: str = "cross_correlation",
    allow_tf32: bool | None = None,
    math_type: str | None = None,
    workspace_limit: Size | None = None,
    policy: PolicyArgument | None = None,
    slab_policy: PolicyArgument | None = None,
    database: str | os.PathLike[str] | None = None,
    algo: SupportsIndex | str | None = None,
    engines: bool | None = None,
) -> npt.NDArray[Any]:
    """y = conv(x, w) (+ bias), as a new array of x's dtype.

    x: the input, of shape (N, C, H, W) or (N, C, D, H, W) in the order `layout` stores
        (NHWC: (N, H, W, C)).
    w: the filter, of shape (K, C / groups, R, S) or (K, C / groups, T, R, S), stored alike.
    bias: None, or one value per output channel, of shape (K,) and x's dtype, added to every
        sample and position of y (once, on the device, after all micro-batches).
    """
    options = _Options.of_call(locals())
    _check_arrays(x=x, w=w)
    conv = _convolution(x.shape, w.shape, x.dtype, options)
    _check_bias(bias, conv.problem)
    return _execute("forward", conv.problem, {"x": conv.pad(x), "w": w}, options, bias)


@_with_shared_doc
def conv_backward_data(
    w: npt.NDArray[Any],
    dy: npt.NDArray[Any],
    x_shape: Dimensions,
    *,
    padding: PerDimension | str = 0,
    stride: PerDimension = 1,
    dilation: PerDimension = 1,
    groups: SupportsIndex = 1,
    layout: str = "",
    mode: str = "cross_correlation",
    allow_tf32: bool | None = None,
    math_type: str | None = None,
    workspace_limit: Size | None = None,
    policy: PolicyArgument | None = None,
    slab_policy: PolicyArgument | None = None,
    database: str | os.PathLike[str] | None = None,
    algo: SupportsIndex | str | None = None,
    engines: bool | None = None,
) -> npt.NDArray[Any]:
    """dx, the gradient of conv(x, w) with respect to x, as a new array of shape `x_shape`.

    w: the filter, as `conv_forward` takes it.
    dy: the gradient with respect to y = conv(x, w), of y's shape.
    x_shape: the shape of x, in the order `layout` stores.
    """
    options = _Options.of_call(locals())
    _check_arrays(w=w, dy=dy)
    conv = _convolution(x_shape, w.shape, w.dtype, options)
    _check_shape("dy", dy.shape, conv.problem.y_shape)
    return conv.crop(_execute("backward_data", conv.problem, {"w": w, "y": dy}, options))


@_with_shared_doc
def conv_backward_filter(
    x: npt.NDArray[Any],
    dy: npt.NDArray[Any],
    w_shape: Dimensions,
    *,
    padding: PerDimension | str = 0,
    stride: PerDimension = 1,
    dilation: PerDimension = 1,
    groups: SupportsIndex = 1,
    layout: str = "",
    mode: str = "cross_correlation",
    allow_tf32: bool | None = None,
    math_type: str | None = None,
    workspace_limit: Size | None = None,
    policy: PolicyArgument | None = None,
    slab_policy: PolicyArgument | None = None,
    database: str | os.PathLike[str] | None = None,
    algo: SupportsIndex | str | None = None,
    engines: bool | None = None,
) -> npt.NDArray[Any]:
    """dw, the gradient of conv(x, w) with respect to w, as a new array of shape `w_shape`.

    x: the input, as `conv_forward` takes it.
    dy: the gradient with respect to y = conv(x, w), of y's shape.
    w_shape: the shape of w, in the order `layout` stores.
    """
    options = _Options.of_call(locals())
    _check_arrays(x=x, dy=dy)
    conv = _convolution(x.shape, w_shape, x.dtype, options)
    _check_shape("dy", dy.shape, conv.problem.y_shape)
    return _execute("backward_filter", conv.problem, {"x": conv.pad(x), "y": dy}, options)


def conv_backward_bias(dy: npt.NDArray[Any], *, layout: str = "") -> npt.NDArray[Any]:
    """db, the gradient of conv_forward(x, w, bias=b) with respect to b: dy summed over the
    batch and every spatial position, as a new array of shape (K,) and dy's dtype.

    dy: of y's shape, in the order `layout` stores (as the other functions take it).

    A reduction, so numpy computes it on the host, as cuDNN would: in float64 for float64, in
    float32 for the other types. No GPU is needed.

    Raises:
        TypeError: dy is not a numpy.ndarray (a masked array included), or of a dtype not
            supported or of non-native byte order.
        ValueError: dy is not of rank 4 or 5, not C-contiguous, has more than 2**31 - 1
            elements, or `layout` is not one of its rank.
    """
    _check_arrays(dy=dy)
    rank = dy.ndim - 2
    stored = layout or LAYOUTS[rank][0]
    if stored not in LAYOUTS[rank]:
        raise ValueError(f"layout {shown(stored)} is not one of {', '.join(LAYOUTS[rank])}")
    channels = to_physical(tuple(range(dy.ndim)), stored).index(1)
    others = tuple(axis for axis in range(dy.ndim) if axis != channels)
    accumulator = np.float64 if dy.dtype == np.float64 else np.float32
    db: npt.NDArray[Any] = dy.astype(accumulator).sum(axis=others).astype(dy.dtype)
    return db


@dataclasses.dataclass(frozen=True)
class _Options:
    """The keyword options of one call, as given: each is checked where it is used."""

    padding: PerDimension | str
    stride: PerDimension
    dilation: PerDimension
    groups: SupportsIndex
    layout: str
    mode: str
    allow_tf32: bool | None
    math_type: str | None
    workspace_limit: Size | None
    policy: PolicyArgument | None
    slab_policy: PolicyArgument | None
    database: str | os.PathLike[str] | None
    algo: SupportsIndex | str | None
    engines: bool | None

    @classmethod
    def of_call(cls, arguments: Mapping[str, Any]) -> _Options:
        """The options among the arguments of a public function: its `locals()`, taken first
        thing, when they hold the arguments only."""
        return cls(**{field.name: arguments[field.name] for field in dataclasses.fields(cls)})


# What each kernel returns, as the caller knows it (for error messages).
_OUTPUT_NAMES = {
    "forward": "the output y",
    "backward_data": "the output dx (x_shape)",
    "backward_filter": "the output dw (w_shape)",
}


@dataclasses.dataclass(frozen=True)
class _RunOptions:
    """How to run, checked and in the form that keys the handle cache."""

    workspace_limit: int
    policy: str | tuple[int, ...]
    slab_policy: str | tuple[int, ...]
    database: Path | None
    algo: int | None
    engines: bool | None  # the argument, else UCUDNN_ENGINES; None: the Handle's default


def _check_arrays(**arrays: object) -> None:
    """Convolution operands: 2D or 3D, of one dtype."""
    dtypes = {
        name: _check_array(name, array, ranks=(4, 5), what="rank 4 (2D) or 5 (3D)").dtype.name
        for name, array in arrays.items()
    }
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n} is {d}" for n, d in dtypes.items())
        raise TypeError(f"arrays must share one dtype, but {listed}")


def _check_array(name: str, array: object, ranks: tuple[int, ...], what: str) -> npt.NDArray[Any]:
    """`array`, checked: a plain numpy array the device can take as it is."""
    if not isinstance(array, np.ndarray) or isinstance(array, np.ma.MaskedArray):
        # A masked array's mask would be ignored on the device.
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    if array.dtype.name not in _DTYPES:
        raise TypeError(
            f"{name} has dtype {array.dtype.name}; supported: {', '.join(_DTYPES)} "
            "(bfloat16 as ml_dtypes.bfloat16)"
        )
    if not array.dtype.isnative:
        # Its bytes would be copied to the device as they are, and read as garbage.
        raise TypeError(
            f"{name} has non-native byte order ({array.dtype.str}); pass "
            f"{name}.astype({name}.dtype.newbyteorder('='))"
        )
    if array.ndim not in ranks:
        raise ValueError(f"{name} must have {what}, got shape {array.shape}")
    _check_elements(name, array.shape)
    if not array.flags.c_contiguous:
        raise ValueError(f"{name} is not C-contiguous; pass numpy.ascontiguousarray({name})")
    return array


def _check_bias(bias: object, problem: ConvProblem) -> None:
    if bias is None:
        return
    bias = _check_array("bias", bias, ranks=(1,), what="rank 1 (one value per output channel)")
    if bias.dtype.name != problem.dtype:
        raise TypeError(f"bias has dtype {bias.dtype.name}, but x is {problem.dtype}")
    _check_shape("bias", bias.shape, (problem.out_channels,))


def _check_elements(name: str, shape: tuple[int, ...]) -> None:
    """cuDNN's legacy API describes each tensor with 32-bit sizes; these functions hand it
    whole arrays, so each must fit in one descriptor."""
    elements = math.prod(shape)
    if elements > MAX_DIM:
        raise ValueError(
            f"{name} of shape {tuple(shape)} has {elements} elements; cuDNN's legacy "
            f"convolution API takes at most 2**31 - 1 = {MAX_DIM} elements per tensor"
        )


def _check_shape(name: str, shape: tuple[int, ...], expected: tuple[int, ...]) -> None:
    if tuple(shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(shape)}, expected {tuple(expected)}")


@dataclasses.dataclass(frozen=True)
class _Convolution:
    """The problem cuDNN runs, and the zeros that x lacks at the end of each spatial axis:
    "same" padding of an even effective kernel puts one more there than before, which cuDNN
    cannot, so x is padded explicitly by that much (and dx cropped back)."""

    problem: ConvProblem
    end_padding: tuple[int, ...]  # per spatial axis, in logical order

    def _spatial_axes(self) -> list[int]:
        # The stored position of each logical axis; spatial axes are logical 2, 3, ...
        order = to_physical(tuple(range(self.problem.rank + 2)), self.problem.layout)
        return [order.index(axis) for axis in range(2, self.problem.rank + 2)]

    def pad(self, x: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """x with the zeros it lacks (x itself when it lacks none)."""
        if not any(self.end_padding):
            return x
        widths = [(0, 0)] * x.ndim
        for axis, extra in zip(self._spatial_axes(), self.end_padding, strict=True):
            widths[axis] = (0, extra)
        return np.pad(x, widths)

    def crop(self, dx: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """The gradient of the caller's x, from that of the padded x."""
        if not any(self.end_padding):
            return dx
        kept = [slice(None)] * dx.ndim
        for axis, extra in zip(self._spatial_axes(), self.end_padding, strict=True):
            kept[axis] = slice(0, dx.shape[axis] - extra)
        return np.ascontiguousarray(dx[tuple(kept)])


def _convolution(
    x_shape: Dimensions, w_shape: Dimensions, dtype: np.dtype[Any], options: _Options
) -> _Convolution:
    """The problem of a call; checks every option that describes the convolution."""
    try:
        return _Convolution(_problem(x_shape, w_shape, dtype, options, options.padding), ())
    except AsymmetricPaddingError as uneven:
        # Raised once the shapes and layout were checked, so they can be taken apart here.
        layout = options.layout or LAYOUTS[len(x_shape) - 2][0]
        dims = to_logical(tuple(map(operator.index, x_shape)), layout)  # checked
        padded = to_physical(uneven.padded_dims(dims), layout)
        return _Convolution(
            _problem(padded, w_shape, dtype, options, uneven.before), uneven.end_extra
        )


def _problem(
    x_shape: Dimensions,
    w_shape: Dimensions,
    dtype: np.dtype[Any],
    options: _Options,
    padding: PerDimension | str,
) -> ConvProblem:
    return ConvProblem.from_shapes(
        x_shape, w_shape, layout=options.layout, padding=padding, stride=options.stride,
        dilation=options.dilation, groups=options.groups, mode=options.mode,
        dtype=np.dtype(dtype).name, allow_tf32=options.allow_tf32, math_type=options.math_type,
    )  # fmt: skip


def _run_options(kernel: str, options: _Options) -> _RunOptions:
    """The run options, checked; unset limit and policy come from the UCUDNN_* variables."""
    config = Config.from_env()
    # Imported here, so that `import ucudnn` loads no native module (loading it needs no GPU).
    from ucudnn.runtime.backend import algorithm_number

    return _RunOptions(
        workspace_limit=(
            config.default_workspace_limit
            if options.workspace_limit is None
            else byte_count(options.workspace_limit, "workspace_limit")
        ),
        policy=(
            config.batch_size_policy
            if options.policy is None
            else micro_batch_policy(options.policy, "policy")
        ),
        slab_policy=(
            config.slab_policy
            if options.slab_policy is None
            else slab_policy(options.slab_policy, "slab_policy")
        ),
        database=None if options.database is None else file_path(options.database, "database"),
        algo=None if options.algo is None else algorithm_number(kernel, options.algo),
        engines=config.engines if options.engines is None else boolean(options.engines, "engines"),
    )


def _output_shape(kernel: str, problem: ConvProblem) -> tuple[int, ...]:
    """The shape of what `kernel` returns, checked as the inputs are."""
    output = ROLES[kernel][2]
    shape = {"x": problem.x_shape, "w": problem.w_shape, "y": problem.y_shape}[output]
    _check_elements(_OUTPUT_NAMES[kernel], shape)
    return shape


def _execute(
    kernel: str,
    problem: ConvProblem,
    inputs: dict[str, npt.NDArray[Any]],
    options: _Options,
    bias: npt.NDArray[Any] | None = None,
) -> npt.NDArray[Any]:
    """Check what is left to check, then run on the device (unless the batch is empty)."""
    out_shape = _output_shape(kernel, problem)
    run = _run_options(kernel, options)
    dtype = next(iter(inputs.values())).dtype
    if problem.batch == 0:
        # An empty batch has an empty output, and contributes nothing to a filter gradient.
        return np.zeros(out_shape, dtype=dtype)
    handle = _default_handle(
        run.workspace_limit, run.policy, run.slab_policy, run.database, run.engines
    )
    try:
        return _run_on_device(handle, kernel, problem, inputs, out_shape, run, bias)
    except NoAlgorithmError as exc:
        channels_first = LAYOUTS[problem.rank][0]
        if problem.layout == channels_first:
            raise
        # The same convolution on channels-first copies: exact, at the cost of two transposes.
        logger.info("%s; running it %s on transposed copies", exc, channels_first)
        problem = dataclasses.replace(
            problem, layout=channels_first, filter_layout=channels_first, x_strides=(),
            y_strides=(),
        )  # fmt: skip
        inputs = {name: _channels_first(array) for name, array in inputs.items()}
        result = _run_on_device(
            handle, kernel, problem, inputs, _output_shape(kernel, problem), run, bias
        )
        return np.ascontiguousarray(np.moveaxis(result, 1, -1))


def _channels_first(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.ascontiguousarray(np.moveaxis(array, -1, 1))


def _run_on_device(
    handle: Handle,
    kernel: str,
    problem: ConvProblem,
    inputs: dict[str, npt.NDArray[Any]],
    out_shape: tuple[int, ...],
    run: _RunOptions,
    bias: npt.NDArray[Any] | None,
) -> npt.NDArray[Any]:
    from ucudnn.core.array import DeviceArray

    output = ROLES[kernel][2]
    device = {name: DeviceArray.from_numpy(array) for name, array in inputs.items()}
    device[output] = DeviceArray.empty(out_shape, problem.dtype)
    tensors = [device[t] for t in ROLES[kernel]]
    device_bias = None if bias is None else DeviceArray.from_numpy(bias)
    if run.algo is not None:
        handle.run_algorithm(kernel, problem, tensors, run.algo, bias=device_bias)
    else:
        handle.run(kernel, problem, tensors, bias=device_bias)
    return device[output].to_numpy()


class _Closable(Protocol):
    def close(self) -> None: ...


_Kept = TypeVar("_Kept", bound=_Closable)


class _RecentHandles(Generic[_Kept]):
    """The handles of the `size` most recently used configurations, made by `make(*key)`.

    Using a configuration makes it the most recent; a new one beyond `size` closes the least
    recent handle (its workspace and cache connection) and forgets it, so its cuDNN handle and
    descriptors are freed with it.
    """

    def __init__(self, size: int, make: Callable[..., _Kept]) -> None:
        self.size = size
        self._make = make
        self._handles: OrderedDict[Hashable, _Kept] = OrderedDict()  # least recent first

    def get(self, *key: Hashable) -> _Kept:
        handle = self._handles.pop(key, None)
        if handle is None:
            handle = self._make(*key)
        self._handles[key] = handle
        while len(self._handles) > self.size:
            _, oldest = self._handles.popitem(last=False)
            oldest.close()
        return handle

    def close_all(self) -> None:
        """Close and forget every handle kept."""
        while self._handles:
            _, oldest = self._handles.popitem(last=False)
            oldest.close()


def _new_handle(
    workspace_limit: int,
    policy: str | tuple[int, ...],
    slab_policy: str | tuple[int, ...],
    database: Path | None,
    engines: bool | None,
) -> Handle:
    from ucudnn.runtime.handle import Handle

    return Handle(
        workspace_limit=workspace_limit, policy=policy, slab_policy=slab_policy,
        database=database, engines=engines,
    )  # fmt: skip


# Enough for a program that alternates between a few configurations, while a sweep over many
# limits holds at most this many workspaces.
_HANDLES = _RecentHandles(4, _new_handle)


def release_handles() -> None:
    """Close the Handles the functions above keep between calls (their workspaces and cache
    connections), say before a phase that needs the device memory; the next call makes anew
    the one it needs."""
    _HANDLES.close_all()


def _default_handle(
    workspace_limit: int,
    policy: str | tuple[int, ...],
    slab_policy: str | tuple[int, ...],
    database: Path | None,
    engines: bool | None = None,
) -> Handle:
    """The WR handle of this configuration, reused so plans and workspaces persist across calls
    (one shared workspace buffer: see docs/handle.md, "One buffer or slices")."""
    return _HANDLES.get(workspace_limit, policy, slab_policy, database, engines)
