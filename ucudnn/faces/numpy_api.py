"""NumPy in, NumPy out: the three convolutions, micro-batched on the GPU.

Options: `padding`, `stride`, `dilation` (an integer for every dimension, or one each),
`groups`, `layout`, `mode`, `allow_tf32`, `math_type`; and how to run: `workspace_limit`
(bytes, or text such as "64MiB"), `policy` (a name in any letter case, "1,8,32", or any
iterable of positive sizes), `database` (a path) and `algo` (one cuDNN algorithm, by number or
name, run undivided). Integers may be of any integral type (numpy's too), never bools.

Every argument is checked before any device work, so bad input raises ValueError or
TypeError naming the argument even on a machine without a GPU.

Each configuration (workspace limit, policy, database) runs on its own Handle, kept between
calls so that its plans and workspace are reused. Only the handles of the 4 most recently used
configurations are kept: an older one is closed, its device workspace freed, so sweeping limits
in a loop does not pile up GPU memory (coming back to a closed configuration plans it again,
from the database when one is given). These functions are not for concurrent use from several
threads.
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from ucudnn.core.problem import MAX_DIM, ConvProblem
from ucudnn.planner.config import Config, byte_count, file_path, micro_batch_policy
from ucudnn.runtime.steps import ROLES

_DTYPES = ("float32", "float16", "bfloat16", "float64")


def conv_forward(x: np.ndarray, w: np.ndarray, **options) -> np.ndarray:
    """y = conv(x, w); the options are listed in this module's docstring."""
    _check_arrays(x=x, w=w)
    problem = _problem(x.shape, w.shape, x.dtype, options)
    return _execute("forward", problem, {"x": x, "w": w}, options)


def conv_backward_data(
    w: np.ndarray, dy: np.ndarray, x_shape: tuple[int, ...], **options
) -> np.ndarray:
    """dx, the gradient of conv(x, w) with respect to x of shape `x_shape`, given dy."""
    _check_arrays(w=w, dy=dy)
    problem = _problem(x_shape, w.shape, w.dtype, options)
    _check_shape("dy", dy.shape, problem.y_shape)
    return _execute("backward_data", problem, {"w": w, "y": dy}, options)


def conv_backward_filter(
    x: np.ndarray, dy: np.ndarray, w_shape: tuple[int, ...], **options
) -> np.ndarray:
    """dw, the gradient of conv(x, w) with respect to w of shape `w_shape`, given dy."""
    _check_arrays(x=x, dy=dy)
    problem = _problem(x.shape, w_shape, x.dtype, options)
    _check_shape("dy", dy.shape, problem.y_shape)
    return _execute("backward_filter", problem, {"x": x, "y": dy}, options)


# Options every function takes, with their defaults.
_PROBLEM_OPTIONS = {
    "padding": 0,
    "stride": 1,
    "dilation": 1,
    "groups": 1,
    "layout": "",
    "mode": "cross_correlation",
    "allow_tf32": False,
    "math_type": None,
}
_RUN_OPTIONS = {"workspace_limit": None, "policy": None, "database": None, "algo": None}
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
    database: Path | None
    algo: int | None


def _check_options(options: dict) -> None:
    unknown = set(options) - set(_PROBLEM_OPTIONS) - set(_RUN_OPTIONS)
    if unknown:
        known = ", ".join(sorted({*_PROBLEM_OPTIONS, *_RUN_OPTIONS}))
        raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}; known: {known}")


def _check_arrays(**arrays: object) -> None:
    dtypes = {}
    for name, array in arrays.items():
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
        if array.ndim not in (4, 5):
            raise ValueError(f"{name} must have rank 4 (2D) or 5 (3D), got shape {array.shape}")
        _check_elements(name, array.shape)
        if not array.flags.c_contiguous:
            raise ValueError(f"{name} is not C-contiguous; pass numpy.ascontiguousarray({name})")
        dtypes[name] = array.dtype.name
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n} is {d}" for n, d in dtypes.items())
        raise TypeError(f"arrays must share one dtype, but {listed}")


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


def _problem(x_shape, w_shape, dtype, options: dict) -> ConvProblem:
    _check_options(options)
    o = {**_PROBLEM_OPTIONS, **{k: v for k, v in options.items() if k in _PROBLEM_OPTIONS}}
    dtype = np.dtype(dtype).name
    if not isinstance(o["allow_tf32"], (bool, np.bool_)):
        raise TypeError(f"allow_tf32 must be True or False, got {o['allow_tf32']!r}")
    math_type = o["math_type"]
    if math_type is None:
        math_type = _default_math_type(dtype, bool(o["allow_tf32"]))
    return ConvProblem.from_shapes(
        x_shape, w_shape, layout=o["layout"], padding=o["padding"], stride=o["stride"],
        dilation=o["dilation"], groups=o["groups"], mode=o["mode"], dtype=dtype,
        math_type=math_type,
    )  # fmt: skip


def _default_math_type(dtype: str, allow_tf32: bool) -> str:
    """fp32 stays fp32 unless TF32 is allowed; half types may use tensor cores."""
    if dtype == "float32":
        return "default" if allow_tf32 else "fma"
    return "tensor_op" if dtype in ("float16", "bfloat16") else "default"


def _run_options(kernel: str, options: dict) -> _RunOptions:
    """The run options, checked; unset limit and policy come from the UCUDNN_* variables."""
    run = {**_RUN_OPTIONS, **{k: v for k, v in options.items() if k in _RUN_OPTIONS}}
    limit, policy, database, algo = (run[name] for name in _RUN_OPTIONS)
    config = Config.from_env()
    # Imported here, so that `import ucudnn` loads no native module (loading it needs no GPU).
    from ucudnn.runtime.backend import algorithm_number

    return _RunOptions(
        workspace_limit=(
            config.default_workspace_limit
            if limit is None
            else byte_count(limit, "workspace_limit")
        ),
        policy=(
            config.batch_size_policy if policy is None else micro_batch_policy(policy, "policy")
        ),
        database=None if database is None else file_path(database, "database"),
        algo=None if algo is None else algorithm_number(kernel, algo),
    )


def _output_shape(kernel: str, problem: ConvProblem) -> tuple[int, ...]:
    """The shape of what `kernel` returns, checked as the inputs are."""
    output = ROLES[kernel][2]
    shape = {"x": problem.x_shape, "w": problem.w_shape, "y": problem.y_shape}[output]
    _check_elements(_OUTPUT_NAMES[kernel], shape)
    return shape


def _execute(kernel: str, problem: ConvProblem, inputs: dict, options: dict) -> np.ndarray:
    """Check what is left to check, then run on the device (unless the batch is empty)."""
    out_shape = _output_shape(kernel, problem)
    run = _run_options(kernel, options)
    dtype = next(iter(inputs.values())).dtype
    if problem.batch == 0:
        # An empty batch has an empty output, and contributes nothing to a filter gradient.
        return np.zeros(out_shape, dtype=dtype)
    from ucudnn.core.array import DeviceArray

    handle = _default_handle(run.workspace_limit, run.policy, run.database)
    output = ROLES[kernel][2]
    device = {name: DeviceArray.from_numpy(array) for name, array in inputs.items()}
    device[output] = DeviceArray.empty(out_shape, problem.dtype)
    tensors = [device[t] for t in ROLES[kernel]]
    if run.algo is not None:
        handle.run_algorithm(kernel, problem, tensors, run.algo)
    else:
        getattr(handle, kernel)(*tensors, problem)
    result = device[output].to_numpy()
    # bfloat16 comes back as its bit patterns; give the caller their own dtype again.
    return result.view(dtype) if problem.dtype == "bfloat16" else result


class _RecentHandles:
    """The handles of the `size` most recently used configurations, made by `make(*key)`.

    Using a configuration makes it the most recent; a new one beyond `size` closes the least
    recent handle (its workspace and cache connection) and forgets it, so its cuDNN handle and
    descriptors are freed with it.
    """

    def __init__(self, size: int, make: Callable[..., Any]) -> None:
        self.size = size
        self._make = make
        self._handles: OrderedDict[Hashable, Any] = OrderedDict()  # least recent first

    def get(self, *key: Hashable) -> Any:
        handle = self._handles.pop(key, None)
        if handle is None:
            handle = self._make(*key)
        self._handles[key] = handle
        while len(self._handles) > self.size:
            _, oldest = self._handles.popitem(last=False)
            oldest.close()
        return handle


def _new_handle(workspace_limit: int, policy: str | tuple[int, ...], database: Path | None):
    from ucudnn.runtime.handle import Handle

    return Handle(workspace_limit=workspace_limit, policy=policy, database=database)


# Enough for a program that alternates between a few configurations, while a sweep over many
# limits holds at most this many workspaces.
_HANDLES = _RecentHandles(4, _new_handle)


def _default_handle(workspace_limit: int, policy: str | tuple[int, ...], database: Path | None):
    """The WR handle of this configuration, reused so plans and workspaces persist across calls."""
    return _HANDLES.get(workspace_limit, policy, database)
