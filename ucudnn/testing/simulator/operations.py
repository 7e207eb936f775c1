"""The simulated element-wise, bias, activation, pooling and softmax calls of cuDNN.

They are cheap, so they compute when enqueued; their operands are checked like a
convolution's: live memory for the whole extent, aligned, the output apart from the inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ucudnn.testing.simulator import numerics
from ucudnn.testing.simulator.convert import cudnn_error
from ucudnn.testing.simulator.descriptors import BAD_PARAM, TensorDescriptor, packed_bytes
from ucudnn.testing.simulator.device import DEVICE
from ucudnn.testing.simulator.tensors import Array, Operand, check_disjoint, operand

_LAUNCH_MS = 0.003
_BYTES_PER_MS = 2e9


def apply(
    call: str,
    stream: int,
    inputs: Sequence[tuple[str, TensorDescriptor, int]],
    output: tuple[str, TensorDescriptor, int],
    alpha: float,
    beta: float,
    result: Callable[..., Array],
    *,
    in_place: bool = False,
) -> None:
    """output = alpha * result(*inputs) + beta * output, after cuDNN's checks.

    `in_place` allows the output to be one of the inputs (cudnnScaleTensor reads and writes
    the same tensor)."""
    read = [operand(name, desc, ptr, call) for name, desc, ptr in inputs]
    out = operand(*output, call)
    if not in_place:
        check_disjoint(out, read, call)
    dtypes = {o.dtype for o in (*read, out)}
    if len(dtypes) > 1:
        raise cudnn_error(BAD_PARAM, call, f"the tensors' types differ: {sorted(dtypes)}")
    values = [o.read() for o in read]
    old = out.read() if beta != 0 else None
    DEVICE.before_write(out.span, out.dense)
    out.write(numerics.blend(result(*values), old, alpha, beta, out.dtype))
    DEVICE.advance(stream, _LAUNCH_MS + sum(_bytes(o) for o in (*read, out)) / _BYTES_PER_MS)


def _bytes(o: Operand) -> int:
    return packed_bytes(o.dims, o.dtype)


def same_dims(call: str, *descs: TensorDescriptor) -> None:
    if len({d.dims for d in descs}) > 1:
        raise cudnn_error(
            BAD_PARAM, call, f"the tensors' dims differ: {', '.join(str(d.dims) for d in descs)}"
        )
