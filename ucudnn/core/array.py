"""DeviceArray: a typed, strided view of device memory that keeps its owner alive.

dtypes are names, the same vocabulary as ConvProblem ("float32", "float16", "bfloat16",
"float64", plus a few integer types). On the host, bfloat16 is `ml_dtypes.bfloat16`, the numpy
bfloat16 dtype JAX uses: `to_numpy` returns such arrays and `from_numpy` takes them. Raw
bfloat16 bit patterns in a uint16 array are taken too, but only when dtype="bfloat16" says so;
float arrays are never reinterpreted (convert them with `.astype(ml_dtypes.bfloat16)`, which
rounds to nearest even). Strides are in bytes, as in numpy.

Arrays cross to other libraries through `__cuda_array_interface__` (version 3) both ways,
without copies; DLPack (`__dlpack__`) arrays on a CUDA device can be imported too.
Copies to and from the host are enqueued on a stream given as an int handle (0 = the legacy
default stream); `to_numpy` waits for its stream.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ucudnn.core.checks import shown
from ucudnn.core.dtypes import DTYPES, ELEMENTS, check_dtype, host_dtype, itemsize

# DLPack (type code, bits) -> dtype name; codes are kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4.
_DLPACK_DTYPES = {
    (2, 16): "float16",
    (4, 16): "bfloat16",
    (2, 32): "float32",
    (2, 64): "float64",
    (0, 8): "int8",
    (1, 8): "uint8",
    (0, 32): "int32",
    (0, 64): "int64",
}
_DLPACK_CUDA_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged
_DLPACK_CPU = 1


def _dtype_of(array: np.ndarray, dtype: str | None) -> str:
    """The DeviceArray dtype name for a host array, checking an explicit `dtype` against it."""
    name = array.dtype.name  # "bfloat16" for ml_dtypes arrays, whose kind is 'V'
    if dtype is None:
        return check_dtype(name)
    check_dtype(dtype)
    if dtype == "bfloat16" and name == "uint16":
        return dtype  # bit patterns, asked for by name: copied as they are
    if name != dtype:
        raise TypeError(
            f"a {name} array cannot be copied as {dtype}; convert it first with "
            f".astype({_spelled(dtype)})"
        )
    return dtype


def _spelled(dtype: str) -> str:
    """How numpy code names the host dtype of `dtype`."""
    return "ml_dtypes.bfloat16" if dtype == "bfloat16" else f"numpy.{dtype}"


def _host_bytes(array: np.ndarray) -> np.ndarray:
    """A C-contiguous host array's memory as uint8, for the copy functions, which take buffers:
    an ml_dtypes array exports none (the buffer protocol has no bfloat16 format)."""
    return array.reshape(-1).view(np.uint8)


def _int_tuple(values: object, what: str) -> tuple[int, ...]:
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise TypeError(f"{what} must be a tuple of ints, got {shown(values)}")
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{what} must be a tuple of ints, got {shown(values)}") from None


def _c_strides(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    strides, step = [], size
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _cai_stream(stream: int) -> int:
    # The interface spells the legacy default stream 1 (cudaStreamLegacy) and forbids 0.
    return 1 if stream == 0 else stream


class DeviceArray:
    """A view of device memory: address, shape, dtype name, byte strides and an owner.

    `owner` is any object whose lifetime keeps the memory valid (a DeviceBuffer, or the CuPy or
    PyTorch array it came from). `stream` is the stream whose work produces the contents;
    consumers of `__cuda_array_interface__` order their work after it.
    """

    __slots__ = ("device", "dtype", "owner", "ptr", "readonly", "shape", "stream", "strides")

    def __init__(
        self,
        ptr: int,
        shape: Sequence[int],
        dtype: str,
        strides: Sequence[int] | None = None,
        *,
        owner: object = None,
        device: int | None = None,
        readonly: bool = False,
        stream: int = 0,
    ) -> None:
        self.dtype = check_dtype(dtype)
        size = ELEMENTS[self.dtype][0]
        self.shape = _int_tuple(shape, "shape")
        if any(extent < 0 for extent in self.shape):
            raise ValueError(f"shape must not have negative extents, got {self.shape}")
        if strides is None:
            self.strides = _c_strides(self.shape, size)
        else:
            self.strides = _int_tuple(strides, "strides")
            if len(self.strides) != len(self.shape):
                raise ValueError(f"strides {self.strides} do not match shape {self.shape}")
            if any(s < 0 or s % size for s in self.strides):
                raise ValueError(
                    f"strides {self.strides} must be non-negative multiples of the "
                    f"{size}-byte {self.dtype} element"
                )
        try:
            self.ptr = operator.index(ptr)
        except TypeError:
            raise TypeError(f"ptr must be an int device address, got {ptr!r}") from None
        if self.ptr < 0 or self.ptr % size:
            raise ValueError(f"ptr {self.ptr:#x} is not a {size}-byte aligned device address")
        if self.ptr == 0 and self.size:
            raise ValueError(f"ptr is 0 but the array has {self.size} elements")
        self.owner = owner
        self.device = device
        self.readonly = bool(readonly)
        self.stream = operator.index(stream)

    # --- shape arithmetic --------------------------------------------------------------------

    @property
    def itemsize(self) -> int:
        return ELEMENTS[self.dtype][0]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def element_strides(self) -> tuple[int, ...]:
        """Strides in elements, as cuDNN tensor descriptors take them."""
        return tuple(s // self.itemsize for s in self.strides)

    @property
    def is_c_contiguous(self) -> bool:
        expected = _c_strides(self.shape, self.itemsize)
        pairs = zip(self.shape, self.strides, expected, strict=True)
        return self.size == 0 or all(e == 1 or s == c for e, s, c in pairs)

    def slice_batch(self, start: int, stop: int) -> DeviceArray:
        """The view of rows start..stop-1 along the first axis (a micro-batch), no copy."""
        if not self.shape:
            raise ValueError("cannot slice a 0-d array")
        if not 0 <= start <= stop <= self.shape[0]:
            raise ValueError(f"slice {start}:{stop} is outside 0:{self.shape[0]}")
        return DeviceArray(
            self.ptr + start * self.strides[0],
            (stop - start, *self.shape[1:]),
            self.dtype,
            self.strides,
            owner=self,
            device=self.device,
            readonly=self.readonly,
            stream=self.stream,
        )

    def order_before(self, stream: int) -> None:
        """Make later work on `stream` wait for the work enqueued so far on this array's own
        stream, without the host waiting (nothing to do when they are the same stream)."""
        if _cai_stream(self.stream) != _cai_stream(stream):
            order_after(self.stream, stream)

    def __repr__(self) -> str:
        return (
            f"DeviceArray(ptr={self.ptr:#x}, shape={self.shape}, dtype={self.dtype!r}, "
            f"strides={self.strides}, device={self.device})"
        )

    # --- allocation and host copies ------------------------------------------------------------

    @classmethod
    def empty(cls, shape: Sequence[int], dtype: str, *, stream: int = 0) -> DeviceArray:
        """A new C-contiguous array on the current device (contents undefined)."""
        from ucudnn._native import _cuda

        shape = _int_tuple(shape, "shape")
        if any(extent < 0 for extent in shape):
            raise ValueError(f"shape must not have negative extents, got {shape}")
        nbytes = int(np.prod(shape, dtype=np.int64)) * itemsize(dtype)
        buffer = _cuda.DeviceBuffer(nbytes)
        return cls(buffer.ptr, shape, dtype, owner=buffer, device=buffer.device, stream=stream)

    @classmethod
    def from_numpy(
        cls, array: np.ndarray, *, dtype: str | None = None, stream: int = 0
    ) -> DeviceArray:
        """Copy a host array to a new device array; dtype="bfloat16" takes `ml_dtypes.bfloat16`
        arrays, and uint16 arrays of bfloat16 bit patterns."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"from_numpy needs a numpy array, got {type(array).__name__}")
        result = cls.empty(array.shape, _dtype_of(array, dtype), stream=stream)
        result.copy_from_numpy(array, stream=stream)
        return result

    def copy_from_numpy(self, array: np.ndarray, *, stream: int = 0) -> None:
        """Enqueue a copy of a host array of the same shape and dtype into this array."""
        from ucudnn._native import _cuda

        if not isinstance(array, np.ndarray):
            raise TypeError(f"copy_from_numpy needs a numpy array, got {type(array).__name__}")
        self._check_host_copy("copy_from_numpy")
        if self.readonly:
            raise ValueError("copy_from_numpy: this device array is read-only")
        if array.shape != self.shape:
            raise ValueError(f"copy_from_numpy: shape {array.shape} != {self.shape}")
        _dtype_of(array, self.dtype)
        if self.nbytes:
            _cuda.memcpy_htod(
                self.ptr, _host_bytes(np.ascontiguousarray(array)), self.nbytes, stream
            )

    def to_numpy(self, *, stream: int = 0) -> np.ndarray:
        """Copy to a new host array and wait for `stream` (bfloat16 as `ml_dtypes.bfloat16`)."""
        from ucudnn._native import _cuda

        self._check_host_copy("to_numpy")
        out = np.empty(self.shape, dtype=host_dtype(self.dtype))
        if self.nbytes:
            _cuda.memcpy_dtoh(_host_bytes(out), self.ptr, self.nbytes, stream)
            _cuda.stream_synchronize(stream)
        return out

    def _check_host_copy(self, what: str) -> None:
        if not self.is_c_contiguous:
            raise ValueError(
                f"{what} needs a C-contiguous device array, strides are {self.strides}"
            )

    # --- __cuda_array_interface__ -------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        typestr = ELEMENTS[self.dtype][1]
        if typestr is None:
            raise TypeError(f"{self.dtype} has no __cuda_array_interface__ typestr")
        return {
            "shape": self.shape,
            "typestr": typestr,
            "data": (self.ptr, self.readonly),
            "version": 3,
            "strides": None if self.is_c_contiguous else self.strides,
            "stream": _cai_stream(self.stream),
        }

    @classmethod
    def from_cuda_array_interface(cls, obj: object, *, stream: int = 0) -> DeviceArray:
        """Wrap any object exposing __cuda_array_interface__ (CuPy, PyTorch, Numba), no copy.

        Work the producer enqueued on its stream is ordered before later work on `stream`
        (through an event, without waiting on the host). The result keeps `obj` alive.
        """
        try:
            cai = obj.__cuda_array_interface__  # type: ignore[attr-defined]
        except AttributeError:
            raise TypeError(
                f"{type(obj).__name__} does not expose __cuda_array_interface__"
            ) from None
        ptr, shape, dtype, strides, readonly, producer = _parse_interface(cai)
        array = cls(ptr, shape, dtype, strides, owner=obj, readonly=readonly, stream=stream)
        if array.size:
            array.device = _device_of(ptr)
        if producer is not None and producer != _cai_stream(stream):
            order_after(producer, stream)
        return array

    @classmethod
    def from_dlpack(cls, obj: object, *, stream: int = 0) -> DeviceArray:
        """Wrap any CUDA array exporting DLPack (`__dlpack__`, `__dlpack_device__`), no copy.

        `stream` is passed to the producer, which orders its pending work before later work on
        it. The result owns the consumed DLPack tensor, which keeps the producer's memory alive.
        """
        from ucudnn._native import _dlpack

        if not (hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")):
            raise TypeError(
                f"{type(obj).__name__} does not export DLPack (__dlpack__, __dlpack_device__)"
            )
        device_type, device_id = obj.__dlpack_device__()
        if device_type not in _DLPACK_CUDA_DEVICES:
            where = "the CPU" if device_type == _DLPACK_CPU else f"DLPack device type {device_type}"
            raise ValueError(
                f"{type(obj).__name__} is on {where}, not a CUDA device; move it to the GPU first"
            )
        producer_stream = _cai_stream(stream)  # DLPack spells the legacy default stream 1 too
        try:
            capsule = obj.__dlpack__(stream=producer_stream, max_version=(1, 0))
        except TypeError:  # producers older than DLPack 1.0 take no max_version
            capsule = obj.__dlpack__(stream=producer_stream)
        tensor = _dlpack.DLPackTensor(capsule)
        dtype = _dtype_from_dlpack(tensor.dtype_code, tensor.dtype_bits, tensor.dtype_lanes)
        size = ELEMENTS[dtype][0]
        strides = None if tensor.strides is None else tuple(s * size for s in tensor.strides)
        return cls(
            tensor.ptr,
            tensor.shape,
            dtype,
            strides,
            owner=tensor,
            device=device_id,
            readonly=tensor.readonly,
            stream=stream,
        )


def _dtype_from_dlpack(code: int, bits: int, lanes: int) -> str:
    if lanes != 1:
        raise ValueError(f"DLPack vector dtypes ({lanes} lanes) are not supported")
    try:
        return _DLPACK_DTYPES[code, bits]
    except KeyError:
        raise ValueError(
            f"DLPack dtype (type code {code}, {bits} bits) is not supported; "
            f"expected one of {', '.join(DTYPES)}"
        ) from None


def _parse_interface(cai: object) -> tuple[int, tuple[int, ...], str, Any, bool, int | None]:
    """Validate a __cuda_array_interface__ dict; returns (ptr, shape, dtype, strides,
    readonly, producer stream or None)."""
    if not isinstance(cai, dict):
        raise TypeError(f"__cuda_array_interface__ must be a dict, got {type(cai).__name__}")
    missing = {"shape", "typestr", "data", "version"} - cai.keys()
    if missing:
        raise ValueError(f"__cuda_array_interface__ lacks {', '.join(sorted(missing))}")
    version = cai["version"]
    if version not in (1, 2, 3):
        raise ValueError(f"__cuda_array_interface__ version {version!r} is not supported (1-3)")
    shape = _int_tuple(cai["shape"], "__cuda_array_interface__ shape")
    dtype = _dtype_from_typestr(cai["typestr"])
    data = cai["data"]
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[1], bool)):
        raise ValueError(f"__cuda_array_interface__ data must be (ptr, readonly), got {data!r}")
    try:
        ptr = operator.index(data[0])
    except TypeError:
        raise TypeError(
            f"__cuda_array_interface__ data pointer must be an int, got {data[0]!r}"
        ) from None
    if cai.get("mask") is not None:
        raise ValueError("masked arrays (__cuda_array_interface__ mask) are not supported")
    producer = cai.get("stream") if version >= 3 else None
    if producer is not None:
        producer = operator.index(producer)
        if producer == 0:
            raise ValueError("__cuda_array_interface__ stream 0 is ambiguous and disallowed")
    return ptr, shape, dtype, cai.get("strides"), data[1], producer


def _dtype_from_typestr(typestr: object) -> str:
    if not isinstance(typestr, str):
        raise TypeError(f"__cuda_array_interface__ typestr must be a str, got {typestr!r}")
    try:
        parsed = np.dtype(typestr)
    except TypeError:
        raise ValueError(f"__cuda_array_interface__ typestr {typestr!r} is not valid") from None
    if parsed.byteorder == ">":
        raise ValueError(f"big-endian data ({typestr!r}) is not supported")
    for name, (_, known) in ELEMENTS.items():
        if known is not None and np.dtype(known) == parsed:
            return name
    raise ValueError(
        f"__cuda_array_interface__ typestr {typestr!r} ({parsed.name}) is not supported; "
        f"expected one of {', '.join(DTYPES)}"
    )


def _device_of(ptr: int) -> int:
    from ucudnn._native import _cuda

    device = _cuda.pointer_device(ptr)
    if device is None:
        raise ValueError(f"__cuda_array_interface__ data pointer {ptr:#x} is not device memory")
    return device


def order_after(producer: int, consumer: int) -> None:
    """Make later work on `consumer` wait for what is already enqueued on `producer`."""
    from ucudnn._native import _cuda

    event = _cuda.Event(timing=False)
    event.record(producer)
    _cuda.stream_wait_event(consumer, event)
