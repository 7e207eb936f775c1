"""The simulated CUDA runtime: `ucudnn._native._cuda`'s surface over the simulated device.

Same names, parameters, checks and exceptions as native/_cuda.pyx; what the real calls would
do to a GPU is done to `DEVICE` instead. Copies and memsets happen when enqueued; pointers are
checked against live allocations for their whole extent.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from ucudnn.errors import NoDeviceError, no_device_error
from ucudnn.testing.simulator import statuses
from ucudnn.testing.simulator.convert import cuda_error, to_address, to_c_int, to_int, to_size
from ucudnn.testing.simulator.device import (
    DEVICE,
    RUNTIME_VERSION as _RUNTIME_VERSION,  # private: the module offers only _cuda.pyi's names
    Destroyable,
    EventState,
    SimDevice,
    StreamState,
)
from ucudnn.testing.simulator.faults import Context
from ucudnn.testing.simulator.memory import IllegalAddressError, Span

_INVALID_VALUE = 1
_MEMORY_ALLOCATION = 2
_INSUFFICIENT_DRIVER = 35
_NO_DEVICE = 100
_INVALID_DEVICE = 101
_INVALID_RESOURCE_HANDLE = 400
# Modelled speed of copies and memsets: a few microseconds to launch, then bandwidth.
_LAUNCH_MS = 0.002
_BYTES_PER_MS = 2e9  # 2 TB/s


def runtime_version() -> int:
    return _RUNTIME_VERSION


def driver_version() -> int:
    return DEVICE.driver_version


def _check_devices(call: str) -> None:
    if not DEVICE.driver_runs_runtime():  # no driver (version 0), or one for an older CUDA
        raise _no_device(_INSUFFICIENT_DRIVER, call)
    if not DEVICE.memories:
        raise _no_device(_NO_DEVICE, call)


def _no_device(code: int, call: str) -> NoDeviceError:
    """The error the binding raises: with the versions that tell its cases apart."""
    return no_device_error(
        code,
        statuses.cuda_error_name(code),
        call,
        statuses.cuda_error_string(code),
        DEVICE.driver_version,
        _RUNTIME_VERSION,
    )


def device_count() -> int:
    _check_devices("cudaGetDeviceCount")
    return len(DEVICE.memories)


def get_device() -> int:
    _check_devices("cudaGetDevice")
    return DEVICE.current


def set_device(device: int) -> None:
    device = to_c_int(device, "device")
    _check_devices("cudaSetDevice")
    if not 0 <= device < len(DEVICE.memories):
        raise cuda_error(_INVALID_DEVICE, "cudaSetDevice")
    DEVICE.current = device


def device_properties(device: int) -> dict[str, Any]:
    device = to_c_int(device, "device")
    _check_devices("cudaGetDeviceProperties")
    if not 0 <= device < len(DEVICE.memories):
        raise cuda_error(_INVALID_DEVICE, "cudaGetDeviceProperties")
    return {
        "name": DEVICE.name,
        "major": 9,
        "minor": 0,
        "total_memory": DEVICE.memories[device].capacity,
        "multiprocessor_count": 132,
        "uuid": f"GPU-{uuid.UUID(int=0x51_0000 + device)}",
        "pci_bus_id": f"00000000:{device + 1:02X}:00.0",
    }


def mem_get_info() -> tuple[int, int]:
    _check_devices("cudaMemGetInfo")
    return DEVICE.memory.free_bytes, DEVICE.memory.capacity


def device_synchronize() -> None:
    _check_devices("cudaDeviceSynchronize")


# --- memory ----------------------------------------------------------------------------------


def _malloc(nbytes: int) -> int:
    if nbytes == 0:
        return 0
    _check_devices("cudaMalloc")
    status = DEVICE.faults.status(Context("cudaMalloc", nbytes=nbytes))
    allocation = DEVICE.allocate(nbytes) if status is None else None
    if allocation is None:
        exc = cuda_error(status or _MEMORY_ALLOCATION, "cudaMalloc")
        exc.add_note(f"requested {nbytes} bytes")
        raise exc
    return allocation.address


def _free(ptr: int) -> None:
    if DEVICE.free(ptr) is not None:  # a double free, or not the start of an allocation
        raise cuda_error(_INVALID_VALUE, "cudaFree")


def free(ptr: object) -> None:
    address = to_address(ptr, "ptr")
    if address:
        _free(address)


class DeviceBuffer:
    """Device memory owned by this object: freed by release() or when it is garbage."""

    def __init__(self, nbytes: int) -> None:
        n = to_size(nbytes, "nbytes")
        self._ptr = 0
        self._device: int | None = None
        if n:
            self._device = get_device()
            self._ptr = _malloc(n)
        self._nbytes = n

    # The device is bound as a default: at interpreter exit module globals may be gone.
    def __del__(self, _device: SimDevice = DEVICE) -> None:
        if getattr(self, "_ptr", 0):
            _device.free(self._ptr)

    @property
    def ptr(self) -> int:
        return self._ptr

    @property
    def nbytes(self) -> int:
        return self._nbytes

    @property
    def device(self) -> int | None:
        return self._device

    def release(self) -> None:
        ptr, self._ptr, self._nbytes = self._ptr, 0, 0
        if ptr:
            _free(ptr)

    def __repr__(self) -> str:
        return f"DeviceBuffer(ptr={self.ptr:#x}, nbytes={self._nbytes}, device={self._device})"


def _host_view(obj: object, writable: bool, what: str) -> memoryview:
    if isinstance(obj, np.ndarray) and obj.flags.c_contiguous:
        # cudart's binding asks for bytes without a format, which numpy gives for any dtype;
        # memoryview asks for one, which ml_dtypes' bfloat16 has not. Bytes it is, then.
        obj = obj.reshape(-1).view(np.uint8)
    view = memoryview(obj)  # type: ignore[arg-type]  # TypeError "a bytes-like object ..."
    if not view.c_contiguous or (writable and view.readonly):
        kind = "writable, C-contiguous" if writable else "C-contiguous"
        problem = "read-only" if view.c_contiguous else "not C-contiguous"
        raise ValueError(f"{what} must be a {kind} buffer: the buffer is {problem}")
    return view.cast("B")


def _stream(stream: object, call: str) -> int:
    handle = to_address(stream, "stream")
    if DEVICE.stream(handle) is None:
        raise cuda_error(_INVALID_RESOURCE_HANDLE, call)
    return handle


def _enqueue(stream: int, nbytes: int) -> None:
    DEVICE.advance(stream, _LAUNCH_MS + nbytes / _BYTES_PER_MS)


def _bytes(span: Span) -> np.ndarray[Any, np.dtype[np.uint8]]:
    return span.allocation.bytes[span.offset : span.offset + span.nbytes]


def _device_span(ptr: int, nbytes: int, what: str, call: str) -> Span:
    """Live device bytes for a copy; a bad pointer is cudaErrorInvalidValue, as the runtime
    checks copies when they are enqueued (the cause, chained, says what was wrong)."""
    try:
        return DEVICE.span(ptr, nbytes, what, call)
    except IllegalAddressError as exc:
        raise cuda_error(_INVALID_VALUE, call) from exc


def _host_copy(
    device: object, host: object, nbytes: object, stream: object, to_device: bool
) -> tuple[int, int, int, memoryview]:
    """A host<->device copy's arguments, checked as the runtime does before enqueueing:
    (device address, byte count, stream, host view)."""
    device_name, host_name = ("dst", "src") if to_device else ("src", "dst")
    d = to_address(device, device_name)
    n = to_size(nbytes, "nbytes")
    s = to_address(stream, "stream")
    view = _host_view(host, not to_device, host_name)
    if n > view.nbytes:
        raise ValueError(f"nbytes={n} exceeds the {view.nbytes} bytes of the host buffer")
    return d, n, _stream(s, "cudaMemcpyAsync"), view


def memcpy_htod(dst: object, src: object, nbytes: object, stream: object = 0) -> None:
    d, n, s, view = _host_copy(dst, src, nbytes, stream, to_device=True)
    if n:
        span = _device_span(d, n, "dst", "cudaMemcpyAsync")
        DEVICE.before_write(span, dense=True)
        _bytes(span)[:] = np.frombuffer(view, np.uint8, n)
    _enqueue(s, n)


def memcpy_dtoh(dst: object, src: object, nbytes: object, stream: object = 0) -> None:
    source, n, s, view = _host_copy(src, dst, nbytes, stream, to_device=False)
    if n:
        span = _device_span(source, n, "src", "cudaMemcpyAsync")
        DEVICE.before_read(span)
        np.frombuffer(view, np.uint8, n)[:] = _bytes(span)
    _enqueue(s, n)


def memcpy_dtod(dst: object, src: object, nbytes: object, stream: object = 0) -> None:
    d, source = to_address(dst, "dst"), to_address(src, "src")
    n = to_size(nbytes, "nbytes")
    s = _stream(stream, "cudaMemcpyAsync")
    if n:
        read = _device_span(source, n, "src", "cudaMemcpyAsync")
        write = _device_span(d, n, "dst", "cudaMemcpyAsync")
        DEVICE.before_read(read)
        DEVICE.before_write(write, dense=True)
        _bytes(write)[:] = _bytes(read)
    _enqueue(s, n)


def memset(ptr: object, value: object, nbytes: object, stream: object = 0) -> None:
    p = to_address(ptr, "ptr")
    n = to_size(nbytes, "nbytes")
    s = to_address(stream, "stream")
    byte = to_int(value, "value")
    if not 0 <= byte <= 255:
        raise ValueError(f"value must be a byte (0..255), got {byte}")
    s = _stream(s, "cudaMemsetAsync")
    if n:
        span = _device_span(p, n, "ptr", "cudaMemsetAsync")
        DEVICE.before_write(span, dense=True)
        span.allocation.fill(span.offset, n, byte)
    _enqueue(s, n)


def pointer_device(ptr: object) -> int | None:
    found = DEVICE.owner(to_address(ptr, "ptr"))
    return None if found is None else found.device


# --- streams and events ----------------------------------------------------------------------


def stream_synchronize(stream: object) -> None:
    _stream(stream, "cudaStreamSynchronize")  # work is done when enqueued: nothing to wait for


class Stream(Destroyable):
    """A simulated stream; non-blocking with respect to the default stream."""

    _KIND = _NAME = "stream"

    def __init__(self, non_blocking: bool = True) -> None:
        _check_devices("cudaStreamCreateWithFlags")
        super().__init__()
        DEVICE.streams[self._number] = StreamState(blocking=not non_blocking)

    @property
    def handle(self) -> int:
        return self._alive()

    def synchronize(self) -> None:
        stream_synchronize(self._alive())


class Event(Destroyable):
    """A simulated event; timing events measure modelled milliseconds between records."""

    _KIND = _NAME = "event"

    def __init__(self, timing: bool = True) -> None:
        _check_devices("cudaEventCreateWithFlags")
        super().__init__()
        DEVICE.events[self._number] = EventState(timing=bool(timing))

    def _live(self) -> EventState:
        return DEVICE.events[self._alive()]

    @property
    def handle(self) -> int:
        return self._alive()

    def record(self, stream: object = 0) -> None:
        state = self._live()
        handle = _stream(stream, "cudaEventRecord")
        state.recorded_ms = DEVICE.streams[handle].clock_ms

    def synchronize(self) -> None:
        self._live()

    def query(self) -> bool:
        self._live()
        return True  # the simulated device finishes work when it is enqueued

    def elapsed_ms(self, end: Event) -> float:
        if end is None:
            raise TypeError("Argument 'end' must not be None")
        start, stop = self._live(), end._live()
        if not (start.timing and stop.timing) or None in (start.recorded_ms, stop.recorded_ms):
            raise cuda_error(_INVALID_RESOURCE_HANDLE, "cudaEventElapsedTime")
        return float(np.float32(stop.recorded_ms - start.recorded_ms))  # type: ignore[operator]


def stream_wait_event(stream: object, event: Event) -> None:
    if event is None:
        raise TypeError("Argument 'event' must not be None")
    state = event._live()
    handle = _stream(stream, "cudaStreamWaitEvent")
    if state.recorded_ms is not None:
        clock = DEVICE.streams[handle]
        clock.clock_ms = max(clock.clock_ms, state.recorded_ms)
