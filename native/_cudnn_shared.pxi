# What every call shares: status checking, versions, argument conversion, the handle.

cimport cudnn as c
from libc.stdint cimport uintptr_t

from convert cimport to_address, to_int

from cuda_runtime cimport cudaStream_t

from ucudnn.errors import cudnn_error_class


# --- status checking -------------------------------------------------------------------------

cdef object _error(c.cudnnStatus_t status, str call):
    cdef char detail[1024]
    detail[0] = 0
    c.cudnnGetLastErrorString(detail, sizeof(detail))
    code = <int>status
    return cudnn_error_class(code)(
        code, c.cudnnGetErrorString(status).decode(), call, detail.decode(errors="replace")
    )


cdef inline int check(c.cudnnStatus_t status, str call) except -1:
    if status != c.CUDNN_STATUS_SUCCESS:
        raise _error(status, call)
    return 0


def status_name(int status):
    """cuDNN's name for a status code, e.g. 2000 -> 'CUDNN_STATUS_BAD_PARAM'."""
    return c.cudnnGetErrorString(<c.cudnnStatus_t>status).decode()


# --- versions --------------------------------------------------------------------------------

def version():
    """cudnnGetVersion of the loaded library, e.g. 92800 for 9.28.0; raises nothing."""
    return c.cudnnGetVersion()


def build_version():
    """CUDNN_VERSION of the headers this module was compiled against."""
    return c.CUDNN_VERSION


def cudart_version():
    """The CUDA runtime version the loaded cuDNN was built with."""
    return c.cudnnGetCudartVersion()


# --- argument conversion ---------------------------------------------------------------------

cdef int _algorithm(object algo, str kernel) except -1:
    value = to_int(algo, "algo")
    if not 0 <= value < len(ALGORITHMS[kernel]):
        raise ValueError(
            f"unknown {kernel} algorithm {value}; expected 0..{len(ALGORITHMS[kernel]) - 1}"
        )
    return value


cdef int _ints(object values, int* out, int max_len, str what) except -1:
    """Copy a sequence of 1..max_len ints into out; returns its length."""
    try:
        values = tuple(values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of ints, got {values!r}") from None
    if not 0 < len(values) <= max_len:
        raise ValueError(f"{what} must have 1 to {max_len} entries, got {len(values)}")
    for i, value in enumerate(values):
        value = to_int(value, f"{what}[{i}]")
        if not -2**31 <= value < 2**31:
            raise ValueError(f"{what}[{i}] = {value} does not fit in a C int")
        out[i] = value
    return len(values)


cdef tuple _tuple(const int* values, int count):
    return tuple([values[i] for i in range(count)])


# --- handle ----------------------------------------------------------------------------------

cdef class Handle:
    """A cuDNN handle (cudnnCreate); bound to the current device, destroyed when garbage.

    Every `ucudnn.Handle` has one, as its `cudnn`, enqueuing on that Handle's stream. Methods
    raise ValueError once it was destroyed.

    Raises:
        CudnnNotInitializedError: cuDNN could not start (no usable GPU or driver).
        CudnnError: cudnnCreate failed otherwise.
    """

    cdef c.cudnnHandle_t _handle

    def __cinit__(self):
        cdef c.cudnnHandle_t handle = NULL
        cdef c.cudnnStatus_t status
        with nogil:
            status = c.cudnnCreate(&handle)
        check(status, "cudnnCreate")
        self._handle = handle

    def __dealloc__(self):
        if self._handle != NULL:
            with nogil:
                c.cudnnDestroy(self._handle)

    cdef c.cudnnHandle_t _live(self) except NULL:
        if self._handle == NULL:
            raise ValueError("the cuDNN handle was destroyed")
        return self._handle

    @property
    def ptr(self):
        return <uintptr_t>self._live()

    @property
    def stream(self):
        """The stream cuDNN calls on this handle are enqueued on (an int, 0 = default)."""
        cdef cudaStream_t stream = NULL
        check(c.cudnnGetStream(self._live(), &stream), "cudnnGetStream")
        return <uintptr_t>stream

    def set_stream(self, stream):
        check(c.cudnnSetStream(self._live(), <cudaStream_t>to_address(stream, "stream")),
              "cudnnSetStream")

    def destroy(self):
        """Destroy the handle now; later calls do nothing."""
        cdef c.cudnnHandle_t handle = self._handle
        cdef c.cudnnStatus_t status
        self._handle = NULL
        if handle != NULL:
            with nogil:
                status = c.cudnnDestroy(handle)
            check(status, "cudnnDestroy")


# --- what a call on the device shares --------------------------------------------------------

ctypedef union _Scalar:
    float f
    double d


# A call's handle, and its alpha and beta as cuDNN reads them: as double for double outputs and
# as float for all others (pass &call.alpha: a union's members share its address).
cdef struct _Call:
    c.cudnnHandle_t handle
    _Scalar alpha
    _Scalar beta


cdef int _start(_Call* call, Handle handle, double alpha, double beta,
                c.cudnnDataType_t output) except -1:
    if output == c.CUDNN_DATA_DOUBLE:
        call.alpha.d, call.beta.d = alpha, beta
    else:
        call.alpha.f, call.beta.f = <float>alpha, <float>beta
    call.handle = handle._live()
    return 0
