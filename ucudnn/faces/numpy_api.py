"""NumPy in, NumPy out: the three convolutions, micro-batched on the GPU.

Every argument is checked before any device work, so bad input raises ValueError or
TypeError naming the problem even on a machine without a GPU.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from ucudnn.core.problem import ConvProblem
from ucudnn.runtime.steps import ROLES

_DTYPES = ("float32", "float16", "bfloat16", "float64")


def conv_forward(x: np.ndarray, w: np.ndarray, **options) -> np.ndarray:
    """y = conv(x, w). Options: see `ConvOptions` (padding, stride, dilation, groups, ...)."""
    _check_arrays(x=x, w=w)
    problem = _problem(x.shape, w.shape, x.dtype, options)
    return _execute("forward", problem, {"x": x, "w": w}, options)


def conv_backward_data(
    w: np.ndarray, dy: np.ndarray, x_shape: tuple[int, ...], **options
) -> np.ndarray:
    """dx, the gradient of conv(x, w) with respect to x of shape `x_shape`, given dy."""
    _check_arrays(w=w, dy=dy)
    problem = _problem(tuple(x_shape), w.shape, w.dtype, options)
    _check_shape("dy", dy.shape, problem.y_shape)
    return _execute("backward_data", problem, {"w": w, "y": dy}, options)


def conv_backward_filter(
    x: np.ndarray, dy: np.ndarray, w_shape: tuple[int, ...], **options
) -> np.ndarray:
    """dw, the gradient of conv(x, w) with respect to w of shape `w_shape`, given dy."""
    _check_arrays(x=x, dy=dy)
    problem = _problem(x.shape, tuple(w_shape), x.dtype, options)
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


def _check_options(options: dict) -> None:
    unknown = set(options) - set(_PROBLEM_OPTIONS) - set(_RUN_OPTIONS)
    if unknown:
        known = ", ".join(sorted({*_PROBLEM_OPTIONS, *_RUN_OPTIONS}))
        raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}; known: {known}")


def _check_arrays(**arrays: object) -> None:
    dtypes = {}
    for name, array in arrays.items():
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
        if array.dtype.name not in _DTYPES:
            raise TypeError(
                f"{name} has dtype {array.dtype.name}; supported: {', '.join(_DTYPES)} "
                "(bfloat16 as ml_dtypes.bfloat16)"
            )
        if array.ndim not in (4, 5):
            raise ValueError(f"{name} must have rank 4 (2D) or 5 (3D), got shape {array.shape}")
        if not array.flags.c_contiguous:
            raise ValueError(f"{name} is not C-contiguous; pass numpy.ascontiguousarray({name})")
        dtypes[name] = array.dtype.name
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n} is {d}" for n, d in dtypes.items())
        raise TypeError(f"arrays must share one dtype, but {listed}")


def _check_shape(name: str, shape: tuple[int, ...], expected: tuple[int, ...]) -> None:
    if tuple(shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(shape)}, expected {tuple(expected)}")


def _problem(x_shape, w_shape, dtype, options: dict) -> ConvProblem:
    _check_options(options)
    o = {**_PROBLEM_OPTIONS, **{k: v for k, v in options.items() if k in _PROBLEM_OPTIONS}}
    dtype = np.dtype(dtype).name
    math_type = o["math_type"] or _default_math_type(dtype, o["allow_tf32"])
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


def _execute(kernel: str, problem: ConvProblem, inputs: dict, options: dict) -> np.ndarray:
    output = ROLES[kernel][2]
    out_shape = {"x": problem.x_shape, "w": problem.w_shape, "y": problem.y_shape}[output]
    dtype = next(iter(inputs.values())).dtype
    if problem.batch == 0:
        # An empty batch has an empty output, and contributes nothing to a filter gradient.
        return np.zeros(out_shape, dtype=dtype)
    from ucudnn.core.array import DeviceArray

    run = {**_RUN_OPTIONS, **{k: v for k, v in options.items() if k in _RUN_OPTIONS}}
    policy = tuple(run["policy"]) if isinstance(run["policy"], list) else run["policy"]
    database = os.fspath(run["database"]) if run["database"] is not None else None
    handle = _default_handle(run["workspace_limit"], policy, database)
    device = {name: DeviceArray.from_numpy(array) for name, array in inputs.items()}
    device[output] = DeviceArray.empty(out_shape, problem.dtype)
    tensors = [device[t] for t in ROLES[kernel]]
    if run["algo"] is not None:
        handle.run_algorithm(kernel, problem, tensors, run["algo"])
    else:
        getattr(handle, kernel)(*tensors, problem)
    result = device[output].to_numpy()
    # bfloat16 comes back as its bit patterns; give the caller their own dtype again.
    return result.view(dtype) if problem.dtype == "bfloat16" else result


@functools.cache
def _default_handle(workspace_limit: int | None, policy, database: str | None):
    """One WR handle per configuration, reused so plans and workspaces persist across calls."""
    from ucudnn.planner.config import Config
    from ucudnn.runtime.handle import Handle

    limit = (
        Config.from_env().default_workspace_limit if workspace_limit is None else workspace_limit
    )
    return Handle(
        workspace_limit=limit,
        policy=list(policy) if isinstance(policy, tuple) else policy,
        database=database,
    )
