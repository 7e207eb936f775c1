# The legacy API's descriptors: tensors, filters, convolutions, activations and pooling.

cimport cudnn as c
from libc.stdint cimport uintptr_t


cdef class TensorDescriptor:
    """An Nd tensor: dtype name, logical dims (N, C, *spatial) and element strides.

    Raises:
        TypeError, ValueError: an argument is not of its kind, or names an unknown dtype.
        CudnnBadParamError: cuDNN rejects the dims or strides (a dim below 1, for instance).
    """

    cdef c.cudnnTensorDescriptor_t _desc
    cdef c.cudnnDataType_t _dtype
    cdef int _rank

    def __cinit__(self, dtype, dims, strides):
        cdef int c_dims[c.CUDNN_DIM_MAX]
        cdef int c_strides[c.CUDNN_DIM_MAX]
        self._dtype = <c.cudnnDataType_t>_lookup(DTYPES, dtype, "dtype")
        self._rank = _ints(dims, c_dims, c.CUDNN_DIM_MAX, "dims")
        if _ints(strides, c_strides, c.CUDNN_DIM_MAX, "strides") != self._rank:
            raise ValueError(f"dims {tuple(dims)} and strides {tuple(strides)} differ in length")
        check(c.cudnnCreateTensorDescriptor(&self._desc), "cudnnCreateTensorDescriptor")
        check(c.cudnnSetTensorNdDescriptor(self._desc, self._dtype, self._rank, c_dims, c_strides),
              "cudnnSetTensorNdDescriptor")

    def __dealloc__(self):
        if self._desc != NULL:
            c.cudnnDestroyTensorDescriptor(self._desc)

    cdef tuple _get(self):
        cdef c.cudnnDataType_t dtype
        cdef int rank = 0
        cdef int dims[c.CUDNN_DIM_MAX]
        cdef int strides[c.CUDNN_DIM_MAX]
        check(c.cudnnGetTensorNdDescriptor(self._desc, c.CUDNN_DIM_MAX, &dtype, &rank, dims,
                                           strides),
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

    cdef c.cudnnFilterDescriptor_t _desc
    cdef c.cudnnDataType_t _dtype

    def __cinit__(self, dtype, layout, dims):
        cdef int c_dims[c.CUDNN_DIM_MAX]
        self._dtype = <c.cudnnDataType_t>_lookup(DTYPES, dtype, "dtype")
        if layout not in FILTER_LAYOUTS:
            raise ValueError(
                f"unknown layout {layout!r}; expected one of {', '.join(FILTER_LAYOUTS)}"
            )
        cdef int fmt, rank
        fmt, rank = FILTER_LAYOUTS[layout]
        if _ints(dims, c_dims, c.CUDNN_DIM_MAX, "dims") != rank:
            raise ValueError(f"layout {layout} needs {rank} dims, got {tuple(dims)}")
        check(c.cudnnCreateFilterDescriptor(&self._desc), "cudnnCreateFilterDescriptor")
        check(c.cudnnSetFilterNdDescriptor(self._desc, self._dtype, <c.cudnnTensorFormat_t>fmt,
                                           rank, c_dims),
              "cudnnSetFilterNdDescriptor")

    def __dealloc__(self):
        if self._desc != NULL:
            c.cudnnDestroyFilterDescriptor(self._desc)

    cdef tuple _get(self):
        cdef c.cudnnDataType_t dtype
        cdef c.cudnnTensorFormat_t fmt
        cdef int rank = 0
        cdef int dims[c.CUDNN_DIM_MAX]
        check(c.cudnnGetFilterNdDescriptor(self._desc, c.CUDNN_DIM_MAX, &dtype, &fmt, &rank, dims),
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

    cdef c.cudnnConvolutionDescriptor_t _desc

    def __cinit__(self, padding, stride, dilation, mode="cross_correlation",
                  compute_dtype="float32", int groups=1, math_type="default"):
        cdef int c_padding[c.CUDNN_DIM_MAX]
        cdef int c_stride[c.CUDNN_DIM_MAX]
        cdef int c_dilation[c.CUDNN_DIM_MAX]
        cdef int max_len = c.CUDNN_DIM_MAX - 2
        cdef int rank = _ints(padding, c_padding, max_len, "padding")
        if (_ints(stride, c_stride, max_len, "stride") != rank
                or _ints(dilation, c_dilation, max_len, "dilation") != rank):
            raise ValueError(f"padding {tuple(padding)}, stride {tuple(stride)} and dilation "
                             f"{tuple(dilation)} must have one entry per spatial dim each")
        cdef c.cudnnConvolutionMode_t c_mode = <c.cudnnConvolutionMode_t>_lookup(
            CONVOLUTION_MODES, mode, "mode")
        cdef c.cudnnDataType_t c_compute = <c.cudnnDataType_t>_lookup(
            DTYPES, compute_dtype, "compute_dtype")
        cdef c.cudnnMathType_t c_math = <c.cudnnMathType_t>_lookup(
            MATH_TYPES, math_type, "math_type")
        check(c.cudnnCreateConvolutionDescriptor(&self._desc), "cudnnCreateConvolutionDescriptor")
        check(c.cudnnSetConvolutionNdDescriptor(self._desc, rank, c_padding, c_stride,
                                                c_dilation, c_mode, c_compute),
              "cudnnSetConvolutionNdDescriptor")
        check(c.cudnnSetConvolutionGroupCount(self._desc, groups), "cudnnSetConvolutionGroupCount")
        check(c.cudnnSetConvolutionMathType(self._desc, c_math), "cudnnSetConvolutionMathType")

    def __dealloc__(self):
        if self._desc != NULL:
            c.cudnnDestroyConvolutionDescriptor(self._desc)

    cdef tuple _get(self):
        cdef int rank = 0
        cdef int padding[c.CUDNN_DIM_MAX]
        cdef int stride[c.CUDNN_DIM_MAX]
        cdef int dilation[c.CUDNN_DIM_MAX]
        cdef c.cudnnConvolutionMode_t mode
        cdef c.cudnnDataType_t compute
        check(c.cudnnGetConvolutionNdDescriptor(self._desc, c.CUDNN_DIM_MAX - 2, &rank, padding,
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
        check(c.cudnnGetConvolutionGroupCount(self._desc, &groups), "cudnnGetConvolutionGroupCount")
        return groups

    @property
    def math_type(self):
        cdef c.cudnnMathType_t math
        check(c.cudnnGetConvolutionMathType(self._desc, &math), "cudnnGetConvolutionMathType")
        return _MATH_TYPE_NAMES[math]

    def set_math_type(self, math_type):
        """Write a candidate's math type before running it (cuDNN does not do this itself)."""
        check(c.cudnnSetConvolutionMathType(
                  self._desc, <c.cudnnMathType_t>_lookup(MATH_TYPES, math_type, "math_type")),
              "cudnnSetConvolutionMathType")

    def output_dims(self, TensorDescriptor x_desc not None, FilterDescriptor w_desc not None):
        """The forward output dims (N, K, *spatial) for input x_desc and filter w_desc."""
        cdef int dims[c.CUDNN_DIM_MAX]
        check(c.cudnnGetConvolutionNdForwardOutputDim(self._desc, x_desc._desc, w_desc._desc,
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

    cdef c.cudnnActivationDescriptor_t _desc

    def __cinit__(self, mode, double coef=0.0):
        cdef c.cudnnActivationMode_t c_mode = <c.cudnnActivationMode_t>_lookup(
            ACTIVATIONS, mode, "activation mode")
        check(c.cudnnCreateActivationDescriptor(&self._desc), "cudnnCreateActivationDescriptor")
        check(c.cudnnSetActivationDescriptor(self._desc, c_mode, c.CUDNN_NOT_PROPAGATE_NAN, coef),
              "cudnnSetActivationDescriptor")

    def __dealloc__(self):
        if self._desc != NULL:
            c.cudnnDestroyActivationDescriptor(self._desc)

    cdef tuple _get(self):
        cdef c.cudnnActivationMode_t mode
        cdef c.cudnnNanPropagation_t nan
        cdef double coef = 0
        check(c.cudnnGetActivationDescriptor(self._desc, &mode, &nan, &coef),
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

    cdef c.cudnnPoolingDescriptor_t _desc

    def __cinit__(self, mode, window, padding, stride):
        cdef int c_window[c.CUDNN_DIM_MAX]
        cdef int c_padding[c.CUDNN_DIM_MAX]
        cdef int c_stride[c.CUDNN_DIM_MAX]
        cdef int max_len = c.CUDNN_DIM_MAX - 2
        cdef c.cudnnPoolingMode_t c_mode = <c.cudnnPoolingMode_t>_lookup(
            POOLING_MODES, mode, "pooling mode")
        cdef int rank = _ints(window, c_window, max_len, "window")
        if (_ints(padding, c_padding, max_len, "padding") != rank
                or _ints(stride, c_stride, max_len, "stride") != rank):
            raise ValueError(f"window {tuple(window)}, padding {tuple(padding)} and stride "
                             f"{tuple(stride)} must have one entry per spatial dim each")
        check(c.cudnnCreatePoolingDescriptor(&self._desc), "cudnnCreatePoolingDescriptor")
        check(c.cudnnSetPoolingNdDescriptor(self._desc, c_mode, c.CUDNN_NOT_PROPAGATE_NAN, rank,
                                            c_window, c_padding, c_stride),
              "cudnnSetPoolingNdDescriptor")

    def __dealloc__(self):
        if self._desc != NULL:
            c.cudnnDestroyPoolingDescriptor(self._desc)

    cdef tuple _get(self):
        cdef c.cudnnPoolingMode_t mode
        cdef c.cudnnNanPropagation_t nan
        cdef int rank = 0
        cdef int window[c.CUDNN_DIM_MAX]
        cdef int padding[c.CUDNN_DIM_MAX]
        cdef int stride[c.CUDNN_DIM_MAX]
        check(c.cudnnGetPoolingNdDescriptor(self._desc, c.CUDNN_DIM_MAX - 2, &mode, &nan, &rank,
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
        cdef int dims[c.CUDNN_DIM_MAX]
        check(c.cudnnGetPoolingNdForwardOutputDim(self._desc, x_desc._desc, x_desc._rank, dims),
              "cudnnGetPoolingNdForwardOutputDim")
        return _tuple(dims, x_desc._rank)

    def __repr__(self):
        mode, window, padding, stride = self._get()
        return (f"PoolingDescriptor({mode!r}, window={window}, padding={padding}, "
                f"stride={stride})")
