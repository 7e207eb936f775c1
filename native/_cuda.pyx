# cython: language_level=3
"""Thin binding of the CUDA runtime: devices, memory, copies, streams and events.

Faithful to C: device pointers, streams and events travel as Python ints, every status is
checked and a failure raises a ucudnn.errors.CudaError subclass naming the call. The GIL is
released around calls that may wait on the device or initialise the driver.
"""

import uuid

from cpython.buffer cimport (
    PyBUF_C_CONTIGUOUS,
    PyBUF_WRITABLE,
    PyBuffer_Release,
    PyObject_GetBuffer,
)
from libc.stdint cimport uintptr_t

from convert cimport to_address, to_int, to_size

cimport cuda_runtime as rt

from ucudnn.errors import NoDeviceError, cuda_error_class, no_device_error


# --- status checking -------------------------------------------------------------------------

cdef object _error(rt.cudaError_t err, str call):
    # The runtime also records non-sticky errors as the thread's last error; clear it so a
    # later, unrelated call does not report this one again.
    rt.cudaGetLastError()
    code = <int>err
    name, description = rt.cudaGetErrorName(err).decode(), rt.cudaGetErrorString(err).decode()
    error_class = cuda_error_class(code)
    if error_class is NoDeviceError:
        # The versions tell "no driver", "a driver too old" and "no device" apart.
        return no_device_error(
            code, name, call, description,
            _unchecked_driver_version(), _unchecked_runtime_version(),
        )
    return error_class(code, name, call, description)


cdef int _unchecked_driver_version() noexcept:
    # Unchecked: called while building an error. 0 when no driver can be loaded.
    cdef int version = 0
    rt.cudaDriverGetVersion(&version)
    return version


cdef int _unchecked_runtime_version() noexcept:
    cdef int version = 0
    rt.cudaRuntimeGetVersion(&version)
    return version


cdef inline int check(rt.cudaError_t err, str call) except -1:
    if err != rt.cudaSuccess:
        raise _error(err, call)
    return 0


# --- argument conversion ---------------------------------------------------------------------

cdef inline rt.cudaStream_t _stream(object stream) except? NULL:
    return <rt.cudaStream_t>to_address(stream, "stream")


cdef int _host_buffer(object obj, Py_buffer* view, bint writable, str what) except -1:
    flags = PyBUF_C_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0)
    try:
        PyObject_GetBuffer(obj, view, flags)
    except (BufferError, ValueError) as exc:  # numpy raises ValueError, others BufferError
        kind = "writable, C-contiguous" if writable else "C-contiguous"
        raise ValueError(f"{what} must be a {kind} buffer: {exc}") from None
    return 0


# --- versions and devices --------------------------------------------------------------------

def runtime_version():
    """cudaRuntimeGetVersion, e.g. 13000 for CUDA 13.0; needs no driver.

    Raises:
        CudaError: the runtime could not report its version.
    """
    cdef int version = 0
    check(rt.cudaRuntimeGetVersion(&version), "cudaRuntimeGetVersion")
    return version


def driver_version():
    """cudaDriverGetVersion: the CUDA version the driver supports, 0 when no driver is loaded.

    Raises:
        CudaError: the runtime could not ask the driver.
    """
    cdef int version = 0
    check(rt.cudaDriverGetVersion(&version), "cudaDriverGetVersion")
    return version


def device_count():
    """Number of visible CUDA devices (cudaGetDeviceCount).

    Raises:
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
    """
    cdef int count = 0
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaGetDeviceCount(&count)
    check(err, "cudaGetDeviceCount")
    return count


def get_device():
    """The current device's ordinal (cudaGetDevice).

    Raises:
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
    """
    cdef int device = 0
    check(rt.cudaGetDevice(&device), "cudaGetDevice")
    return device


def set_device(int device):
    """Make `device` the current device of this thread (cudaSetDevice).

    Raises:
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
        CudaError: `device` is not a visible device's ordinal (cudaErrorInvalidDevice).
    """
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaSetDevice(device)
    check(err, "cudaSetDevice")


def device_properties(int device):
    """Name, compute capability, memory, SM count, UUID and PCI bus id of one device.

    Raises:
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
        CudaError: `device` is not a visible device's ordinal (cudaErrorInvalidDevice).
    """
    cdef rt.cudaDeviceProp prop
    cdef char bus_id[64]
    check(rt.cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties")
    check(rt.cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device), "cudaDeviceGetPCIBusId")
    return {
        "name": prop.name.decode(errors="replace"),
        "major": prop.major,
        "minor": prop.minor,
        "total_memory": prop.totalGlobalMem,
        "multiprocessor_count": prop.multiProcessorCount,
        # Spelled as nvidia-smi and CUDA_VISIBLE_DEVICES spell it.
        "uuid": f"GPU-{uuid.UUID(bytes=prop.uuid.bytes[:16])}",
        "pci_bus_id": bus_id.decode(),
    }


def mem_get_info():
    """(free, total) bytes of the current device (cudaMemGetInfo).

    Raises:
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
    """
    cdef size_t free_bytes = 0, total_bytes = 0
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaMemGetInfo(&free_bytes, &total_bytes)
    check(err, "cudaMemGetInfo")
    return free_bytes, total_bytes


def device_synchronize():
    """Wait until all work on the current device is done (cudaDeviceSynchronize).

    Raises:
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
        CudaError: work enqueued earlier failed (asynchronous errors surface here).
    """
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaDeviceSynchronize()
    check(err, "cudaDeviceSynchronize")


# --- memory ----------------------------------------------------------------------------------

cdef void* _malloc(size_t nbytes) except? NULL:
    cdef void* ptr = NULL
    cdef rt.cudaError_t err
    if nbytes == 0:
        return NULL
    with nogil:
        err = rt.cudaMalloc(&ptr, nbytes)
    if err != rt.cudaSuccess:
        exc = _error(err, "cudaMalloc")
        exc.add_note(f"requested {nbytes} bytes")
        raise exc
    return ptr


cdef int _free(void* ptr) except -1:
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaFree(ptr)
    return check(err, "cudaFree")


def free(ptr):
    """cudaFree; 0 is a no-op that needs no device."""
    cdef void* p = <void*>to_address(ptr, "ptr")
    if p != NULL:
        _free(p)


cdef class DeviceBuffer:
    """Device memory owned by this object: freed by release() or when it is garbage.

    A zero-byte buffer allocates nothing: its ptr is 0 and its device None.

    Raises:
        TypeError, ValueError: nbytes is not an int, or is negative.
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
        CudaOutOfMemoryError: the device has not that much memory free.
    """

    cdef void* _ptr
    cdef size_t _nbytes
    cdef object _device

    def __cinit__(self, nbytes):
        cdef size_t n = to_size(nbytes, "nbytes")
        if n:
            self._device = get_device()
            self._ptr = _malloc(n)
        self._nbytes = n

    def __dealloc__(self):
        # Exceptions cannot leave __dealloc__; release() is the way to see a failed free.
        if self._ptr != NULL:
            with nogil:
                rt.cudaFree(self._ptr)

    @property
    def ptr(self):
        return <uintptr_t>self._ptr

    @property
    def nbytes(self):
        return self._nbytes

    @property
    def device(self):
        """Ordinal of the device the memory lives on, None when nothing is allocated."""
        return self._device

    def release(self):
        """Free the memory now; later calls do nothing."""
        cdef void* ptr = self._ptr
        self._ptr = NULL
        self._nbytes = 0
        if ptr != NULL:
            _free(ptr)

    def __repr__(self):
        return f"DeviceBuffer(ptr={self.ptr:#x}, nbytes={self._nbytes}, device={self._device})"


cdef int _copy(uintptr_t dst, const void* src, size_t nbytes, rt.cudaMemcpyKind kind,
               rt.cudaStream_t stream) except -1:
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaMemcpyAsync(<void*>dst, src, nbytes, kind, stream)
    return check(err, "cudaMemcpyAsync")


def memcpy_htod(dst, src, nbytes, stream=0):
    """Enqueue a copy of nbytes from a C-contiguous host buffer to device address dst.

    A pageable source has been staged when this returns; a pinned one is read later, so it
    must stay alive and unchanged until the stream reaches the copy.

    Raises:
        TypeError, ValueError: an address, size or stream is not a non-negative int, or a host
            buffer is not C-contiguous (writable, for the destination) or shorter than nbytes.
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
        CudaError: an address is not device memory of that extent, or the stream is invalid.
    """
    cdef uintptr_t d = to_address(dst, "dst")
    cdef size_t n = to_size(nbytes, "nbytes")
    cdef rt.cudaStream_t s = _stream(stream)
    cdef Py_buffer view
    _host_buffer(src, &view, False, "src")
    try:
        if n > <size_t>view.len:
            raise ValueError(f"nbytes={n} exceeds the {view.len} bytes of the host buffer")
        _copy(d, view.buf, n, rt.cudaMemcpyHostToDevice, s)
    finally:
        PyBuffer_Release(&view)


def memcpy_dtoh(dst, src, nbytes, stream=0):
    """Enqueue a copy of nbytes from device address src into a writable C-contiguous host buffer.

    The host buffer must stay alive and unread until the stream is synchronised.

    Raises:
        TypeError, ValueError: an address, size or stream is not a non-negative int, or a host
            buffer is not C-contiguous (writable, for the destination) or shorter than nbytes.
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
        CudaError: an address is not device memory of that extent, or the stream is invalid.
    """
    cdef uintptr_t s_ptr = to_address(src, "src")
    cdef size_t n = to_size(nbytes, "nbytes")
    cdef rt.cudaStream_t s = _stream(stream)
    cdef Py_buffer view
    _host_buffer(dst, &view, True, "dst")
    try:
        if n > <size_t>view.len:
            raise ValueError(f"nbytes={n} exceeds the {view.len} bytes of the host buffer")
        _copy(<uintptr_t>view.buf, <const void*>s_ptr, n, rt.cudaMemcpyDeviceToHost, s)
    finally:
        PyBuffer_Release(&view)


def memcpy_dtod(dst, src, nbytes, stream=0):
    """Enqueue a device-to-device copy of nbytes.

    Raises:
        TypeError, ValueError: an address, size or stream is not a non-negative int.
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
        CudaError: an address is not device memory of that extent, or the stream is invalid.
    """
    _copy(to_address(dst, "dst"), <const void*>to_address(src, "src"), to_size(nbytes, "nbytes"),
          rt.cudaMemcpyDeviceToDevice, _stream(stream))


def memset(ptr, value, nbytes, stream=0):
    """Enqueue setting nbytes at device address ptr to the byte value (0..255).

    Raises:
        TypeError, ValueError: an argument is not an int, or value is not a byte.
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
        CudaError: ptr is not device memory of nbytes, or the stream is invalid.
    """
    cdef void* p = <void*>to_address(ptr, "ptr")
    cdef size_t n = to_size(nbytes, "nbytes")
    cdef rt.cudaStream_t s = _stream(stream)
    cdef int byte
    cdef rt.cudaError_t err
    value = to_int(value, "value")
    if not 0 <= value <= 255:
        raise ValueError(f"value must be a byte (0..255), got {value}")
    byte = value
    with nogil:
        err = rt.cudaMemsetAsync(p, byte, n, s)
    check(err, "cudaMemsetAsync")


def pointer_device(ptr):
    """Device ordinal that owns address ptr, or None for host or unknown memory."""
    cdef rt.cudaPointerAttributes attributes
    check(rt.cudaPointerGetAttributes(&attributes, <const void*>to_address(ptr, "ptr")),
          "cudaPointerGetAttributes")
    if attributes.type == rt.cudaMemoryTypeDevice or attributes.type == rt.cudaMemoryTypeManaged:
        return attributes.device
    return None


# --- streams and events ----------------------------------------------------------------------

def stream_synchronize(stream):
    """Wait until all work enqueued on the stream (an int handle, 0 = default) is done.

    Raises:
        TypeError, ValueError: stream is not a non-negative int.
        CudaError: the stream is invalid, or work enqueued on it failed.
    """
    cdef rt.cudaStream_t s = _stream(stream)
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaStreamSynchronize(s)
    check(err, "cudaStreamSynchronize")


cdef class Stream:
    """A CUDA stream owned by this object; non-blocking with respect to the default stream.

    Its methods raise ValueError once it was destroyed.

    Raises:
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
    """

    cdef rt.cudaStream_t _stream

    def __cinit__(self, bint non_blocking=True):
        cdef unsigned int flags = rt.cudaStreamNonBlocking if non_blocking else rt.cudaStreamDefault
        cdef rt.cudaError_t err
        with nogil:
            err = rt.cudaStreamCreateWithFlags(&self._stream, flags)
        check(err, "cudaStreamCreateWithFlags")

    def __dealloc__(self):
        if self._stream != NULL:
            rt.cudaStreamDestroy(self._stream)

    cdef rt.cudaStream_t _live(self) except NULL:
        if self._stream == NULL:
            raise ValueError("the stream was destroyed")
        return self._stream

    @property
    def handle(self):
        """The cudaStream_t as an int, for functions that take a stream."""
        return <uintptr_t>self._live()

    def synchronize(self):
        cdef rt.cudaStream_t s = self._live()
        cdef rt.cudaError_t err
        with nogil:
            err = rt.cudaStreamSynchronize(s)
        check(err, "cudaStreamSynchronize")

    def destroy(self):
        """Destroy the stream now; pending work still completes. Later calls do nothing."""
        cdef rt.cudaStream_t s = self._stream
        self._stream = NULL
        if s != NULL:
            check(rt.cudaStreamDestroy(s), "cudaStreamDestroy")


cdef class Event:
    """A CUDA event owned by this object; timing events measure elapsed_ms between records.

    Its methods raise ValueError once it was destroyed, and CudaError when the runtime
    refuses (elapsed_ms between events that are not both recorded timing events).

    Raises:
        NoDeviceError: there is no NVIDIA driver, the driver is older than the runtime, or no
            device is visible (its message says which).
    """

    cdef rt.cudaEvent_t _event

    def __cinit__(self, bint timing=True):
        cdef unsigned int flags = rt.cudaEventDefault if timing else rt.cudaEventDisableTiming
        check(rt.cudaEventCreateWithFlags(&self._event, flags), "cudaEventCreateWithFlags")

    def __dealloc__(self):
        if self._event != NULL:
            rt.cudaEventDestroy(self._event)

    cdef rt.cudaEvent_t _live(self) except NULL:
        if self._event == NULL:
            raise ValueError("the event was destroyed")
        return self._event

    @property
    def handle(self):
        return <uintptr_t>self._live()

    def record(self, stream=0):
        check(rt.cudaEventRecord(self._live(), _stream(stream)), "cudaEventRecord")

    def synchronize(self):
        cdef rt.cudaEvent_t e = self._live()
        cdef rt.cudaError_t err
        with nogil:
            err = rt.cudaEventSynchronize(e)
        check(err, "cudaEventSynchronize")

    def query(self):
        """True when the work before the last record has completed."""
        cdef rt.cudaError_t err = rt.cudaEventQuery(self._live())
        if err == rt.cudaErrorNotReady:
            rt.cudaGetLastError()  # not an error: clear it as _error would
            return False
        check(err, "cudaEventQuery")
        return True

    def elapsed_ms(self, Event end not None):
        """Milliseconds from this event's record to end's record (both must have completed)."""
        cdef float ms = 0
        check(rt.cudaEventElapsedTime(&ms, self._live(), end._live()), "cudaEventElapsedTime")
        return ms

    def destroy(self):
        """Destroy the event now; later calls do nothing."""
        cdef rt.cudaEvent_t e = self._event
        self._event = NULL
        if e != NULL:
            check(rt.cudaEventDestroy(e), "cudaEventDestroy")


def stream_wait_event(stream, Event event not None):
    """Make later work on stream (an int handle, 0 = default) wait for the event's last record.

    The host does not wait.
    """
    check(rt.cudaStreamWaitEvent(_stream(stream), event._live(), 0), "cudaStreamWaitEvent")
