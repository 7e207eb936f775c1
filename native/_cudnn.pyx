# cython: language_level=3
"""Thin binding of cuDNN 9: handles, descriptors and the legacy convolution API.

Faithful to C: functions keep cuDNN's argument order, device pointers and streams travel as
Python ints, dtypes/layouts/modes are strings, and every status is checked; a failure raises a
ucudnn.errors.CudnnError subclass naming the call, the status and cuDNN's last error message.
Descriptor objects own their C handles and destroy them when they are garbage. alpha and beta
are passed as double when the output tensor is float64 and as float otherwise (cuDNN's rule).
"""

import atexit
import collections

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, uintptr_t

from convert cimport to_address, to_int, to_size

from cuda_runtime cimport cudaStream_t
from cudnn cimport (
    CUDNN_ACTIVATION_CLIPPED_RELU,
    CUDNN_ACTIVATION_ELU,
    CUDNN_ACTIVATION_RELU,
    CUDNN_ACTIVATION_SIGMOID,
    CUDNN_ACTIVATION_TANH,
    CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
    CUDNN_ATTR_CONVOLUTION_CONV_MODE,
    CUDNN_ATTR_CONVOLUTION_DILATIONS,
    CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
    CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
    CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
    CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
    CUDNN_ATTR_ENGINECFG_ENGINE,
    CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
    CUDNN_ATTR_ENGINEHEUR_MODE,
    CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
    CUDNN_ATTR_ENGINEHEUR_RESULTS,
    CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET,
    CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
    CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
    CUDNN_ATTR_ENGINE_KNOB_INFO,
    CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
    CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
    CUDNN_ATTR_ENGINE_SM_COUNT_TARGET,
    CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
    CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
    CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
    CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
    CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
    CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
    CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE,
    CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE,
    CUDNN_ATTR_KNOB_INFO_STRIDE,
    CUDNN_ATTR_KNOB_INFO_TYPE,
    CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
    CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
    CUDNN_ATTR_OPERATIONGRAPH_OPS,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
    CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
    CUDNN_ATTR_TENSOR_DATA_TYPE,
    CUDNN_ATTR_TENSOR_DIMENSIONS,
    CUDNN_ATTR_TENSOR_IS_BY_VALUE,
    CUDNN_ATTR_TENSOR_IS_VIRTUAL,
    CUDNN_ATTR_TENSOR_STRIDES,
    CUDNN_ATTR_TENSOR_UNIQUE_ID,
    CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION,
    CUDNN_ATTR_TENSOR_VECTOR_COUNT,
    CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
    CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
    CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
    CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
    CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
    CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
    CUDNN_BACKEND_ENGINE_DESCRIPTOR,
    CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
    CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
    CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR,
    CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_TENSOR_DESCRIPTOR,
    CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
    CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION,
    CUDNN_CONVOLUTION,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
    CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
    CUDNN_CROSS_CORRELATION,
    CUDNN_DATA_BFLOAT16,
    CUDNN_DATA_BOOLEAN,
    CUDNN_DATA_DOUBLE,
    CUDNN_DATA_FLOAT,
    CUDNN_DATA_FP8_E4M3,
    CUDNN_DATA_FP8_E5M2,
    CUDNN_DATA_HALF,
    CUDNN_DATA_INT32,
    CUDNN_DATA_INT64,
    CUDNN_DATA_INT8,
    CUDNN_DATA_UINT8,
    CUDNN_DEFAULT_MATH,
    CUDNN_DETERMINISTIC,
    CUDNN_DIM_MAX,
    CUDNN_FMA_MATH,
    CUDNN_HEUR_MODE_A,
    CUDNN_HEUR_MODE_B,
    CUDNN_HEUR_MODE_FALLBACK,
    CUDNN_HEUR_MODE_INSTANT,
    CUDNN_NOT_PROPAGATE_NAN,
    CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS,
    CUDNN_NUMERICAL_NOTE_FFT,
    CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC,
    CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION,
    CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP,
    CUDNN_NUMERICAL_NOTE_TENSOR_CORE,
    CUDNN_NUMERICAL_NOTE_WINOGRAD,
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
    CUDNN_TYPE_BACKEND_DESCRIPTOR,
    CUDNN_TYPE_BEHAVIOR_NOTE,
    CUDNN_TYPE_BOOLEAN,
    CUDNN_TYPE_CHAR,
    CUDNN_TYPE_CONVOLUTION_MODE,
    CUDNN_TYPE_DATA_TYPE,
    CUDNN_TYPE_DOUBLE,
    CUDNN_TYPE_FLOAT,
    CUDNN_TYPE_HANDLE,
    CUDNN_TYPE_HEUR_MODE,
    CUDNN_TYPE_INT32,
    CUDNN_TYPE_INT64,
    CUDNN_TYPE_KNOB_TYPE,
    CUDNN_TYPE_NUMERICAL_NOTE,
    CUDNN_TYPE_VOID_PTR,
    CUDNN_VERSION,
    UCUDNN_ATTR_DEVICEPROP_DEVICE_ID,
    UCUDNN_ATTR_DEVICEPROP_HANDLE,
    UCUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION,
    UCUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED,
    UCUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE,
    UCUDNN_ATTR_ENGINEHEUR_DEVICEPROP,
    UCUDNN_ATTR_ENGINE_DEVICEPROP,
    UCUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
    UCUDNN_BACKEND_DEVICEPROP_DESCRIPTOR,
    UCUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY,
    UCUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API,
    CUDNN_BEHAVIOR_NOTE_REQUIRES_BIAS_INT8x32_REORDER,
    CUDNN_BEHAVIOR_NOTE_REQUIRES_FILTER_INT8x32_REORDER,
    CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13,
    CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4,
    CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6,
    cudnnActivationBackward,
    cudnnActivationDescriptor_t,
    cudnnActivationForward,
    cudnnActivationMode_t,
    cudnnAddTensor,
    cudnnBackendAttributeName_t,
    cudnnBackendAttributeType_t,
    cudnnBackendCreateDescriptor,
    cudnnBackendDescriptor_t,
    cudnnBackendDescriptorType_t,
    cudnnBackendDestroyDescriptor,
    cudnnBackendExecute,
    cudnnBackendFinalize,
    cudnnBackendGetAttribute,
    cudnnBackendSetAttribute,
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

from ucudnn.core.algorithms import LEGACY_ALGORITHMS as _LEGACY_ALGORITHMS
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
    """cudnnGetVersion of the loaded library, e.g. 92800 for 9.28.0; raises nothing."""
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

# Algorithm names by enum value (cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t): the planner's
# pure-Python table, held here to the counts these headers give.
ALGORITHMS = dict(_LEGACY_ALGORITHMS)
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
    """A cuDNN handle (cudnnCreate); bound to the current device, destroyed when garbage.

    Every `ucudnn.Handle` has one, as its `cudnn`, enqueuing on that Handle's stream. Methods
    raise ValueError once it was destroyed.

    Raises:
        CudnnNotInitializedError: cuDNN could not start (no usable GPU or driver).
        CudnnError: cudnnCreate failed otherwise.
    """

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
    """An Nd tensor: dtype name, logical dims (N, C, *spatial) and element strides.

    Raises:
        TypeError, ValueError: an argument is not of its kind, or names an unknown dtype.
        CudnnBadParamError: cuDNN rejects the dims or strides (a dim below 1, for instance).
    """

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
    """An activation function; coef is the ceiling of clipped_relu or the alpha of elu.

    Raises:
        TypeError, ValueError: an argument is not of its kind, or names an unknown mode.
        CudnnBadParamError: cuDNN rejects the mode and coef.
    """

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
    """Pooling over the spatial dims: mode name, window, padding and stride per spatial dim.

    Raises:
        TypeError, ValueError: an argument is not of its kind, names an unknown mode, or the
            lengths of window, padding and stride differ.
        CudnnBadParamError: cuDNN rejects a window, padding or stride.
    """

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
    """c = alpha * a + beta * c, broadcasting a's size-1 dims (e.g. a bias of shape 1,C,1,1).

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: the descriptors do not fit together (shapes, dtypes).
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
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
    """y = alpha * y.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: the descriptors do not fit together (shapes, dtypes).
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
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
    """y = alpha * activation(x) + beta * y.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: the descriptors do not fit together (shapes, dtypes).
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
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
    """dx = alpha * (the activation's gradient at x, applied to dy) + beta * dx.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: the descriptors do not fit together (shapes, dtypes).
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
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
    """y = alpha * pool(x) + beta * y.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: the descriptors do not fit together (shapes, dtypes).
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
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
    """dx = alpha * (the pooling's gradient, from y, dy and x) + beta * dx.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: the descriptors do not fit together (shapes, dtypes).
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
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
    """Softmax over C ("channel", per position) or over C*H*W ("instance", per sample).

    `algorithm` is "fast", "accurate" or "log"; y = alpha * softmax(x) + beta * y.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, the algorithm or mode is
            unknown, or the handle was destroyed.
        CudnnBadParamError: the descriptors do not fit together (shapes, dtypes).
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
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
    """dx = alpha * (softmax's gradient, from its output y and dy) + beta * dx; `algorithm`
    and `mode` as for softmax_forward.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, the algorithm or mode is
            unknown, or the handle was destroyed.
        CudnnBadParamError: the descriptors do not fit together (shapes, dtypes).
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
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


# --- backend (graph) API ---------------------------------------------------------------------
#
# One generic descriptor class, not one per kind: which attributes a convolution graph, its
# heuristics and its plans need is decided in Python (ucudnn.runtime.graph), where it can be
# tested against a recording fake. Kinds, attributes, attribute types and enum values travel
# as cuDNN's names without their prefixes: CUDNN_BACKEND_<kind>_DESCRIPTOR, CUDNN_ATTR_<name>,
# CUDNN_TYPE_<type>, CUDNN_DATA_<data type>, CUDNN_NUMERICAL_NOTE_<note>, ...

# Names cuDNN added after 9.1 and the version that added them: such a name is known only when
# both the headers this module was built with (its value is then >= 0) and the loaded library
# have it, so that callers can test `name in BACKEND_ATTRIBUTES` instead of meeting BAD_PARAM.
cdef dict _SINCE = {
    "ENGINECFG_WORKSPACE_SIZE": 90200,
    "ENGINECFG_SHARED_MEMORY_USED": 90200,
    "DEVICEPROP": 90800,
    "DEVICEPROP_DEVICE_ID": 90800,
    "DEVICEPROP_HANDLE": 90800,
    "DEVICEPROP_JSON_REPRESENTATION": 90800,
    "ENGINEHEUR_DEVICEPROP": 90800,
    "ENGINE_DEVICEPROP": 90800,
    "EXECUTION_PLAN_DEVICEPROP": 90800,
}


cdef dict _known(dict table):
    cdef size_t loaded = cudnnGetVersion()
    return {name: value for name, value in table.items()
            if value >= 0 and loaded >= _SINCE.get(name, 0)}


BACKEND_KINDS = _known({
    "TENSOR": CUDNN_BACKEND_TENSOR_DESCRIPTOR,
    "CONVOLUTION": CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
    "OPERATION_CONVOLUTION_FORWARD": CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    "OPERATION_CONVOLUTION_BACKWARD_DATA":
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    "OPERATION_CONVOLUTION_BACKWARD_FILTER":
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
    "OPERATIONGRAPH": CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
    "ENGINEHEUR": CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
    "ENGINECFG": CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
    "ENGINE": CUDNN_BACKEND_ENGINE_DESCRIPTOR,
    "KNOB_INFO": CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR,
    "KNOB_CHOICE": CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
    "EXECUTION_PLAN": CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
    "VARIANT_PACK": CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
    "DEVICEPROP": UCUDNN_BACKEND_DEVICEPROP_DESCRIPTOR,
})
BACKEND_ATTRIBUTES = _known({
    "TENSOR_BYTE_ALIGNMENT": CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
    "TENSOR_DATA_TYPE": CUDNN_ATTR_TENSOR_DATA_TYPE,
    "TENSOR_DIMENSIONS": CUDNN_ATTR_TENSOR_DIMENSIONS,
    "TENSOR_STRIDES": CUDNN_ATTR_TENSOR_STRIDES,
    "TENSOR_VECTOR_COUNT": CUDNN_ATTR_TENSOR_VECTOR_COUNT,
    "TENSOR_VECTORIZED_DIMENSION": CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION,
    "TENSOR_UNIQUE_ID": CUDNN_ATTR_TENSOR_UNIQUE_ID,
    "TENSOR_IS_VIRTUAL": CUDNN_ATTR_TENSOR_IS_VIRTUAL,
    "TENSOR_IS_BY_VALUE": CUDNN_ATTR_TENSOR_IS_BY_VALUE,
    "CONVOLUTION_COMP_TYPE": CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
    "CONVOLUTION_CONV_MODE": CUDNN_ATTR_CONVOLUTION_CONV_MODE,
    "CONVOLUTION_DILATIONS": CUDNN_ATTR_CONVOLUTION_DILATIONS,
    "CONVOLUTION_FILTER_STRIDES": CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
    "CONVOLUTION_POST_PADDINGS": CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
    "CONVOLUTION_PRE_PADDINGS": CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
    "CONVOLUTION_SPATIAL_DIMS": CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
    "OPERATION_CONVOLUTION_FORWARD_ALPHA": CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
    "OPERATION_CONVOLUTION_FORWARD_BETA": CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
    "OPERATION_CONVOLUTION_FORWARD_CONV_DESC": CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
    "OPERATION_CONVOLUTION_FORWARD_W": CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
    "OPERATION_CONVOLUTION_FORWARD_X": CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
    "OPERATION_CONVOLUTION_FORWARD_Y": CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
    "OPERATION_CONVOLUTION_BWD_DATA_ALPHA": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
    "OPERATION_CONVOLUTION_BWD_DATA_BETA": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
    "OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC":
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
    "OPERATION_CONVOLUTION_BWD_DATA_W": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
    "OPERATION_CONVOLUTION_BWD_DATA_DX": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
    "OPERATION_CONVOLUTION_BWD_DATA_DY": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
    "OPERATION_CONVOLUTION_BWD_FILTER_ALPHA": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
    "OPERATION_CONVOLUTION_BWD_FILTER_BETA": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
    "OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC":
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
    "OPERATION_CONVOLUTION_BWD_FILTER_DW": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
    "OPERATION_CONVOLUTION_BWD_FILTER_X": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
    "OPERATION_CONVOLUTION_BWD_FILTER_DY": CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
    "OPERATIONGRAPH_HANDLE": CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
    "OPERATIONGRAPH_OPS": CUDNN_ATTR_OPERATIONGRAPH_OPS,
    "OPERATIONGRAPH_ENGINE_GLOBAL_COUNT": CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
    "ENGINEHEUR_MODE": CUDNN_ATTR_ENGINEHEUR_MODE,
    "ENGINEHEUR_OPERATION_GRAPH": CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
    "ENGINEHEUR_RESULTS": CUDNN_ATTR_ENGINEHEUR_RESULTS,
    "ENGINEHEUR_SM_COUNT_TARGET": CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET,
    "ENGINEHEUR_DEVICEPROP": UCUDNN_ATTR_ENGINEHEUR_DEVICEPROP,
    "ENGINE_OPERATION_GRAPH": CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
    "ENGINE_GLOBAL_INDEX": CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
    "ENGINE_KNOB_INFO": CUDNN_ATTR_ENGINE_KNOB_INFO,
    "ENGINE_NUMERICAL_NOTE": CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
    "ENGINE_BEHAVIOR_NOTE": CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
    "ENGINE_SM_COUNT_TARGET": CUDNN_ATTR_ENGINE_SM_COUNT_TARGET,
    "ENGINE_DEVICEPROP": UCUDNN_ATTR_ENGINE_DEVICEPROP,
    "KNOB_INFO_TYPE": CUDNN_ATTR_KNOB_INFO_TYPE,
    "KNOB_INFO_MAXIMUM_VALUE": CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE,
    "KNOB_INFO_MINIMUM_VALUE": CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE,
    "KNOB_INFO_STRIDE": CUDNN_ATTR_KNOB_INFO_STRIDE,
    "KNOB_CHOICE_KNOB_TYPE": CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
    "KNOB_CHOICE_KNOB_VALUE": CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
    "ENGINECFG_ENGINE": CUDNN_ATTR_ENGINECFG_ENGINE,
    "ENGINECFG_KNOB_CHOICES": CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
    "ENGINECFG_WORKSPACE_SIZE": UCUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE,
    "ENGINECFG_SHARED_MEMORY_USED": UCUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED,
    "EXECUTION_PLAN_HANDLE": CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
    "EXECUTION_PLAN_ENGINE_CONFIG": CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
    "EXECUTION_PLAN_WORKSPACE_SIZE": CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
    "EXECUTION_PLAN_JSON_REPRESENTATION": CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
    "EXECUTION_PLAN_DEVICEPROP": UCUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
    "VARIANT_PACK_UNIQUE_IDS": CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
    "VARIANT_PACK_DATA_POINTERS": CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
    "VARIANT_PACK_WORKSPACE": CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
    "DEVICEPROP_DEVICE_ID": UCUDNN_ATTR_DEVICEPROP_DEVICE_ID,
    "DEVICEPROP_HANDLE": UCUDNN_ATTR_DEVICEPROP_HANDLE,
    "DEVICEPROP_JSON_REPRESENTATION": UCUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION,
})
BACKEND_TYPES = {
    "HANDLE": CUDNN_TYPE_HANDLE,
    "DATA_TYPE": CUDNN_TYPE_DATA_TYPE,
    "BOOLEAN": CUDNN_TYPE_BOOLEAN,
    "INT64": CUDNN_TYPE_INT64,
    "INT32": CUDNN_TYPE_INT32,
    "FLOAT": CUDNN_TYPE_FLOAT,
    "DOUBLE": CUDNN_TYPE_DOUBLE,
    "VOID_PTR": CUDNN_TYPE_VOID_PTR,
    "CHAR": CUDNN_TYPE_CHAR,
    "BACKEND_DESCRIPTOR": CUDNN_TYPE_BACKEND_DESCRIPTOR,
    "CONVOLUTION_MODE": CUDNN_TYPE_CONVOLUTION_MODE,
    "HEUR_MODE": CUDNN_TYPE_HEUR_MODE,
    "KNOB_TYPE": CUDNN_TYPE_KNOB_TYPE,
    "NUMERICAL_NOTE": CUDNN_TYPE_NUMERICAL_NOTE,
    "BEHAVIOR_NOTE": CUDNN_TYPE_BEHAVIOR_NOTE,
}
BACKEND_DATA_TYPES = {
    "FLOAT": CUDNN_DATA_FLOAT,
    "DOUBLE": CUDNN_DATA_DOUBLE,
    "HALF": CUDNN_DATA_HALF,
    "BFLOAT16": CUDNN_DATA_BFLOAT16,
    "INT8": CUDNN_DATA_INT8,
    "UINT8": CUDNN_DATA_UINT8,
    "INT32": CUDNN_DATA_INT32,
    "INT64": CUDNN_DATA_INT64,
    "BOOLEAN": CUDNN_DATA_BOOLEAN,
    "FP8_E4M3": CUDNN_DATA_FP8_E4M3,
    "FP8_E5M2": CUDNN_DATA_FP8_E5M2,
}
BACKEND_CONVOLUTION_MODES = {
    "CONVOLUTION": CUDNN_CONVOLUTION,
    "CROSS_CORRELATION": CUDNN_CROSS_CORRELATION,
}
HEURISTIC_MODES = {
    "INSTANT": CUDNN_HEUR_MODE_INSTANT,
    "B": CUDNN_HEUR_MODE_B,
    "FALLBACK": CUDNN_HEUR_MODE_FALLBACK,
    "A": CUDNN_HEUR_MODE_A,
}
NUMERICAL_NOTES = {
    "TENSOR_CORE": CUDNN_NUMERICAL_NOTE_TENSOR_CORE,
    "DOWN_CONVERT_INPUTS": CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS,
    "REDUCED_PRECISION_REDUCTION": CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION,
    "FFT": CUDNN_NUMERICAL_NOTE_FFT,
    "NONDETERMINISTIC": CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC,
    "WINOGRAD": CUDNN_NUMERICAL_NOTE_WINOGRAD,
    "WINOGRAD_TILE_4x4": CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4,
    "WINOGRAD_TILE_6x6": CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6,
    "WINOGRAD_TILE_13x13": CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13,
    "STRICT_NAN_PROP": CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP,
}
BEHAVIOR_NOTES = _known({
    "RUNTIME_COMPILATION": CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION,
    "REQUIRES_FILTER_INT8x32_REORDER": CUDNN_BEHAVIOR_NOTE_REQUIRES_FILTER_INT8x32_REORDER,
    "REQUIRES_BIAS_INT8x32_REORDER": CUDNN_BEHAVIOR_NOTE_REQUIRES_BIAS_INT8x32_REORDER,
    "SUPPORTS_CUDA_GRAPH_NATIVE_API": UCUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API,
    "CUBLASLT_DEPENDENCY": UCUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY,
})

# The attribute types whose values are enum names, with their tables both ways.
cdef dict _ENUM_TABLES = {
    CUDNN_TYPE_DATA_TYPE: BACKEND_DATA_TYPES,
    CUDNN_TYPE_CONVOLUTION_MODE: BACKEND_CONVOLUTION_MODES,
    CUDNN_TYPE_HEUR_MODE: HEURISTIC_MODES,
    CUDNN_TYPE_NUMERICAL_NOTE: NUMERICAL_NOTES,
    CUDNN_TYPE_BEHAVIOR_NOTE: BEHAVIOR_NOTES,
}
cdef dict _ENUM_NAMES = {
    attr_type: {value: name for name, value in table.items()}
    for attr_type, table in _ENUM_TABLES.items()
}

# The largest C element any attribute type has (int64, double, pointers): a buffer of this many
# bytes per value holds the values of every type.
ctypedef union _Element:
    int64_t i
    double d
    void* p

# execute_plan's variant pack names at most this many tensors (a convolution has three).
cdef enum:
    _MAX_TENSORS = 8

# Set at interpreter exit, before modules are torn down: descriptors still alive then are left
# to the process's end instead of destroyed, since cuDNN may already be tearing itself down
# (PyTorch saw crashes destroying plans then since cuDNN 9.10, and leaks them on purpose).
cdef bint _exiting = False


def _at_exit():
    global _exiting
    _exiting = True


atexit.register(_at_exit)


cdef object _in_range(object value, str what, object bits):
    n = to_int(value, what)
    if not -(1 << (bits - 1)) <= n < 1 << (bits - 1):  # Python ints: no C overflow here
        raise ValueError(f"{what} = {n} does not fit in a {bits}-bit integer")
    return n


cdef double _real(object value, str what) except? -1.0:
    try:
        return value
    except TypeError:
        raise TypeError(f"{what} must be a real number, got {value!r}") from None


cdef int _pack(int attr_type, str type_name, list values, str attribute, char* out) except -1:
    """Write values into out as cuDNN's C elements of attr_type (room for one _Element each)."""
    cdef Py_ssize_t i
    for i in range(len(values)):
        value = values[i]
        what = f"{attribute} value {i}"
        if attr_type == CUDNN_TYPE_INT64:
            (<int64_t*>out)[i] = _in_range(value, what, 64)
        elif attr_type == CUDNN_TYPE_INT32 or attr_type == CUDNN_TYPE_KNOB_TYPE:
            (<int*>out)[i] = _in_range(value, what, 32)
        elif attr_type == CUDNN_TYPE_FLOAT:
            (<float*>out)[i] = <float>_real(value, what)
        elif attr_type == CUDNN_TYPE_DOUBLE:
            (<double*>out)[i] = _real(value, what)
        elif attr_type == CUDNN_TYPE_BOOLEAN:
            # cuDNN reads CUDNN_TYPE_BOOLEAN as a C/C++ bool: one byte.
            if not isinstance(value, bool):
                raise TypeError(f"{what} must be a bool, got {value!r}")
            (<unsigned char*>out)[i] = value
        elif attr_type == CUDNN_TYPE_VOID_PTR:
            (<void**>out)[i] = <void*>to_address(value, what)
        elif attr_type == CUDNN_TYPE_HANDLE:
            if not isinstance(value, Handle):
                raise TypeError(f"{what} must be a Handle, got {value!r}")
            (<cudnnHandle_t*>out)[i] = (<Handle>value)._live()
        elif attr_type == CUDNN_TYPE_BACKEND_DESCRIPTOR:
            if not isinstance(value, BackendDescriptor):
                raise TypeError(f"{what} must be a BackendDescriptor, got {value!r}")
            (<cudnnBackendDescriptor_t*>out)[i] = (<BackendDescriptor>value)._desc
        else:  # enums travel as names
            table = _ENUM_TABLES[attr_type]
            if not isinstance(value, str):
                raise TypeError(f"{what} must be a {type_name} name (one of "
                                f"{', '.join(map(repr, table))}), got {value!r}")
            (<int*>out)[i] = _lookup(table, value, f"{type_name} name")
    return 0


cdef list _unpack(int attr_type, char* data, Py_ssize_t count):
    """The Python values of count C elements of a numeric, pointer or enum attr_type."""
    cdef Py_ssize_t i
    if attr_type == CUDNN_TYPE_INT64:
        return [(<int64_t*>data)[i] for i in range(count)]
    if attr_type == CUDNN_TYPE_INT32 or attr_type == CUDNN_TYPE_KNOB_TYPE:
        return [(<int*>data)[i] for i in range(count)]
    if attr_type == CUDNN_TYPE_FLOAT:
        return [(<float*>data)[i] for i in range(count)]
    if attr_type == CUDNN_TYPE_DOUBLE:
        return [(<double*>data)[i] for i in range(count)]
    if attr_type == CUDNN_TYPE_BOOLEAN:
        return [(<unsigned char*>data)[i] != 0 for i in range(count)]
    if attr_type == CUDNN_TYPE_VOID_PTR:
        return [<uintptr_t>(<void**>data)[i] for i in range(count)]
    # A value this module has no name for (a newer cuDNN's) still reads back, as UNKNOWN_<n>.
    names = _ENUM_NAMES[attr_type]
    return [names.get(value, f"UNKNOWN_{value}")
            for value in [(<int*>data)[i] for i in range(count)]]


cdef bytes _chars(object values, str attribute):
    # CHAR values are one bytes object, given alone or as the only item of a sequence.
    if isinstance(values, (list, tuple)) and len(values) == 1:
        values = values[0]
    if not isinstance(values, bytes):
        raise TypeError(f"{attribute} CHAR value must be one bytes object, got {values!r}")
    return values


@cython.no_gc_clear  # the references below must still be there when __dealloc__ runs
cdef class BackendDescriptor:
    """A cuDNN backend descriptor of one kind: set attributes, finalize, get attributes.

    Descriptors and handles given to set() are kept referenced, and a descriptor read by get()
    keeps the one it was read from, so that nothing cuDNN may still point at is destroyed first.
    """

    cdef cudnnBackendDescriptor_t _desc
    cdef str _kind
    cdef bint _finalized
    cdef dict _held  # attribute name -> the Handles or BackendDescriptors set on it
    cdef object _source  # the descriptor get() read this one from, or None

    def __cinit__(self, kind):
        cdef cudnnBackendDescriptorType_t c_kind = <cudnnBackendDescriptorType_t>_lookup(
            BACKEND_KINDS, kind, "backend descriptor kind")
        self._kind = kind
        self._held = {}
        check(cudnnBackendCreateDescriptor(c_kind, &self._desc),
              f"cudnnBackendCreateDescriptor({kind})")

    def __dealloc__(self):
        if self._desc != NULL and not _exiting:
            cudnnBackendDestroyDescriptor(self._desc)

    @property
    def kind(self):
        return self._kind

    @property
    def finalized(self):
        return self._finalized

    def set(self, attribute, attr_type, values):
        """cudnnBackendSetAttribute with values converted to attr_type's C elements."""
        cdef cudnnBackendAttributeName_t c_name = <cudnnBackendAttributeName_t>_lookup(
            BACKEND_ATTRIBUTES, attribute, "backend attribute")
        cdef int c_type = _lookup(BACKEND_TYPES, attr_type, "backend attribute type")
        cdef str call = f"cudnnBackendSetAttribute({self._kind}, {attribute})"
        cdef bytes chars
        cdef char* buffer
        if c_type == CUDNN_TYPE_CHAR:
            chars = _chars(values, attribute)
            check(cudnnBackendSetAttribute(self._desc, c_name, CUDNN_TYPE_CHAR, len(chars),
                                           <const char*>chars), call)
            return
        # A str is a sequence too, but one name given bare is a mistake, not a list of letters.
        if isinstance(values, (str, bytes)):
            raise TypeError(f"{attribute} values must be a sequence of values, got {values!r}")
        try:
            items = list(values)
        except TypeError:
            raise TypeError(f"{attribute} values must be a sequence, got {values!r}") from None
        buffer = <char*>PyMem_Malloc(max(len(items), 1) * sizeof(_Element))
        if buffer == NULL:
            raise MemoryError()
        try:
            _pack(c_type, attr_type, items, attribute, buffer)
            check(cudnnBackendSetAttribute(self._desc, c_name, <cudnnBackendAttributeType_t>c_type,
                                           len(items), buffer), call)
        finally:
            PyMem_Free(buffer)
        if c_type == CUDNN_TYPE_HANDLE or c_type == CUDNN_TYPE_BACKEND_DESCRIPTOR:
            self._held[attribute] = tuple(items)

    def get(self, attribute, attr_type, count=None, kind=None):
        """cudnnBackendGetAttribute: up to count values of attr_type (all of them when None:
        cuDNN is asked how many there are first).

        BACKEND_DESCRIPTOR values need `kind`: descriptors of it are created for cuDNN to fill,
        and come back finalized. CHAR values come back as [bytes], exactly the bytes cuDNN
        wrote.
        """
        cdef cudnnBackendAttributeName_t c_name = <cudnnBackendAttributeName_t>_lookup(
            BACKEND_ATTRIBUTES, attribute, "backend attribute")
        cdef cudnnBackendAttributeType_t c_type = <cudnnBackendAttributeType_t>_lookup(
            BACKEND_TYPES, attr_type, "backend attribute type")
        cdef str call = f"cudnnBackendGetAttribute({self._kind}, {attribute})"
        cdef int64_t requested = 0
        cdef int64_t returned = 0
        cdef cudnnStatus_t status
        cdef Py_ssize_t i
        cdef BackendDescriptor child
        if (c_type == CUDNN_TYPE_BACKEND_DESCRIPTOR) != (kind is not None):
            raise ValueError(f"{attribute}: kind= is needed for BACKEND_DESCRIPTOR values, and "
                             f"only for them (attr_type {attr_type!r}, kind {kind!r})")
        if kind is not None:
            _lookup(BACKEND_KINDS, kind, "backend descriptor kind")
        if count is not None:
            requested = to_size(count, "count")
        else:
            status = cudnnBackendGetAttribute(self._desc, c_name, c_type, 0, &requested, NULL)
            if status != CUDNN_STATUS_SUCCESS:
                error = _error(status, call)
                if c_type == CUDNN_TYPE_BACKEND_DESCRIPTOR:
                    error.add_note("cuDNN counts no single descriptor (an operation's tensors, "
                                   "a config's engine): read those with count=1")
                raise error
        children = [BackendDescriptor(kind) for _ in range(requested)] if kind is not None else []
        cdef char* buffer = <char*>PyMem_Malloc(max(requested, 1) * sizeof(_Element))
        if buffer == NULL:
            raise MemoryError()
        try:
            for i in range(len(children)):
                (<cudnnBackendDescriptor_t*>buffer)[i] = (<BackendDescriptor>children[i])._desc
            check(cudnnBackendGetAttribute(self._desc, c_name, c_type, requested, &returned,
                                           buffer), call)
            count = min(returned, requested)
            if c_type == CUDNN_TYPE_CHAR:
                return [buffer[:count]]
            if c_type == CUDNN_TYPE_HANDLE:
                return self._handles(attribute, <cudnnHandle_t*>buffer, count)
            if c_type != CUDNN_TYPE_BACKEND_DESCRIPTOR:
                return _unpack(c_type, buffer, count)
        finally:
            PyMem_Free(buffer)
        for child in children[:count]:
            child._finalized = True
            child._source = self
        return children[:count]

    cdef list _handles(self, str attribute, const cudnnHandle_t* pointers, Py_ssize_t count):
        # A Handle object cannot be made for a pointer it does not own: give back the ones set.
        cdef Py_ssize_t i
        held = {<uintptr_t>(<Handle>h)._handle: h for h in self._held.get(attribute, ())}
        addresses = [<uintptr_t>pointers[i] for i in range(count)]
        if not all(address in held for address in addresses):
            raise ValueError(f"{attribute}: cuDNN reports a handle this descriptor was not "
                             "given with set()")
        return [held[address] for address in addresses]

    def finalize(self):
        """cudnnBackendFinalize (without the GIL: plans may compile kernels for a second)."""
        cdef cudnnStatus_t status
        with nogil:
            status = cudnnBackendFinalize(self._desc)
        check(status, f"cudnnBackendFinalize({self._kind})")
        self._finalized = True

    def __repr__(self):
        return f"BackendDescriptor({self._kind!r}, finalized={self._finalized})"


cdef int _expect_plan(BackendDescriptor plan) except -1:
    if plan._kind != "EXECUTION_PLAN" or not plan._finalized:
        raise ValueError(f"plan must be a finalized EXECUTION_PLAN descriptor, got {plan!r}")
    return 0


def backend_execute(Handle handle not None, BackendDescriptor plan not None,
                    BackendDescriptor variant_pack not None):
    """cudnnBackendExecute: enqueue the plan on the handle's stream with these pointers."""
    _expect_plan(plan)
    cdef cudnnHandle_t h = handle._live()
    cdef cudnnStatus_t status
    with nogil:
        status = cudnnBackendExecute(h, plan._desc, variant_pack._desc)
    check(status, "cudnnBackendExecute")


cdef cudnnStatus_t _execute_with_pack(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                      int64_t count, const int64_t* uids, void** pointers,
                                      void* workspace, const char** failed) noexcept nogil:
    """Build a variant pack, execute the plan with it, destroy it; failed names the call that
    did not succeed, if any."""
    cdef cudnnBackendDescriptor_t pack = NULL
    failed[0] = "cudnnBackendCreateDescriptor(VARIANT_PACK)"
    cdef cudnnStatus_t status = cudnnBackendCreateDescriptor(
        CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack)
    if status != CUDNN_STATUS_SUCCESS:
        return status
    failed[0] = "cudnnBackendSetAttribute(VARIANT_PACK, VARIANT_PACK_UNIQUE_IDS)"
    status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                      count, uids)
    if status == CUDNN_STATUS_SUCCESS:
        failed[0] = "cudnnBackendSetAttribute(VARIANT_PACK, VARIANT_PACK_DATA_POINTERS)"
        status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                          CUDNN_TYPE_VOID_PTR, count, pointers)
    if status == CUDNN_STATUS_SUCCESS:
        failed[0] = "cudnnBackendSetAttribute(VARIANT_PACK, VARIANT_PACK_WORKSPACE)"
        status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                          CUDNN_TYPE_VOID_PTR, 1, &workspace)
    if status == CUDNN_STATUS_SUCCESS:
        failed[0] = "cudnnBackendFinalize(VARIANT_PACK)"
        status = cudnnBackendFinalize(pack)
    if status == CUDNN_STATUS_SUCCESS:
        failed[0] = "cudnnBackendExecute"
        status = cudnnBackendExecute(handle, plan, pack)
    cudnnBackendDestroyDescriptor(pack)
    return status


def execute_plan(Handle handle not None, BackendDescriptor plan not None, tuple uids not None,
                 tuple pointers not None, workspace):
    """Run a finalized plan with device pointers for its tensors' unique ids, in one call.

    The variant pack (uids, pointers, workspace) is built, used and destroyed in C, so that a
    micro-batch costs one Python->C call; at most 8 tensors.
    """
    cdef int64_t c_uids[_MAX_TENSORS]
    cdef void* c_pointers[_MAX_TENSORS]
    cdef Py_ssize_t count = len(uids)
    cdef Py_ssize_t i
    if count != len(pointers) or count > _MAX_TENSORS:
        raise ValueError(f"uids {uids} and pointers {pointers} must be as long as each other, "
                         f"at most {_MAX_TENSORS}")
    _expect_plan(plan)
    try:
        for i in range(count):
            c_uids[i] = uids[i]
            c_pointers[i] = <void*><uintptr_t>pointers[i]
    except (TypeError, OverflowError):
        raise TypeError(f"uids {uids} must be int64s and pointers {pointers} addresses") from None
    cdef void* c_workspace = <void*>to_address(workspace, "workspace")
    cdef cudnnHandle_t h = handle._live()
    cdef const char* failed = NULL
    cdef cudnnStatus_t status
    with nogil:
        status = _execute_with_pack(h, plan._desc, count, c_uids, c_pointers, c_workspace,
                                    &failed)
    if status != CUDNN_STATUS_SUCCESS:
        raise _error(status, failed.decode())
