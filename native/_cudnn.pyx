# cython: language_level=3
"""Thin binding of cuDNN 9: handles, descriptors and the legacy convolution API.

Faithful to C: functions keep cuDNN's argument order, device pointers and streams travel as
Python ints, dtypes/layouts/modes are strings, and every status is checked; a failure raises a
ucudnn.errors.CudnnError subclass naming the call, the status and cuDNN's last error message.
Descriptor objects own their C handles and destroy them when they are garbage. alpha and beta
are passed as double when the output tensor is float64 and as float otherwise (cuDNN's rule).
"""

import collections

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport uintptr_t

from convert cimport to_address, to_int, to_size

from cuda_runtime cimport cudaStream_t
from cudnn cimport (
    CUDNN_ACTIVATION_CLIPPED_RELU,
    CUDNN_ACTIVATION_ELU,
    CUDNN_ACTIVATION_RELU,
    CUDNN_ACTIVATION_SIGMOID,
    CUDNN_ACTIVATION_TANH,
    CUDNN_CONVOLUTION,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
    CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
    CUDNN_CROSS_CORRELATION,
    CUDNN_DATA_BFLOAT16,
    CUDNN_DATA_DOUBLE,
    CUDNN_DATA_FLOAT,
    CUDNN_DATA_HALF,
    CUDNN_DEFAULT_MATH,
    CUDNN_DETERMINISTIC,
    CUDNN_DIM_MAX,
    CUDNN_FMA_MATH,
    CUDNN_NOT_PROPAGATE_NAN,
    CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
    CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
    CUDNN_POOLING_MAX,
    CUDNN_POOLING_MAX_DETERMINISTIC,
    CUDNN_SOFTMAX_ACCURATE,
    CUDNN_SOFTMAX_FAST,
    CUDNN_SOFTMAX_LOG,
    CUDNN_SOFTMAX_MODE_CHANNEL,
    CUDNN_SOFTMAX_MODE_INSTANCE,
    CUDNN_STATUS_SUCCESS,
    CUDNN_TENSOR_NCHW,
    CUDNN_TENSOR_NHWC,
    CUDNN_TENSOR_OP_MATH,
    CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
    CUDNN_VERSION,
    cudnnActivationBackward,
    cudnnActivationDescriptor_t,
    cudnnActivationForward,
    cudnnActivationMode_t,
    cudnnAddTensor,
    cudnnConvolutionBackwardBias,
    cudnnConvolutionBackwardData,
    cudnnConvolutionBackwardFilter,
    cudnnConvolutionBwdDataAlgo_t,
    cudnnConvolutionBwdDataAlgoPerf_t,
    cudnnConvolutionBwdFilterAlgo_t,
    cudnnConvolutionBwdFilterAlgoPerf_t,
    cudnnConvolutionDescriptor_t,
    cudnnConvolutionForward,
    cudnnConvolutionFwdAlgo_t,
    cudnnConvolutionFwdAlgoPerf_t,
    cudnnConvolutionMode_t,
    cudnnCreate,
    cudnnCreateActivationDescriptor,
    cudnnCreateConvolutionDescriptor,
    cudnnCreateFilterDescriptor,
    cudnnCreatePoolingDescriptor,
    cudnnCreateTensorDescriptor,
    cudnnDataType_t,
    cudnnDestroy,
    cudnnDestroyActivationDescriptor,
    cudnnDestroyConvolutionDescriptor,
    cudnnDestroyFilterDescriptor,
    cudnnDestroyPoolingDescriptor,
    cudnnDestroyTensorDescriptor,
    cudnnFilterDescriptor_t,
    cudnnFindConvolutionBackwardDataAlgorithmEx,
    cudnnFindConvolutionBackwardFilterAlgorithmEx,
    cudnnFindConvolutionForwardAlgorithmEx,
    cudnnGetActivationDescriptor,
    cudnnGetConvolutionBackwardDataAlgorithm_v7,
    cudnnGetConvolutionBackwardDataAlgorithmMaxCount,
    cudnnGetConvolutionBackwardDataWorkspaceSize,
    cudnnGetConvolutionBackwardFilterAlgorithm_v7,
    cudnnGetConvolutionBackwardFilterAlgorithmMaxCount,
    cudnnGetConvolutionBackwardFilterWorkspaceSize,
    cudnnGetConvolutionForwardAlgorithm_v7,
    cudnnGetConvolutionForwardAlgorithmMaxCount,
    cudnnGetConvolutionForwardWorkspaceSize,
    cudnnGetConvolutionGroupCount,
    cudnnGetConvolutionMathType,
    cudnnGetConvolutionNdDescriptor,
    cudnnGetConvolutionNdForwardOutputDim,
    cudnnGetCudartVersion,
    cudnnGetErrorString,
    cudnnGetFilterNdDescriptor,
    cudnnGetLastErrorString,
    cudnnGetPoolingNdDescriptor,
    cudnnGetPoolingNdForwardOutputDim,
    cudnnGetStream,
    cudnnGetTensorNdDescriptor,
    cudnnGetVersion,
    cudnnHandle_t,
    cudnnMathType_t,
    cudnnNanPropagation_t,
    cudnnPoolingBackward,
    cudnnPoolingDescriptor_t,
    cudnnPoolingForward,
    cudnnPoolingMode_t,
    cudnnScaleTensor,
    cudnnSetActivationDescriptor,
    cudnnSetConvolutionGroupCount,
    cudnnSetConvolutionMathType,
    cudnnSetConvolutionNdDescriptor,
    cudnnSetFilterNdDescriptor,
    cudnnSetPoolingNdDescriptor,
    cudnnSetStream,
    cudnnSetTensorNdDescriptor,
    cudnnSoftmaxAlgorithm_t,
    cudnnSoftmaxBackward,
    cudnnSoftmaxForward,
    cudnnSoftmaxMode_t,
    cudnnStatus_t,
    cudnnTensorDescriptor_t,
    cudnnTensorFormat_t,
)

from ucudnn.errors import cudnn_error_class


# --- status checking -------------------------------------------------------------------------

cdef object _error(cudnnStatus_t status, str call):
    cdef char detail[1024]
    detail[0] = 0
    cudnnGetLastErrorString(detail, sizeof(detail))
    code = <int>status
    return cudnn_error_class(code)(
        code, cudnnGetErrorString(status).decode(), call, detail.decode(errors="replace")
    )


cdef inline int check(cudnnStatus_t status, str call) except -1:
    if status != CUDNN_STATUS_SUCCESS:
        raise _error(status, call)
    return 0


def status_name(int status):
    """cuDNN's name for a status code, e.g. 2000 -> 'CUDNN_STATUS_BAD_PARAM'."""
    return cudnnGetErrorString(<cudnnStatus_t>status).decode()


# --- versions --------------------------------------------------------------------------------

def version():
    """cudnnGetVersion of the loaded library, e.g. 92800 for 9.28.0."""
    return cudnnGetVersion()


def build_version():
    """CUDNN_VERSION of the headers this module was compiled against."""
    return CUDNN_VERSION


def cudart_version():
    """The CUDA runtime version the loaded cuDNN was built with."""
    return cudnnGetCudartVersion()


# --- names of enum values --------------------------------------------------------------------

DTYPES = {
    "float32": CUDNN_DATA_FLOAT,
    "float16": CUDNN_DATA_HALF,
    "bfloat16": CUDNN_DATA_BFLOAT16,
    "float64": CUDNN_DATA_DOUBLE,
}
MATH_TYPES = {
    "default": CUDNN_DEFAULT_MATH,
    "tensor_op": CUDNN_TENSOR_OP_MATH,
    "tensor_op_allow_conversion": CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
    "fma": CUDNN_FMA_MATH,
}
CONVOLUTION_MODES = {"cross_correlation": CUDNN_CROSS_CORRELATION, "convolution": CUDNN_CONVOLUTION}
# Filter layouts by name: cuDNN's format and the rank it implies (K, C/groups, *spatial).
FILTER_LAYOUTS = {
    "NCHW": (CUDNN_TENSOR_NCHW, 4),
    "NHWC": (CUDNN_TENSOR_NHWC, 4),
    "NCDHW": (CUDNN_TENSOR_NCHW, 5),
    "NDHWC": (CUDNN_TENSOR_NHWC, 5),
}
ACTIVATIONS = {
    "sigmoid": CUDNN_ACTIVATION_SIGMOID,
    "relu": CUDNN_ACTIVATION_RELU,
    "tanh": CUDNN_ACTIVATION_TANH,
    "clipped_relu": CUDNN_ACTIVATION_CLIPPED_RELU,
    "elu": CUDNN_ACTIVATION_ELU,
}
POOLING_MODES = {
    "max": CUDNN_POOLING_MAX,
    "max_deterministic": CUDNN_POOLING_MAX_DETERMINISTIC,
    "average": CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
    "average_exclude_padding": CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
}
SOFTMAX_ALGORITHMS = {
    "fast": CUDNN_SOFTMAX_FAST,
    "accurate": CUDNN_SOFTMAX_ACCURATE,
    "log": CUDNN_SOFTMAX_LOG,
}
SOFTMAX_MODES = {"instance": CUDNN_SOFTMAX_MODE_INSTANCE, "channel": CUDNN_SOFTMAX_MODE_CHANNEL}

# Algorithm names by enum value (cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t).
ALGORITHMS = {
    "forward": (
        "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
        "fft", "fft_tiling", "winograd", "winograd_nonfused",
    ),
    "backward_data": (
        "algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused",
    ),
    "backward_filter": (
        "algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling",
    ),
}
if [len(names) for names in ALGORITHMS.values()] != [
    CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
]:
    raise ImportError("ALGORITHMS does not name exactly the algorithms in these cuDNN headers")

cdef dict _DTYPE_NAMES = {value: name for name, value in DTYPES.items()}
cdef dict _MATH_TYPE_NAMES = {value: name for name, value in MATH_TYPES.items()}
cdef dict _CONVOLUTION_MODE_NAMES = {value: name for name, value in CONVOLUTION_MODES.items()}
cdef dict _ACTIVATION_NAMES = {value: name for name, value in ACTIVATIONS.items()}
cdef dict _POOLING_MODE_NAMES = {value: name for name, value in POOLING_MODES.items()}


cdef int _lookup(dict table, object name, str what) except -1:
    try:
        return table[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown {what} {name!r}; expected one of {', '.join(map(repr, table))}"
        ) from None


cdef int _algorithm(object algo, str kernel) except -1:
    value = to_int(algo, "algo")
    if not 0 <= value < len(ALGORITHMS[kernel]):
        raise ValueError(
            f"unknown {kernel} algorithm {value}; expected 0..{len(ALGORITHMS[kernel]) - 1}"
        )
    return value


# --- argument conversion ---------------------------------------------------------------------

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


ctypedef union _Scalar:
    float f
    double d


cdef inline const void* _scalar(_Scalar* store, double value, cudnnDataType_t output) noexcept:
    # cuDNN reads alpha/beta as double for double outputs and as float for all others.
    if output == CUDNN_DATA_DOUBLE:
        store.d = value
        return &store.d
    store.f = <float>value
    return &store.f


# --- handle ----------------------------------------------------------------------------------

cdef class Handle:
    """A cuDNN handle (cudnnCreate); bound to the current device, destroyed when garbage."""

    cdef cudnnHandle_t _handle

    def __cinit__(self):
        cdef cudnnHandle_t handle = NULL
        cdef cudnnStatus_t status
        with nogil:
            status = cudnnCreate(&handle)
        check(status, "cudnnCreate")
        self._handle = handle

    def __dealloc__(self):
        if self._handle != NULL:
            with nogil:
                cudnnDestroy(self._handle)

    cdef cudnnHandle_t _live(self) except NULL:
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
        check(cudnnGetStream(self._live(), &stream), "cudnnGetStream")
        return <uintptr_t>stream

    def set_stream(self, stream):
        check(cudnnSetStream(self._live(), <cudaStream_t>to_address(stream, "stream")),
              "cudnnSetStream")

    def destroy(self):
        """Destroy the handle now; later calls do nothing."""
        cdef cudnnHandle_t handle = self._handle
        cdef cudnnStatus_t status
        self._handle = NULL
        if handle != NULL:
            with nogil:
                status = cudnnDestroy(handle)
            check(status, "cudnnDestroy")


# --- descriptors -----------------------------------------------------------------------------

cdef class TensorDescriptor:
    """An Nd tensor: dtype name, logical dims (N, C, *spatial) and element strides."""

    cdef cudnnTensorDescriptor_t _desc
    cdef cudnnDataType_t _dtype
    cdef int _rank

    def __cinit__(self, dtype, dims, strides):
        cdef int c_dims[CUDNN_DIM_MAX]
        cdef int c_strides[CUDNN_DIM_MAX]
        self._dtype = <cudnnDataType_t>_lookup(DTYPES, dtype, "dtype")
        self._rank = _ints(dims, c_dims, CUDNN_DIM_MAX, "dims")
        if _ints(strides, c_strides, CUDNN_DIM_MAX, "strides") != self._rank:
            raise ValueError(f"dims {tuple(dims)} and strides {tuple(strides)} differ in length")
        check(cudnnCreateTensorDescriptor(&self._desc), "cudnnCreateTensorDescriptor")
        check(cudnnSetTensorNdDescriptor(self._desc, self._dtype, self._rank, c_dims, c_strides),
              "cudnnSetTensorNdDescriptor")

    def __dealloc__(self):
        if self._desc != NULL:
            cudnnDestroyTensorDescriptor(self._desc)

    cdef tuple _get(self):
        cdef cudnnDataType_t dtype
        cdef int rank = 0
        cdef int dims[CUDNN_DIM_MAX]
        cdef int strides[CUDNN_DIM_MAX]
        check(cudnnGetTensorNdDescriptor(self._desc, CUDNN_DIM_MAX, &dtype, &rank, dims, strides),
              "cudnnGetTensorNdDescriptor")
        return _DTYPE_NAMES[dtype], _tuple(dims, rank), _tuple(strides, rank)

    @property
    def dtype(self):
        return self._get()[0]

    @property
    def dims(self):
        return self._get()[1]

    @property
    def strides(self):
        return self._get()[2]

    @property
    def ptr(self):
        return <uintptr_t>self._desc

    def __repr__(self):
        dtype, dims, strides = self._get()
        return f"TensorDescriptor({dtype!r}, dims={dims}, strides={strides})"


cdef class FilterDescriptor:
    """A filter: dtype name, layout name and logical dims (K, C/groups, *spatial)."""

    cdef cudnnFilterDescriptor_t _desc
    cdef cudnnDataType_t _dtype

    def __cinit__(self, dtype, layout, dims):
        cdef int c_dims[CUDNN_DIM_MAX]
        self._dtype = <cudnnDataType_t>_lookup(DTYPES, dtype, "dtype")
        if layout not in FILTER_LAYOUTS:
            raise ValueError(
                f"unknown layout {layout!r}; expected one of {', '.join(FILTER_LAYOUTS)}"
            )
        cdef int fmt, rank
        fmt, rank = FILTER_LAYOUTS[layout]
        if _ints(dims, c_dims, CUDNN_DIM_MAX, "dims") != rank:
            raise ValueError(f"layout {layout} needs {rank} dims, got {tuple(dims)}")
        check(cudnnCreateFilterDescriptor(&self._desc), "cudnnCreateFilterDescriptor")
        check(cudnnSetFilterNdDescriptor(self._desc, self._dtype, <cudnnTensorFormat_t>fmt,
                                         rank, c_dims),
              "cudnnSetFilterNdDescriptor")

    def __dealloc__(self):
        if self._desc != NULL:
            cudnnDestroyFilterDescriptor(self._desc)

    cdef tuple _get(self):
        cdef cudnnDataType_t dtype
        cdef cudnnTensorFormat_t fmt
        cdef int rank = 0
        cdef int dims[CUDNN_DIM_MAX]
        check(cudnnGetFilterNdDescriptor(self._desc, CUDNN_DIM_MAX, &dtype, &fmt, &rank, dims),
              "cudnnGetFilterNdDescriptor")
        layout = next(name for name, spec in FILTER_LAYOUTS.items() if spec == (fmt, rank))
        return _DTYPE_NAMES[dtype], layout, _tuple(dims, rank)

    @property
    def dtype(self):
        return self._get()[0]

    @property
    def layout(self):
        return self._get()[1]

    @property
    def dims(self):
        return self._get()[2]

    @property
    def ptr(self):
        return <uintptr_t>self._desc

    def __repr__(self):
        dtype, layout, dims = self._get()
        return f"FilterDescriptor({dtype!r}, {layout!r}, dims={dims})"


cdef class ConvolutionDescriptor:
    """Padding, stride and dilation per spatial dim, mode, compute dtype, groups, math type."""

    cdef cudnnConvolutionDescriptor_t _desc

    def __cinit__(self, padding, stride, dilation, mode="cross_correlation",
                  compute_dtype="float32", int groups=1, math_type="default"):
        cdef int c_padding[CUDNN_DIM_MAX]
        cdef int c_stride[CUDNN_DIM_MAX]
        cdef int c_dilation[CUDNN_DIM_MAX]
        cdef int max_len = CUDNN_DIM_MAX - 2
        cdef int rank = _ints(padding, c_padding, max_len, "padding")
        if (_ints(stride, c_stride, max_len, "stride") != rank
                or _ints(dilation, c_dilation, max_len, "dilation") != rank):
            raise ValueError(f"padding {tuple(padding)}, stride {tuple(stride)} and dilation "
                             f"{tuple(dilation)} must have one entry per spatial dim each")
        cdef cudnnConvolutionMode_t c_mode = <cudnnConvolutionMode_t>_lookup(
            CONVOLUTION_MODES, mode, "mode")
        cdef cudnnDataType_t c_compute = <cudnnDataType_t>_lookup(
            DTYPES, compute_dtype, "compute_dtype")
        cdef cudnnMathType_t c_math = <cudnnMathType_t>_lookup(MATH_TYPES, math_type, "math_type")
        check(cudnnCreateConvolutionDescriptor(&self._desc), "cudnnCreateConvolutionDescriptor")
        check(cudnnSetConvolutionNdDescriptor(self._desc, rank, c_padding, c_stride, c_dilation,
                                              c_mode, c_compute),
              "cudnnSetConvolutionNdDescriptor")
        check(cudnnSetConvolutionGroupCount(self._desc, groups), "cudnnSetConvolutionGroupCount")
        check(cudnnSetConvolutionMathType(self._desc, c_math), "cudnnSetConvolutionMathType")

    def __dealloc__(self):
        if self._desc != NULL:
            cudnnDestroyConvolutionDescriptor(self._desc)

    cdef tuple _get(self):
        cdef int rank = 0
        cdef int padding[CUDNN_DIM_MAX]
        cdef int stride[CUDNN_DIM_MAX]
        cdef int dilation[CUDNN_DIM_MAX]
        cdef cudnnConvolutionMode_t mode
        cdef cudnnDataType_t compute
        check(cudnnGetConvolutionNdDescriptor(self._desc, CUDNN_DIM_MAX - 2, &rank, padding,
                                              stride, dilation, &mode, &compute),
              "cudnnGetConvolutionNdDescriptor")
        return (_tuple(padding, rank), _tuple(stride, rank), _tuple(dilation, rank),
                _CONVOLUTION_MODE_NAMES[mode], _DTYPE_NAMES[compute])

    @property
    def padding(self):
        return self._get()[0]

    @property
    def stride(self):
        return self._get()[1]

    @property
    def dilation(self):
        return self._get()[2]

    @property
    def mode(self):
        return self._get()[3]

    @property
    def compute_dtype(self):
        return self._get()[4]

    @property
    def groups(self):
        cdef int groups = 0
        check(cudnnGetConvolutionGroupCount(self._desc, &groups), "cudnnGetConvolutionGroupCount")
        return groups

    @property
    def math_type(self):
        cdef cudnnMathType_t math
        check(cudnnGetConvolutionMathType(self._desc, &math), "cudnnGetConvolutionMathType")
        return _MATH_TYPE_NAMES[math]

    def set_math_type(self, math_type):
        """Write a candidate's math type before running it (cuDNN does not do this itself)."""
        check(cudnnSetConvolutionMathType(
                  self._desc, <cudnnMathType_t>_lookup(MATH_TYPES, math_type, "math_type")),
              "cudnnSetConvolutionMathType")

    def output_dims(self, TensorDescriptor x_desc not None, FilterDescriptor w_desc not None):
        """The forward output dims (N, K, *spatial) for input x_desc and filter w_desc."""
        cdef int dims[CUDNN_DIM_MAX]
        check(cudnnGetConvolutionNdForwardOutputDim(self._desc, x_desc._desc, w_desc._desc,
                                                    x_desc._rank, dims),
              "cudnnGetConvolutionNdForwardOutputDim")
        return _tuple(dims, x_desc._rank)

    @property
    def ptr(self):
        return <uintptr_t>self._desc

    def __repr__(self):
        padding, stride, dilation, mode, compute = self._get()
        return (f"ConvolutionDescriptor(padding={padding}, stride={stride}, "
                f"dilation={dilation}, mode={mode!r}, compute_dtype={compute!r}, "
                f"groups={self.groups}, math_type={self.math_type!r})")


cdef class ActivationDescriptor:
    """An activation function; coef is the ceiling of clipped_relu or the alpha of elu."""

    cdef cudnnActivationDescriptor_t _desc

    def __cinit__(self, mode, double coef=0.0):
        cdef cudnnActivationMode_t c_mode = <cudnnActivationMode_t>_lookup(
            ACTIVATIONS, mode, "activation mode")
        check(cudnnCreateActivationDescriptor(&self._desc), "cudnnCreateActivationDescriptor")
        check(cudnnSetActivationDescriptor(self._desc, c_mode, CUDNN_NOT_PROPAGATE_NAN, coef),
              "cudnnSetActivationDescriptor")

    def __dealloc__(self):
        if self._desc != NULL:
            cudnnDestroyActivationDescriptor(self._desc)

    cdef tuple _get(self):
        cdef cudnnActivationMode_t mode
        cdef cudnnNanPropagation_t nan
        cdef double coef = 0
        check(cudnnGetActivationDescriptor(self._desc, &mode, &nan, &coef),
              "cudnnGetActivationDescriptor")
        return _ACTIVATION_NAMES[mode], coef

    @property
    def mode(self):
        return self._get()[0]

    @property
    def coef(self):
        return self._get()[1]

    def __repr__(self):
        mode, coef = self._get()
        return f"ActivationDescriptor({mode!r}, coef={coef})"


cdef class PoolingDescriptor:
    """Pooling over the spatial dims: mode name, window, padding and stride per spatial dim."""

    cdef cudnnPoolingDescriptor_t _desc

    def __cinit__(self, mode, window, padding, stride):
        cdef int c_window[CUDNN_DIM_MAX]
        cdef int c_padding[CUDNN_DIM_MAX]
        cdef int c_stride[CUDNN_DIM_MAX]
        cdef int max_len = CUDNN_DIM_MAX - 2
        cdef cudnnPoolingMode_t c_mode = <cudnnPoolingMode_t>_lookup(
            POOLING_MODES, mode, "pooling mode")
        cdef int rank = _ints(window, c_window, max_len, "window")
        if (_ints(padding, c_padding, max_len, "padding") != rank
                or _ints(stride, c_stride, max_len, "stride") != rank):
            raise ValueError(f"window {tuple(window)}, padding {tuple(padding)} and stride "
                             f"{tuple(stride)} must have one entry per spatial dim each")
        check(cudnnCreatePoolingDescriptor(&self._desc), "cudnnCreatePoolingDescriptor")
        check(cudnnSetPoolingNdDescriptor(self._desc, c_mode, CUDNN_NOT_PROPAGATE_NAN, rank,
                                          c_window, c_padding, c_stride),
              "cudnnSetPoolingNdDescriptor")

    def __dealloc__(self):
        if self._desc != NULL:
            cudnnDestroyPoolingDescriptor(self._desc)

    cdef tuple _get(self):
        cdef cudnnPoolingMode_t mode
        cdef cudnnNanPropagation_t nan
        cdef int rank = 0
        cdef int window[CUDNN_DIM_MAX]
        cdef int padding[CUDNN_DIM_MAX]
        cdef int stride[CUDNN_DIM_MAX]
        check(cudnnGetPoolingNdDescriptor(self._desc, CUDNN_DIM_MAX - 2, &mode, &nan, &rank,
                                          window, padding, stride),
              "cudnnGetPoolingNdDescriptor")
        return (_POOLING_MODE_NAMES[mode], _tuple(window, rank), _tuple(padding, rank),
                _tuple(stride, rank))

    @property
    def mode(self):
        return self._get()[0]

    @property
    def window(self):
        return self._get()[1]

    @property
    def padding(self):
        return self._get()[2]

    @property
    def stride(self):
        return self._get()[3]

    def output_dims(self, TensorDescriptor x_desc not None):
        """The pooled output dims (N, C, *spatial) for input x_desc."""
        cdef int dims[CUDNN_DIM_MAX]
        check(cudnnGetPoolingNdForwardOutputDim(self._desc, x_desc._desc, x_desc._rank, dims),
              "cudnnGetPoolingNdForwardOutputDim")
        return _tuple(dims, x_desc._rank)

    def __repr__(self):
        mode, window, padding, stride = self._get()
        return (f"PoolingDescriptor({mode!r}, window={window}, padding={padding}, "
                f"stride={stride})")


# --- algorithm search ------------------------------------------------------------------------

AlgoPerf = collections.namedtuple(
    "AlgoPerf", "algo status status_name time_ms memory deterministic math_type",
    module=__name__,
)
AlgoPerf.__doc__ = """One row of cuDNN's algorithm list (Find: measured; Get: heuristic).

Rows whose status is not 0 (CUDNN_STATUS_SUCCESS) are algorithms that cannot run this problem.
"""

ctypedef fused _perf_t:
    cudnnConvolutionFwdAlgoPerf_t
    cudnnConvolutionBwdDataAlgoPerf_t
    cudnnConvolutionBwdFilterAlgoPerf_t


cdef list _perf_list(_perf_t* perf, int count):
    return [
        AlgoPerf(<int>perf[i].algo, <int>perf[i].status,
                 cudnnGetErrorString(perf[i].status).decode(), perf[i].time, perf[i].memory,
                 perf[i].determinism == CUDNN_DETERMINISTIC,
                 _MATH_TYPE_NAMES.get(<int>perf[i].mathType, str(<int>perf[i].mathType)))
        for i in range(count)
    ]


cdef void* _perf_buffer(int requested, size_t item_size) except NULL:
    if requested < 1:
        raise ValueError(f"requested must be >= 1, got {requested}")
    cdef void* buffer = PyMem_Malloc(requested * item_size)
    if buffer == NULL:
        raise MemoryError()
    return buffer


def forward_algorithm_max_count(Handle handle not None):
    cdef int count = 0
    check(cudnnGetConvolutionForwardAlgorithmMaxCount(handle._live(), &count),
          "cudnnGetConvolutionForwardAlgorithmMaxCount")
    return count


def backward_data_algorithm_max_count(Handle handle not None):
    cdef int count = 0
    check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle._live(), &count),
          "cudnnGetConvolutionBackwardDataAlgorithmMaxCount")
    return count


def backward_filter_algorithm_max_count(Handle handle not None):
    cdef int count = 0
    check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle._live(), &count),
          "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount")
    return count


def find_forward_algorithm_ex(Handle handle not None, TensorDescriptor x_desc not None, x,
                              FilterDescriptor w_desc not None, w,
                              ConvolutionDescriptor conv_desc not None,
                              TensorDescriptor y_desc not None, y, int requested, workspace,
                              workspace_bytes):
    """Time the forward algorithms on the caller's buffers (y is overwritten)."""
    cdef cudnnHandle_t h = handle._live()
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef const void* w_ptr = <const void*>to_address(w, "w")
    cdef void* y_ptr = <void*>to_address(y, "y")
    cdef void* ws_ptr = <void*>to_address(workspace, "workspace")
    cdef size_t ws_bytes = to_size(workspace_bytes, "workspace_bytes")
    cdef int returned = 0
    cdef cudnnStatus_t status
    cdef cudnnConvolutionFwdAlgoPerf_t* perf = <cudnnConvolutionFwdAlgoPerf_t*>_perf_buffer(
        requested, sizeof(cudnnConvolutionFwdAlgoPerf_t))
    try:
        with nogil:
            status = cudnnFindConvolutionForwardAlgorithmEx(
                h, x_desc._desc, x_ptr, w_desc._desc, w_ptr, conv_desc._desc, y_desc._desc,
                y_ptr, requested, &returned, perf, ws_ptr, ws_bytes)
        check(status, "cudnnFindConvolutionForwardAlgorithmEx")
        return _perf_list(perf, returned)
    finally:
        PyMem_Free(perf)


def find_backward_data_algorithm_ex(Handle handle not None, FilterDescriptor w_desc not None, w,
                                    TensorDescriptor dy_desc not None, dy,
                                    ConvolutionDescriptor conv_desc not None,
                                    TensorDescriptor dx_desc not None, dx, int requested,
                                    workspace, workspace_bytes):
    """Time the backward-data algorithms on the caller's buffers (dx is overwritten)."""
    cdef cudnnHandle_t h = handle._live()
    cdef const void* w_ptr = <const void*>to_address(w, "w")
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef void* dx_ptr = <void*>to_address(dx, "dx")
    cdef void* ws_ptr = <void*>to_address(workspace, "workspace")
    cdef size_t ws_bytes = to_size(workspace_bytes, "workspace_bytes")
    cdef int returned = 0
    cdef cudnnStatus_t status
    cdef cudnnConvolutionBwdDataAlgoPerf_t* perf = (
        <cudnnConvolutionBwdDataAlgoPerf_t*>_perf_buffer(
            requested, sizeof(cudnnConvolutionBwdDataAlgoPerf_t)))
    try:
        with nogil:
            status = cudnnFindConvolutionBackwardDataAlgorithmEx(
                h, w_desc._desc, w_ptr, dy_desc._desc, dy_ptr, conv_desc._desc, dx_desc._desc,
                dx_ptr, requested, &returned, perf, ws_ptr, ws_bytes)
        check(status, "cudnnFindConvolutionBackwardDataAlgorithmEx")
        return _perf_list(perf, returned)
    finally:
        PyMem_Free(perf)


def find_backward_filter_algorithm_ex(Handle handle not None, TensorDescriptor x_desc not None,
                                      x, TensorDescriptor dy_desc not None, dy,
                                      ConvolutionDescriptor conv_desc not None,
                                      FilterDescriptor dw_desc not None, dw, int requested,
                                      workspace, workspace_bytes):
    """Time the backward-filter algorithms on the caller's buffers (dw is overwritten)."""
    cdef cudnnHandle_t h = handle._live()
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef void* dw_ptr = <void*>to_address(dw, "dw")
    cdef void* ws_ptr = <void*>to_address(workspace, "workspace")
    cdef size_t ws_bytes = to_size(workspace_bytes, "workspace_bytes")
    cdef int returned = 0
    cdef cudnnStatus_t status
    cdef cudnnConvolutionBwdFilterAlgoPerf_t* perf = (
        <cudnnConvolutionBwdFilterAlgoPerf_t*>_perf_buffer(
            requested, sizeof(cudnnConvolutionBwdFilterAlgoPerf_t)))
    try:
        with nogil:
            status = cudnnFindConvolutionBackwardFilterAlgorithmEx(
                h, x_desc._desc, x_ptr, dy_desc._desc, dy_ptr, conv_desc._desc, dw_desc._desc,
                dw_ptr, requested, &returned, perf, ws_ptr, ws_bytes)
        check(status, "cudnnFindConvolutionBackwardFilterAlgorithmEx")
        return _perf_list(perf, returned)
    finally:
        PyMem_Free(perf)


def get_forward_algorithm_v7(Handle handle not None, TensorDescriptor x_desc not None,
                             FilterDescriptor w_desc not None,
                             ConvolutionDescriptor conv_desc not None,
                             TensorDescriptor y_desc not None, int requested):
    """cuDNN's heuristic ranking of the forward algorithms (nothing is run)."""
    cdef int returned = 0
    cdef cudnnConvolutionFwdAlgoPerf_t* perf = <cudnnConvolutionFwdAlgoPerf_t*>_perf_buffer(
        requested, sizeof(cudnnConvolutionFwdAlgoPerf_t))
    try:
        check(cudnnGetConvolutionForwardAlgorithm_v7(
                  handle._live(), x_desc._desc, w_desc._desc, conv_desc._desc, y_desc._desc,
                  requested, &returned, perf),
              "cudnnGetConvolutionForwardAlgorithm_v7")
        return _perf_list(perf, returned)
    finally:
        PyMem_Free(perf)


def get_backward_data_algorithm_v7(Handle handle not None, FilterDescriptor w_desc not None,
                                   TensorDescriptor dy_desc not None,
                                   ConvolutionDescriptor conv_desc not None,
                                   TensorDescriptor dx_desc not None, int requested):
    """cuDNN's heuristic ranking of the backward-data algorithms (nothing is run)."""
    cdef int returned = 0
    cdef cudnnConvolutionBwdDataAlgoPerf_t* perf = (
        <cudnnConvolutionBwdDataAlgoPerf_t*>_perf_buffer(
            requested, sizeof(cudnnConvolutionBwdDataAlgoPerf_t)))
    try:
        check(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                  handle._live(), w_desc._desc, dy_desc._desc, conv_desc._desc, dx_desc._desc,
                  requested, &returned, perf),
              "cudnnGetConvolutionBackwardDataAlgorithm_v7")
        return _perf_list(perf, returned)
    finally:
        PyMem_Free(perf)


def get_backward_filter_algorithm_v7(Handle handle not None, TensorDescriptor x_desc not None,
                                     TensorDescriptor dy_desc not None,
                                     ConvolutionDescriptor conv_desc not None,
                                     FilterDescriptor dw_desc not None, int requested):
    """cuDNN's heuristic ranking of the backward-filter algorithms (nothing is run)."""
    cdef int returned = 0
    cdef cudnnConvolutionBwdFilterAlgoPerf_t* perf = (
        <cudnnConvolutionBwdFilterAlgoPerf_t*>_perf_buffer(
            requested, sizeof(cudnnConvolutionBwdFilterAlgoPerf_t)))
    try:
        check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                  handle._live(), x_desc._desc, dy_desc._desc, conv_desc._desc, dw_desc._desc,
                  requested, &returned, perf),
              "cudnnGetConvolutionBackwardFilterAlgorithm_v7")
        return _perf_list(perf, returned)
    finally:
        PyMem_Free(perf)


# --- workspace sizes -------------------------------------------------------------------------

def forward_workspace_size(Handle handle not None, TensorDescriptor x_desc not None,
                           FilterDescriptor w_desc not None,
                           ConvolutionDescriptor conv_desc not None,
                           TensorDescriptor y_desc not None, algo):
    cdef size_t size = 0
    check(cudnnGetConvolutionForwardWorkspaceSize(
              handle._live(), x_desc._desc, w_desc._desc, conv_desc._desc, y_desc._desc,
              <cudnnConvolutionFwdAlgo_t>_algorithm(algo, "forward"), &size),
          "cudnnGetConvolutionForwardWorkspaceSize")
    return size


def backward_data_workspace_size(Handle handle not None, FilterDescriptor w_desc not None,
                                 TensorDescriptor dy_desc not None,
                                 ConvolutionDescriptor conv_desc not None,
                                 TensorDescriptor dx_desc not None, algo):
    cdef size_t size = 0
    check(cudnnGetConvolutionBackwardDataWorkspaceSize(
              handle._live(), w_desc._desc, dy_desc._desc, conv_desc._desc, dx_desc._desc,
              <cudnnConvolutionBwdDataAlgo_t>_algorithm(algo, "backward_data"), &size),
          "cudnnGetConvolutionBackwardDataWorkspaceSize")
    return size


def backward_filter_workspace_size(Handle handle not None, TensorDescriptor x_desc not None,
                                   TensorDescriptor dy_desc not None,
                                   ConvolutionDescriptor conv_desc not None,
                                   FilterDescriptor dw_desc not None, algo):
    cdef size_t size = 0
    check(cudnnGetConvolutionBackwardFilterWorkspaceSize(
              handle._live(), x_desc._desc, dy_desc._desc, conv_desc._desc, dw_desc._desc,
              <cudnnConvolutionBwdFilterAlgo_t>_algorithm(algo, "backward_filter"), &size),
          "cudnnGetConvolutionBackwardFilterWorkspaceSize")
    return size


# --- convolutions ----------------------------------------------------------------------------

def convolution_forward(Handle handle not None, double alpha, TensorDescriptor x_desc not None,
                        x, FilterDescriptor w_desc not None, w,
                        ConvolutionDescriptor conv_desc not None, algo, workspace,
                        workspace_bytes, double beta, TensorDescriptor y_desc not None, y):
    """y = alpha * conv(x, w) + beta * y."""
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, y_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, y_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef cudnnConvolutionFwdAlgo_t c_algo = <cudnnConvolutionFwdAlgo_t>_algorithm(algo, "forward")
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef const void* w_ptr = <const void*>to_address(w, "w")
    cdef void* ws_ptr = <void*>to_address(workspace, "workspace")
    cdef size_t ws_bytes = to_size(workspace_bytes, "workspace_bytes")
    cdef void* y_ptr = <void*>to_address(y, "y")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnConvolutionForward(h, alpha_ptr, x_desc._desc, x_ptr, w_desc._desc, w_ptr,
                                         conv_desc._desc, c_algo, ws_ptr, ws_bytes, beta_ptr,
                                         y_desc._desc, y_ptr)
    check(status, "cudnnConvolutionForward")


def convolution_backward_data(Handle handle not None, double alpha,
                              FilterDescriptor w_desc not None, w,
                              TensorDescriptor dy_desc not None, dy,
                              ConvolutionDescriptor conv_desc not None, algo, workspace,
                              workspace_bytes, double beta, TensorDescriptor dx_desc not None,
                              dx):
    """dx = alpha * conv_transpose(dy, w) + beta * dx."""
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, dx_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, dx_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef cudnnConvolutionBwdDataAlgo_t c_algo = (
        <cudnnConvolutionBwdDataAlgo_t>_algorithm(algo, "backward_data"))
    cdef const void* w_ptr = <const void*>to_address(w, "w")
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef void* ws_ptr = <void*>to_address(workspace, "workspace")
    cdef size_t ws_bytes = to_size(workspace_bytes, "workspace_bytes")
    cdef void* dx_ptr = <void*>to_address(dx, "dx")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnConvolutionBackwardData(h, alpha_ptr, w_desc._desc, w_ptr, dy_desc._desc,
                                              dy_ptr, conv_desc._desc, c_algo, ws_ptr, ws_bytes,
                                              beta_ptr, dx_desc._desc, dx_ptr)
    check(status, "cudnnConvolutionBackwardData")


def convolution_backward_filter(Handle handle not None, double alpha,
                                TensorDescriptor x_desc not None, x,
                                TensorDescriptor dy_desc not None, dy,
                                ConvolutionDescriptor conv_desc not None, algo, workspace,
                                workspace_bytes, double beta, FilterDescriptor dw_desc not None,
                                dw):
    """dw = alpha * dconv(x, dy) + beta * dw."""
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, dw_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, dw_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef cudnnConvolutionBwdFilterAlgo_t c_algo = (
        <cudnnConvolutionBwdFilterAlgo_t>_algorithm(algo, "backward_filter"))
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef void* ws_ptr = <void*>to_address(workspace, "workspace")
    cdef size_t ws_bytes = to_size(workspace_bytes, "workspace_bytes")
    cdef void* dw_ptr = <void*>to_address(dw, "dw")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnConvolutionBackwardFilter(h, alpha_ptr, x_desc._desc, x_ptr,
                                                dy_desc._desc, dy_ptr, conv_desc._desc, c_algo,
                                                ws_ptr, ws_bytes, beta_ptr, dw_desc._desc,
                                                dw_ptr)
    check(status, "cudnnConvolutionBackwardFilter")


def convolution_backward_bias(Handle handle not None, double alpha,
                              TensorDescriptor dy_desc not None, dy, double beta,
                              TensorDescriptor db_desc not None, db):
    """db = alpha * sum of dy over all but the channel dim + beta * db."""
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, db_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, db_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef void* db_ptr = <void*>to_address(db, "db")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnConvolutionBackwardBias(h, alpha_ptr, dy_desc._desc, dy_ptr, beta_ptr,
                                              db_desc._desc, db_ptr)
    check(status, "cudnnConvolutionBackwardBias")


def add_tensor(Handle handle not None, double alpha, TensorDescriptor a_desc not None, a,
               double beta, TensorDescriptor c_desc not None, c):
    """c = alpha * a + beta * c, broadcasting a's size-1 dims (e.g. a bias of shape 1,C,1,1)."""
    cdef _Scalar s_alpha, s_beta
    cdef const void* alpha_ptr = _scalar(&s_alpha, alpha, c_desc._dtype)
    cdef const void* beta_ptr = _scalar(&s_beta, beta, c_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef const void* a_ptr = <const void*>to_address(a, "a")
    cdef void* c_ptr = <void*>to_address(c, "c")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnAddTensor(h, alpha_ptr, a_desc._desc, a_ptr, beta_ptr, c_desc._desc, c_ptr)
    check(status, "cudnnAddTensor")


def scale_tensor(Handle handle not None, TensorDescriptor y_desc not None, y, double alpha):
    """y = alpha * y."""
    cdef _Scalar s_alpha
    cdef const void* alpha_ptr = _scalar(&s_alpha, alpha, y_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef void* y_ptr = <void*>to_address(y, "y")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnScaleTensor(h, y_desc._desc, y_ptr, alpha_ptr)
    check(status, "cudnnScaleTensor")


# --- activation, pooling, softmax ------------------------------------------------------------

def activation_forward(Handle handle not None, ActivationDescriptor activation_desc not None,
                       double alpha, TensorDescriptor x_desc not None, x, double beta,
                       TensorDescriptor y_desc not None, y):
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, y_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, y_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef void* y_ptr = <void*>to_address(y, "y")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnActivationForward(h, activation_desc._desc, alpha_ptr, x_desc._desc, x_ptr,
                                        beta_ptr, y_desc._desc, y_ptr)
    check(status, "cudnnActivationForward")


def activation_backward(Handle handle not None, ActivationDescriptor activation_desc not None,
                        double alpha, TensorDescriptor y_desc not None, y,
                        TensorDescriptor dy_desc not None, dy, TensorDescriptor x_desc not None,
                        x, double beta, TensorDescriptor dx_desc not None, dx):
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, dx_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, dx_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef const void* y_ptr = <const void*>to_address(y, "y")
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef void* dx_ptr = <void*>to_address(dx, "dx")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnActivationBackward(h, activation_desc._desc, alpha_ptr, y_desc._desc,
                                         y_ptr, dy_desc._desc, dy_ptr, x_desc._desc, x_ptr,
                                         beta_ptr, dx_desc._desc, dx_ptr)
    check(status, "cudnnActivationBackward")


def pooling_forward(Handle handle not None, PoolingDescriptor pooling_desc not None,
                    double alpha, TensorDescriptor x_desc not None, x, double beta,
                    TensorDescriptor y_desc not None, y):
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, y_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, y_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef void* y_ptr = <void*>to_address(y, "y")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnPoolingForward(h, pooling_desc._desc, alpha_ptr, x_desc._desc, x_ptr,
                                     beta_ptr, y_desc._desc, y_ptr)
    check(status, "cudnnPoolingForward")


def pooling_backward(Handle handle not None, PoolingDescriptor pooling_desc not None,
                     double alpha, TensorDescriptor y_desc not None, y,
                     TensorDescriptor dy_desc not None, dy, TensorDescriptor x_desc not None, x,
                     double beta, TensorDescriptor dx_desc not None, dx):
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, dx_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, dx_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef const void* y_ptr = <const void*>to_address(y, "y")
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef void* dx_ptr = <void*>to_address(dx, "dx")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnPoolingBackward(h, pooling_desc._desc, alpha_ptr, y_desc._desc, y_ptr,
                                      dy_desc._desc, dy_ptr, x_desc._desc, x_ptr, beta_ptr,
                                      dx_desc._desc, dx_ptr)
    check(status, "cudnnPoolingBackward")


def softmax_forward(Handle handle not None, algorithm, mode, double alpha,
                    TensorDescriptor x_desc not None, x, double beta,
                    TensorDescriptor y_desc not None, y):
    """Softmax over C ("channel", per position) or over C*H*W ("instance", per sample)."""
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, y_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, y_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef cudnnSoftmaxAlgorithm_t c_algo = <cudnnSoftmaxAlgorithm_t>_lookup(
        SOFTMAX_ALGORITHMS, algorithm, "softmax algorithm")
    cdef cudnnSoftmaxMode_t c_mode = <cudnnSoftmaxMode_t>_lookup(
        SOFTMAX_MODES, mode, "softmax mode")
    cdef const void* x_ptr = <const void*>to_address(x, "x")
    cdef void* y_ptr = <void*>to_address(y, "y")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnSoftmaxForward(h, c_algo, c_mode, alpha_ptr, x_desc._desc, x_ptr,
                                     beta_ptr, y_desc._desc, y_ptr)
    check(status, "cudnnSoftmaxForward")


def softmax_backward(Handle handle not None, algorithm, mode, double alpha,
                     TensorDescriptor y_desc not None, y, TensorDescriptor dy_desc not None, dy,
                     double beta, TensorDescriptor dx_desc not None, dx):
    cdef _Scalar a, b
    cdef const void* alpha_ptr = _scalar(&a, alpha, dx_desc._dtype)
    cdef const void* beta_ptr = _scalar(&b, beta, dx_desc._dtype)
    cdef cudnnHandle_t h = handle._live()
    cdef cudnnSoftmaxAlgorithm_t c_algo = <cudnnSoftmaxAlgorithm_t>_lookup(
        SOFTMAX_ALGORITHMS, algorithm, "softmax algorithm")
    cdef cudnnSoftmaxMode_t c_mode = <cudnnSoftmaxMode_t>_lookup(
        SOFTMAX_MODES, mode, "softmax mode")
    cdef const void* y_ptr = <const void*>to_address(y, "y")
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef void* dx_ptr = <void*>to_address(dx, "dx")
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnSoftmaxBackward(h, c_algo, c_mode, alpha_ptr, y_desc._desc, y_ptr,
                                      dy_desc._desc, dy_ptr, beta_ptr, dx_desc._desc, dx_ptr)
    check(status, "cudnnSoftmaxBackward")
