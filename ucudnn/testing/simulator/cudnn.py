"""The simulated cuDNN: `ucudnn._native._cudnn`'s surface over the simulated device.

Same names, parameters, Python-side checks and exceptions as native/_cudnn.pyx. What cuDNN
can run, with what workspace and time, comes from the capability model (legacy calls) and the
engine probe (the backend API, `backend`); the version reported is that of the cuDNN the
model's data was measured with.
"""

from __future__ import annotations

import collections
from typing import Any, cast

from ucudnn.core.cudnn_names import (  # the binding's name tables, which it serves
    ACTIVATIONS as ACTIVATIONS,
    BACKEND_ATTRIBUTES as BACKEND_ATTRIBUTES,
    BACKEND_CONVOLUTION_MODES as BACKEND_CONVOLUTION_MODES,
    BACKEND_DATA_TYPES as BACKEND_DATA_TYPES,
    BACKEND_KINDS as BACKEND_KINDS,
    BACKEND_TYPES as BACKEND_TYPES,
    BEHAVIOR_NOTES as BEHAVIOR_NOTES,
    CONVOLUTION_MODES as CONVOLUTION_MODES,
    DTYPES as DTYPES,
    FILTER_LAYOUTS as FILTER_LAYOUTS,
    HEURISTIC_MODES as HEURISTIC_MODES,
    MATH_TYPES as MATH_TYPES,
    NUMERICAL_NOTES as NUMERICAL_NOTES,
    POOLING_MODES as POOLING_MODES,
    SOFTMAX_ALGORITHMS as SOFTMAX_ALGORITHMS,
    SOFTMAX_MODES as SOFTMAX_MODES,
)
from ucudnn.testing.simulator import numerics, statuses
from ucudnn.testing.simulator.backend import BackendDescriptor, execute_plan as execute_plan
from ucudnn.testing.simulator.capabilities import ALGORITHMS as ALGORITHMS
from ucudnn.testing.simulator.convert import cudnn_error, lookup, to_address, to_c_int, to_size
from ucudnn.testing.simulator.convolutions import (
    NAMES as _NAMES,
    ROLES as _ROLES,
    Descriptors,
    algorithm,
    find,
    run as _run_convolution,
    workspace_size as _workspace_size,
)
from ucudnn.testing.simulator.descriptors import (
    BAD_PARAM as _BAD_PARAM,
    ActivationDescriptor,
    ConvolutionDescriptor,
    FilterDescriptor,
    PoolingDescriptor,
    TensorDescriptor,
    not_none,
)
from ucudnn.testing.simulator.device import DEVICE
from ucudnn.testing.simulator.handles import Handle, live as _live
from ucudnn.testing.simulator.operations import apply, same_dims
from ucudnn.testing.simulator.problem import Kernel

# The classes and functions made elsewhere are this module's, as in the binding (the stub test
# holds the surface to it).
for _public in (
    Handle,
    BackendDescriptor,
    TensorDescriptor,
    FilterDescriptor,
    ConvolutionDescriptor,
    ActivationDescriptor,
    PoolingDescriptor,
    execute_plan,
):
    _public.__module__ = __name__
_CUDART_VERSION = 13000


def status_name(status: int) -> str:
    return statuses.cudnn_status_name(to_c_int(status, "status"))


def version() -> int:
    return DEVICE.caps.cudnn_version


def build_version() -> int:
    return DEVICE.caps.cudnn_version


def cudart_version() -> int:
    return _CUDART_VERSION


AlgoPerf = collections.namedtuple(
    "AlgoPerf", "algo status status_name time_ms memory deterministic math_type"
)
AlgoPerf.__doc__ = """One row of the algorithm list cuDNN's Find measured.

Rows whose status is not 0 (CUDNN_STATUS_SUCCESS) are algorithms that cannot run this problem.
"""


def _perfs(rows: list[Any], math_type: str) -> list[AlgoPerf]:
    return [
        AlgoPerf(
            r.algo,
            r.status,
            statuses.cudnn_status_name(r.status),
            r.time_ms,
            r.memory,
            r.deterministic,
            math_type,
        )
        for r in rows
    ]


def _requested(requested: object) -> int:
    count = to_c_int(requested, "requested")
    if count < 1:
        raise ValueError(f"requested must be >= 1, got {count}")
    return count


# --- the legacy convolution kernels ----------------------------------------------------------
# Each reads a and b and writes out, in cuDNN's argument order (`convolutions.ROLES` says which
# of x, w and y each is, `convolutions.NAMES` what the binding calls it).


def _descriptors(
    kernel: str, a_desc: object, b_desc: object, out_desc: object, conv_desc: object
) -> Descriptors:
    """The call's descriptors by tensor, each checked to be of its operand's type."""
    not_none(conv_desc, "conv_desc", ConvolutionDescriptor)  # a typed argument there
    lookup(ALGORITHMS, kernel, "kernel")  # refuses an unknown kernel as the binding does
    known = cast(Kernel, kernel)
    by_tensor: dict[str, Any] = {}
    operands = zip((a_desc, b_desc, out_desc), _ROLES[known], _NAMES[known], strict=True)
    for desc, tensor, name in operands:
        expected = FilterDescriptor if tensor == "w" else TensorDescriptor
        if not isinstance(desc, expected):
            raise TypeError(
                f"{name}_desc of a {kernel} convolution must be a {expected.__name__}, "
                f"got {type(desc).__name__}"
            )
        by_tensor[tensor] = desc
    conv = cast(ConvolutionDescriptor, conv_desc)
    return Descriptors(known, by_tensor["x"], by_tensor["w"], by_tensor["y"], conv)


def _pointers(descs: Descriptors, a: object, b: object, out: object) -> tuple[int, int, int]:
    """The operands' addresses, converted under the binding's names for them, by x, w, y."""
    kernel = descs.kernel
    by_tensor = {
        tensor: to_address(pointer, name)
        for pointer, tensor, name in zip((a, b, out), _ROLES[kernel], _NAMES[kernel], strict=True)
    }
    return by_tensor["x"], by_tensor["w"], by_tensor["y"]


def _size(workspace_bytes: object) -> int:
    return to_size(workspace_bytes, "workspace_bytes")


def algorithm_max_count(handle: Handle, kernel: str) -> int:
    names = lookup(ALGORITHMS, kernel, "kernel")
    _live(handle)
    return len(names)


def find_algorithm_ex(
    handle: Handle, kernel: str, a_desc: TensorDescriptor | FilterDescriptor, a: int,
    b_desc: TensorDescriptor | FilterDescriptor, b: int, conv_desc: ConvolutionDescriptor,
    out_desc: TensorDescriptor | FilterDescriptor, out: int, requested: int, workspace: int,
    workspace_bytes: int,
) -> list[AlgoPerf]:  # fmt: skip
    """Time `kernel`'s algorithms on the caller's buffers (out is overwritten)."""
    descs = _descriptors(kernel, a_desc, b_desc, out_desc, conv_desc)
    stream = _live(handle)
    pointers = _pointers(descs, a, b, out)
    space, space_bytes = to_address(workspace, "workspace"), _size(workspace_bytes)
    rows = find(descs, stream, pointers, _requested(requested), space, space_bytes)
    return _perfs(rows, descs.conv.math_type)


def workspace_size(
    handle: Handle, kernel: str, a_desc: TensorDescriptor | FilterDescriptor,
    b_desc: TensorDescriptor | FilterDescriptor, conv_desc: ConvolutionDescriptor,
    out_desc: TensorDescriptor | FilterDescriptor, algo: int,
) -> int:  # fmt: skip
    descs = _descriptors(kernel, a_desc, b_desc, out_desc, conv_desc)
    _live(handle)
    return _workspace_size(descs, algo)


def convolution(
    handle: Handle, kernel: str, alpha: float, a_desc: TensorDescriptor | FilterDescriptor,
    a: int, b_desc: TensorDescriptor | FilterDescriptor, b: int,
    conv_desc: ConvolutionDescriptor, algo: int, workspace: int, workspace_bytes: int,
    beta: float, out_desc: TensorDescriptor | FilterDescriptor, out: int,
) -> None:  # fmt: skip
    """One legacy convolution: out = alpha * kernel(a, b) + beta * out."""
    descs = _descriptors(kernel, a_desc, b_desc, out_desc, conv_desc)
    stream = _live(handle)
    scale, blend = _double(alpha, "alpha"), _double(beta, "beta")
    algorithm(algo, descs.kernel)
    pointers = _pointers(descs, a, b, out)
    _run_convolution(
        descs, stream, scale, blend, pointers, algo, to_address(workspace, "workspace"),
        _size(workspace_bytes),
    )  # fmt: skip


def _double(value: object, name: str) -> float:
    """A `double` argument: any real number, as Cython converts it."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TypeError(f"must be real number, not {type(value).__name__} ({name})") from None


# --- bias, element-wise, activation, pooling, softmax ----------------------------------------


def convolution_backward_bias(
    handle: Handle, alpha: float, dy_desc: TensorDescriptor, dy: int, beta: float,
    db_desc: TensorDescriptor, db: int,
) -> None:  # fmt: skip
    """db = alpha * sum of dy over all but the channel dim + beta * db."""
    stream = _live(handle)
    call = "cudnnConvolutionBackwardBias"
    expected = (1, dy_desc.dims[1], *(1,) * (len(dy_desc.dims) - 2))
    if db_desc.dims != expected:
        raise cudnn_error(_BAD_PARAM, call, f"db dims {db_desc.dims} are not {expected}")
    apply(
        call, stream, [("dy", dy_desc, _ptr(dy, "dy"))], ("db", db_desc, _ptr(db, "db")),
        _double(alpha, "alpha"), _double(beta, "beta"), numerics.backward_bias,
    )  # fmt: skip


def add_tensor(
    handle: Handle, alpha: float, a_desc: TensorDescriptor, a: int, beta: float,
    c_desc: TensorDescriptor, c: int,
) -> None:  # fmt: skip
    """c = alpha * a + beta * c, broadcasting a's size-1 dims (e.g. a bias of shape 1,C,1,1)."""
    stream = _live(handle)
    call = "cudnnAddTensor"
    fits = len(a_desc.dims) == len(c_desc.dims) and all(
        m in (1, n) for m, n in zip(a_desc.dims, c_desc.dims, strict=True)
    )
    if not fits:
        raise cudnn_error(
            _BAD_PARAM, call, f"a {a_desc.dims} does not broadcast to c {c_desc.dims}"
        )
    apply(
        call, stream, [("a", a_desc, _ptr(a, "a"))], ("c", c_desc, _ptr(c, "c")),
        _double(alpha, "alpha"), _double(beta, "beta"),
        lambda values: numerics.add_tensor(values, c_desc.dims),
    )  # fmt: skip


def scale_tensor(handle: Handle, y_desc: TensorDescriptor, y: int, alpha: float) -> None:
    """y = alpha * y."""
    stream = _live(handle)
    scale = _double(alpha, "alpha")
    pointer = _ptr(y, "y")
    apply(
        "cudnnScaleTensor", stream, [("y", y_desc, pointer)], ("y", y_desc, pointer), scale,
        0.0, lambda values: values, in_place=True,
    )  # fmt: skip


def activation_forward(
    handle: Handle, activation_desc: ActivationDescriptor, alpha: float,
    x_desc: TensorDescriptor, x: int, beta: float, y_desc: TensorDescriptor, y: int,
) -> None:  # fmt: skip
    stream = _live(handle)
    call = "cudnnActivationForward"
    same_dims(call, x_desc, y_desc)
    mode, coef = activation_desc.mode, activation_desc.coef
    apply(
        call, stream, [("x", x_desc, _ptr(x, "x"))], ("y", y_desc, _ptr(y, "y")),
        _double(alpha, "alpha"), _double(beta, "beta"),
        lambda values: numerics.activation_forward(mode, coef, values),
    )  # fmt: skip


def activation_backward(
    handle: Handle, activation_desc: ActivationDescriptor, alpha: float,
    y_desc: TensorDescriptor, y: int, dy_desc: TensorDescriptor, dy: int,
    x_desc: TensorDescriptor, x: int, beta: float, dx_desc: TensorDescriptor, dx: int,
) -> None:  # fmt: skip
    stream = _live(handle)
    call = "cudnnActivationBackward"
    same_dims(call, y_desc, dy_desc, x_desc, dx_desc)
    mode, coef = activation_desc.mode, activation_desc.coef
    apply(
        call, stream,
        [("y", y_desc, _ptr(y, "y")), ("dy", dy_desc, _ptr(dy, "dy")),
         ("x", x_desc, _ptr(x, "x"))],
        ("dx", dx_desc, _ptr(dx, "dx")), _double(alpha, "alpha"), _double(beta, "beta"),
        lambda y_, dy_, x_: numerics.activation_backward(mode, coef, y_, dy_, x_),
    )  # fmt: skip


def pooling_forward(
    handle: Handle, pooling_desc: PoolingDescriptor, alpha: float, x_desc: TensorDescriptor,
    x: int, beta: float, y_desc: TensorDescriptor, y: int,
) -> None:  # fmt: skip
    stream = _live(handle)
    call = "cudnnPoolingForward"
    _pooled(call, pooling_desc, x_desc, y_desc)
    p = pooling_desc
    apply(
        call, stream, [("x", x_desc, _ptr(x, "x"))], ("y", y_desc, _ptr(y, "y")),
        _double(alpha, "alpha"), _double(beta, "beta"),
        lambda values: numerics.pooling_forward(p.mode, p.window, p.padding, p.stride, values),
    )  # fmt: skip


def pooling_backward(
    handle: Handle, pooling_desc: PoolingDescriptor, alpha: float, y_desc: TensorDescriptor,
    y: int, dy_desc: TensorDescriptor, dy: int, x_desc: TensorDescriptor, x: int, beta: float,
    dx_desc: TensorDescriptor, dx: int,
) -> None:  # fmt: skip
    stream = _live(handle)
    call = "cudnnPoolingBackward"
    _pooled(call, pooling_desc, x_desc, y_desc)
    same_dims(call, y_desc, dy_desc)
    same_dims(call, x_desc, dx_desc)
    p = pooling_desc
    apply(
        call, stream,
        [("y", y_desc, _ptr(y, "y")), ("dy", dy_desc, _ptr(dy, "dy")),
         ("x", x_desc, _ptr(x, "x"))],
        ("dx", dx_desc, _ptr(dx, "dx")), _double(alpha, "alpha"), _double(beta, "beta"),
        lambda y_, dy_, x_: numerics.pooling_backward(
            p.mode, p.window, p.padding, p.stride, y_, dy_, x_
        ),
    )  # fmt: skip


def _pooled(
    call: str, pooling: PoolingDescriptor, x_desc: TensorDescriptor, y_desc: TensorDescriptor
) -> None:
    expected = pooling.output_dims(x_desc)
    if y_desc.dims != expected:
        raise cudnn_error(_BAD_PARAM, call, f"y dims {y_desc.dims} are not the output {expected}")


def softmax_forward(
    handle: Handle, algorithm: str, mode: str, alpha: float, x_desc: TensorDescriptor, x: int,
    beta: float, y_desc: TensorDescriptor, y: int,
) -> None:  # fmt: skip
    """Softmax over C ("channel", per position) or over C*H*W ("instance", per sample)."""
    stream = _live(handle)
    lookup(SOFTMAX_ALGORITHMS, algorithm, "softmax algorithm")
    lookup(SOFTMAX_MODES, mode, "softmax mode")
    call = "cudnnSoftmaxForward"
    same_dims(call, x_desc, y_desc)
    apply(
        call, stream, [("x", x_desc, _ptr(x, "x"))], ("y", y_desc, _ptr(y, "y")),
        _double(alpha, "alpha"), _double(beta, "beta"),
        lambda values: numerics.softmax_forward(algorithm, mode, values),
    )  # fmt: skip


def softmax_backward(
    handle: Handle, algorithm: str, mode: str, alpha: float, y_desc: TensorDescriptor, y: int,
    dy_desc: TensorDescriptor, dy: int, beta: float, dx_desc: TensorDescriptor, dx: int,
) -> None:  # fmt: skip
    stream = _live(handle)
    lookup(SOFTMAX_ALGORITHMS, algorithm, "softmax algorithm")
    lookup(SOFTMAX_MODES, mode, "softmax mode")
    call = "cudnnSoftmaxBackward"
    same_dims(call, y_desc, dy_desc, dx_desc)
    apply(
        call, stream, [("y", y_desc, _ptr(y, "y")), ("dy", dy_desc, _ptr(dy, "dy"))],
        ("dx", dx_desc, _ptr(dx, "dx")), _double(alpha, "alpha"), _double(beta, "beta"),
        lambda y_, dy_: numerics.softmax_backward(algorithm, mode, y_, dy_),
    )  # fmt: skip


def _ptr(value: object, name: str) -> int:
    return to_address(value, name)
