"""Tensors a simulated cuDNN call reads or writes: a descriptor's shape over checked memory."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ucudnn.core.dtypes import host_dtype
from ucudnn.testing.simulator.convert import cuda_error, cudnn_error
from ucudnn.testing.simulator.descriptors import (
    ITEMSIZE,
    NOT_SUPPORTED,
    FilterDescriptor,
    TensorDescriptor,
    element_strides,
    extent_bytes,
    packed_bytes,
)
from ucudnn.testing.simulator.device import DEVICE
from ucudnn.testing.simulator.memory import ConformanceError, Span

Array = np.ndarray[Any, np.dtype[Any]]
_MISALIGNED_ADDRESS = 716  # cudaErrorMisalignedAddress
# The dtype a read gives the arithmetic: bfloat16 computes on float32 values, the rest as stored.
_COMPUTED_AS = {"bfloat16": np.dtype(np.float32)}


@dataclasses.dataclass(frozen=True)
class Operand:
    """One tensor argument of a call, its memory checked for its whole extent."""

    name: str  # as the binding names the pointer: "x", "dy", "workspace", ...
    dtype: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    span: Span

    @property
    def dense(self) -> bool:
        """Whether it covers every byte of its span (so a write replaces the whole span)."""
        return self.span.nbytes == packed_bytes(self.dims, self.dtype)

    def view(self) -> Array:
        """The values as memory holds them now, in logical order: no copy (and read-only
        while its allocation holds one byte throughout, see `Allocation.uniform`)."""
        uniform = self.span.allocation.uniform
        if uniform is not None:
            value = np.full(ITEMSIZE[self.dtype], uniform, np.uint8).view(host_dtype(self.dtype))
            return np.broadcast_to(value, self.dims)
        return self._memory()

    def _memory(self) -> Array:
        """The values in memory, writable: its bytes are made if they were not."""
        itemsize = ITEMSIZE[self.dtype]
        return np.ndarray(
            self.dims,
            host_dtype(self.dtype),
            buffer=self.span.allocation.bytes,
            offset=self.span.offset,
            strides=[s * itemsize for s in self.strides],
        )

    def computed(self, values: Array) -> Array:
        """A copy of this tensor's `values` as the arithmetic takes them (bfloat16 as float32
        values)."""
        return values.astype(_COMPUTED_AS.get(self.dtype, values.dtype))

    def read(self) -> Array:
        """A copy of the values, once every deferred write to them is computed (see
        `computed`)."""
        DEVICE.before_read(self.span)
        return self.computed(self.view())

    def write(self, values: Array) -> None:
        """Store values already rounded to the dtype (bfloat16 as float32 values), so the
        assignment's conversion is exact."""
        self._memory()[...] = values


def operand(
    name: str,
    desc: TensorDescriptor | FilterDescriptor,
    ptr: int,
    call: str,
) -> Operand:
    """The tensor `desc` describes at `ptr`, refused as cuDNN or the device would refuse it."""
    return operand_at(name, desc.dtype, desc.dims, element_strides(desc), ptr, call)


def operand_at(
    name: str, dtype: str, dims: tuple[int, ...], strides: tuple[int, ...], ptr: int, call: str
) -> Operand:
    """A tensor of `dtype`, `dims` and element `strides` at `ptr`, refused as cuDNN or the
    device would refuse it."""
    if any(s < 0 for s in strides):
        raise cudnn_error(NOT_SUPPORTED, call, f"{name} has negative strides {strides}")
    if ptr % ITEMSIZE[dtype]:
        status, provenance = DEVICE.caps.contract_status("misaligned_pointer")
        if status == 0:  # cuDNN does not check: its kernel faults on the device instead
            raise cuda_error(_MISALIGNED_ADDRESS, call)
        raise cudnn_error(
            status,
            call,
            f"{name} at {ptr:#x} is not aligned to its {ITEMSIZE[dtype]}-byte elements "
            f"(status {provenance})",
        )
    span = DEVICE.span(ptr, extent_bytes(dims, strides, dtype), name, call)
    return Operand(name, dtype, dims, strides, span)


def check_disjoint(output: Operand, others: list[Operand], call: str) -> None:
    """A call's output may share no byte with its inputs or workspace: cuDNN computes out of
    place, and on hardware an overlap gives wrong results without any error."""
    for other in others:
        if output.span.overlaps(other.span):
            raise ConformanceError(
                f"{call}: simulated device: output {output.name} overlaps {other.name} "
                f"({output.span.start:#x}+{output.span.nbytes} and "
                f"{other.span.start:#x}+{other.span.nbytes})"
            )
