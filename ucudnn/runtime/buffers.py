"""Turn what callers pass as a tensor into a device pointer, checking it against the problem."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ucudnn.core.array import DeviceArray
from ucudnn.core.problem import ITEMSIZE, ConvProblem, to_logical
from ucudnn.runtime.steps import ROLES

# The names a kernel's tensors go by in its arguments, in ROLES order (for error messages).
ARGUMENT_NAMES = {
    "forward": ("x", "w", "y"),
    "backward_data": ("w", "dy", "dx"),
    "backward_filter": ("x", "dy", "dw"),
}


def kernel_pointers(
    kernel: str, problem: ConvProblem, tensors: Sequence[object], *, stream: int, device: int
) -> dict[str, int]:
    """Pointers of a kernel's three tensors (in its argument order), by their names in the
    problem (x, w, y), each checked and ordered as `device_pointer` does."""
    if len(tensors) != 3:
        raise TypeError(f"{kernel} takes 3 tensors ({', '.join(ARGUMENT_NAMES[kernel])})")
    (t1, t2, t3), (r1, r2, r3), (a1, a2, a3) = ROLES[kernel], ARGUMENT_NAMES[kernel], tensors
    return {
        t1: device_pointer(a1, problem, t1, r1, stream=stream, device=device),
        t2: device_pointer(a2, problem, t2, r2, stream=stream, device=device),
        t3: device_pointer(a3, problem, t3, r3, stream=stream, device=device),
    }


def bias_pointer(
    kernel: str, bias: object, problem: ConvProblem, *, stream: int, device: int
) -> int:
    """Pointer of a forward call's bias, checked as a tensor is."""
    if kernel != "forward":
        raise ValueError(f"bias is added by the forward kernel, not by {kernel}")
    return device_pointer(bias, problem, "b", "bias", stream=stream, device=device)


def device_pointer(
    obj: object,
    problem: ConvProblem,
    tensor: str,
    role: str,
    *,
    stream: int = 0,
    device: int | None = None,
) -> int:
    """Pointer of `obj`: a raw int, a DeviceArray, or an array with __cuda_array_interface__
    or DLPack (the interface is preferred when an array has both).

    Arrays must match the shape, strides and dtype the problem expects for x, w or y, and live
    on `device` (when given); `role` ("x", "dy", "dw", ...) names the argument in error
    messages. Work already enqueued for an array on its own stream is ordered before later
    work on `stream`, the stream the convolution runs on, without the host waiting. A raw
    pointer carries no stream: ordering it is the caller's business.
    """
    if type(obj) is int and obj:
        return obj  # a raw pointer, the common case: nothing to check or order
    if isinstance(obj, bool) or obj is None:
        raise TypeError(f"{role} must be a device pointer (int) or a device array, got {obj!r}")
    if isinstance(obj, int):
        if obj == 0 and problem.nbytes(tensor) > 0:  # type: ignore[arg-type]
            raise ValueError(f"{role} is a null pointer")
        return obj
    array = _imported(obj, role, stream)
    _check_matches(array, problem, tensor, role)
    if device is not None and array.device is not None and array.device != device:
        raise ValueError(
            f"{role} is on device {array.device}, but this handle uses device {device}"
        )
    if array is obj:  # imported arrays were ordered by the import
        array.order_before(stream)
    return array.ptr


def _imported(obj: object, role: str, stream: int) -> DeviceArray:
    """`_as_device_array`, its refusals naming the argument; a numpy array is refused with
    where host arrays go."""
    if isinstance(obj, np.ndarray):
        raise ValueError(
            f"{role}: this numpy ndarray is on the CPU, in host memory; copy it to the device "
            f"with ucudnn.DeviceArray.from_numpy({role}), or pass numpy arrays to "
            "ucudnn.conv_forward, conv_backward_data or conv_backward_filter instead"
        )
    try:
        return _as_device_array(obj, stream)
    except (TypeError, ValueError) as exc:
        refusal = TypeError if isinstance(exc, TypeError) else ValueError
        raise refusal(f"{role}: {exc}") from None


def _as_device_array(obj: object, stream: int) -> DeviceArray:
    """`obj` itself if it is a DeviceArray, else imported with its pending work ordered before
    `stream` (DLPack's and the interface's stream protocols)."""
    if isinstance(obj, DeviceArray):
        return obj
    if hasattr(obj, "__dlpack__") and not hasattr(obj, "__cuda_array_interface__"):
        return DeviceArray.from_dlpack(obj, stream=stream)
    return DeviceArray.from_cuda_array_interface(obj, stream=stream)


def _check_matches(array: DeviceArray, problem: ConvProblem, tensor: str, role: str) -> None:
    shape, strides = problem.stored_arrays[tensor]
    if array.shape == shape and array.strides == strides and array.dtype == problem.dtype:
        return  # as stored exactly; otherwise the checks below say what differs, or accept it
    shapes = {"x": problem.x_shape, "w": problem.w_shape, "y": problem.y_shape}
    shape = shapes.get(tensor, problem.b_shape)
    if tuple(array.shape) != shape:
        raise ValueError(f"{role} has shape {tuple(array.shape)}, expected {shape}")
    if array.dtype != problem.dtype:
        raise TypeError(f"{role} has dtype {array.dtype}, expected {problem.dtype}")
    if tensor in ("w", "b"):
        if not array.is_c_contiguous:
            raise ValueError(f"{role} must be C-contiguous")
        return
    layout = problem.layout
    expected = problem.x_strides if tensor == "x" else problem.y_strides
    itemsize = ITEMSIZE[problem.dtype]
    strides = to_logical(tuple(s // itemsize for s in array.strides), layout)
    if strides != expected:
        raise ValueError(
            f"{role} has element strides {strides} (logical N, C, ... order), "
            f"expected {expected} for this problem"
        )
