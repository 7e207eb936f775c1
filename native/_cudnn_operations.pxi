# The calls a framework needs beside the convolutions: the bias gradient, tensor arithmetic,
# activation, pooling and softmax. Most have one of two shapes, each written once with only the
# C call chosen per operation: out = alpha * op(in) + beta * out (`_apply`), and a gradient
# dx = alpha * op'(y, dy and, but for softmax, x) + beta * dx (`_gradient`).

cimport cudnn as c

from convert cimport to_address

cdef enum _Operation:
    _ADD_TENSOR
    _BACKWARD_BIAS
    _ACTIVATION
    _POOLING
    _SOFTMAX

cdef tuple _APPLY_CALLS = ("cudnnAddTensor", "cudnnConvolutionBackwardBias",
                           "cudnnActivationForward", "cudnnPoolingForward", "cudnnSoftmaxForward")
cdef tuple _GRADIENT_CALLS = (None, None, "cudnnActivationBackward", "cudnnPoolingBackward",
                              "cudnnSoftmaxBackward")


# Which variant of an operation: its activation or pooling descriptor, or softmax's algorithm
# and mode.
cdef struct _Variant:
    void* desc
    int algorithm
    int mode


cdef _Variant _described(void* desc) noexcept:
    return _Variant(desc, 0, 0)


cdef _Variant _softmax(object algorithm, object mode) except *:
    return _Variant(NULL, _lookup(SOFTMAX_ALGORITHMS, algorithm, "softmax algorithm"),
                    _lookup(SOFTMAX_MODES, mode, "softmax mode"))


cdef int _apply(_Operation op, _Variant variant, Handle handle, double alpha,
                TensorDescriptor in_desc, object source, str source_name, double beta,
                TensorDescriptor out_desc, object target, str target_name) except -1:
    cdef _Call call
    _start(&call, handle, alpha, beta, out_desc._dtype)
    cdef const void* src = <const void*>to_address(source, source_name)
    cdef void* dst = <void*>to_address(target, target_name)
    cdef c.cudnnStatus_t status
    with nogil:
        if op == _ADD_TENSOR:
            status = c.cudnnAddTensor(call.handle, &call.alpha, in_desc._desc, src, &call.beta,
                                      out_desc._desc, dst)
        elif op == _BACKWARD_BIAS:
            status = c.cudnnConvolutionBackwardBias(call.handle, &call.alpha, in_desc._desc, src,
                                                    &call.beta, out_desc._desc, dst)
        elif op == _ACTIVATION:
            status = c.cudnnActivationForward(call.handle, variant.desc, &call.alpha,
                                              in_desc._desc, src, &call.beta, out_desc._desc,
                                              dst)
        elif op == _POOLING:
            status = c.cudnnPoolingForward(call.handle, variant.desc, &call.alpha, in_desc._desc,
                                           src, &call.beta, out_desc._desc, dst)
        else:
            status = c.cudnnSoftmaxForward(
                call.handle, <c.cudnnSoftmaxAlgorithm_t>variant.algorithm,
                <c.cudnnSoftmaxMode_t>variant.mode, &call.alpha, in_desc._desc, src, &call.beta,
                out_desc._desc, dst)
    check(status, _APPLY_CALLS[op])


cdef int _gradient(_Operation op, _Variant variant, Handle handle, double alpha,
                   TensorDescriptor y_desc, y, TensorDescriptor dy_desc, dy,
                   TensorDescriptor x_desc, x, double beta, TensorDescriptor dx_desc,
                   dx) except -1:
    # x_desc is None for softmax, which needs no x.
    cdef _Call call
    _start(&call, handle, alpha, beta, dx_desc._dtype)
    cdef const void* y_ptr = <const void*>to_address(y, "y")
    cdef const void* dy_ptr = <const void*>to_address(dy, "dy")
    cdef const void* x_ptr = NULL
    if x_desc is not None:
        x_ptr = <const void*>to_address(x, "x")
    cdef void* dx_ptr = <void*>to_address(dx, "dx")
    cdef c.cudnnStatus_t status
    with nogil:
        if op == _ACTIVATION:
            status = c.cudnnActivationBackward(call.handle, variant.desc, &call.alpha,
                                               y_desc._desc, y_ptr, dy_desc._desc, dy_ptr,
                                               x_desc._desc, x_ptr, &call.beta, dx_desc._desc,
                                               dx_ptr)
        elif op == _POOLING:
            status = c.cudnnPoolingBackward(call.handle, variant.desc, &call.alpha, y_desc._desc,
                                            y_ptr, dy_desc._desc, dy_ptr, x_desc._desc, x_ptr,
                                            &call.beta, dx_desc._desc, dx_ptr)
        else:
            status = c.cudnnSoftmaxBackward(
                call.handle, <c.cudnnSoftmaxAlgorithm_t>variant.algorithm,
                <c.cudnnSoftmaxMode_t>variant.mode, &call.alpha, y_desc._desc, y_ptr,
                dy_desc._desc, dy_ptr, &call.beta, dx_desc._desc, dx_ptr)
    check(status, _GRADIENT_CALLS[op])


# --- bias and tensor arithmetic --------------------------------------------------------------

def convolution_backward_bias(Handle handle not None, double alpha,
                              TensorDescriptor dy_desc not None, dy, double beta,
                              TensorDescriptor db_desc not None, db):
    """db = alpha * sum of dy over all but the channel dim + beta * db."""
    _apply(_BACKWARD_BIAS, _described(NULL), handle, alpha, dy_desc, dy, "dy", beta, db_desc,
           db, "db")


def add_tensor(Handle handle not None, double alpha, TensorDescriptor a_desc not None, a,
               double beta, TensorDescriptor c_desc not None, c):
    """c = alpha * a + beta * c, broadcasting a's size-1 dims (e.g. a bias of shape 1,C,1,1).

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: a does not broadcast to c, or their dtypes differ.
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
    _apply(_ADD_TENSOR, _described(NULL), handle, alpha, a_desc, a, "a", beta, c_desc, c, "c")


def scale_tensor(Handle handle not None, TensorDescriptor y_desc not None, y, double alpha):
    """y = alpha * y.

    Raises:
        TypeError, ValueError: y is not a non-negative int, or the handle was destroyed.
        CudnnBadParamError: cuDNN refuses y's descriptor.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
    cdef _Call call
    _start(&call, handle, alpha, 0.0, y_desc._dtype)
    cdef void* y_ptr = <void*>to_address(y, "y")
    cdef c.cudnnStatus_t status
    with nogil:
        status = c.cudnnScaleTensor(call.handle, y_desc._desc, y_ptr, &call.alpha)
    check(status, "cudnnScaleTensor")


# --- activation, pooling, softmax ------------------------------------------------------------

def activation_forward(Handle handle not None, ActivationDescriptor activation_desc not None,
                       double alpha, TensorDescriptor x_desc not None, x, double beta,
                       TensorDescriptor y_desc not None, y):
    """y = alpha * activation(x) + beta * y.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: x and y differ in dims or dtype.
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
    _apply(_ACTIVATION, _described(activation_desc._desc), handle, alpha, x_desc, x, "x", beta,
           y_desc, y, "y")


def activation_backward(Handle handle not None, ActivationDescriptor activation_desc not None,
                        double alpha, TensorDescriptor y_desc not None, y,
                        TensorDescriptor dy_desc not None, dy, TensorDescriptor x_desc not None,
                        x, double beta, TensorDescriptor dx_desc not None, dx):
    """dx = alpha * (the activation's gradient at x, applied to dy) + beta * dx.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: y, dy, x and dx differ in dims or dtype.
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
    _gradient(_ACTIVATION, _described(activation_desc._desc), handle, alpha, y_desc, y,
              dy_desc, dy, x_desc, x, beta, dx_desc, dx)


def pooling_forward(Handle handle not None, PoolingDescriptor pooling_desc not None,
                    double alpha, TensorDescriptor x_desc not None, x, double beta,
                    TensorDescriptor y_desc not None, y):
    """y = alpha * pool(x) + beta * y.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: y's dims are not the pooled dims of x, or the dtypes differ.
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
    _apply(_POOLING, _described(pooling_desc._desc), handle, alpha, x_desc, x, "x", beta,
           y_desc, y, "y")


def pooling_backward(Handle handle not None, PoolingDescriptor pooling_desc not None,
                     double alpha, TensorDescriptor y_desc not None, y,
                     TensorDescriptor dy_desc not None, dy, TensorDescriptor x_desc not None, x,
                     double beta, TensorDescriptor dx_desc not None, dx):
    """dx = alpha * (the pooling's gradient, from y, dy and x) + beta * dx.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, or the handle was
            destroyed.
        CudnnBadParamError: y and dy are not the pooled dims of x and dx, or the dtypes differ.
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
    _gradient(_POOLING, _described(pooling_desc._desc), handle, alpha, y_desc, y, dy_desc, dy,
              x_desc, x, beta, dx_desc, dx)


def softmax_forward(Handle handle not None, algorithm, mode, double alpha,
                    TensorDescriptor x_desc not None, x, double beta,
                    TensorDescriptor y_desc not None, y):
    """Softmax over C ("channel", per position) or over C*H*W ("instance", per sample).

    `algorithm` is "fast", "accurate" or "log"; y = alpha * softmax(x) + beta * y.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, the algorithm or mode is
            unknown, or the handle was destroyed.
        CudnnBadParamError: x and y differ in dims or dtype.
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
    _apply(_SOFTMAX, _softmax(algorithm, mode), handle, alpha, x_desc, x, "x", beta, y_desc, y,
           "y")


def softmax_backward(Handle handle not None, algorithm, mode, double alpha,
                     TensorDescriptor y_desc not None, y, TensorDescriptor dy_desc not None, dy,
                     double beta, TensorDescriptor dx_desc not None, dx):
    """dx = alpha * (softmax's gradient, from its output y and dy) + beta * dx; `algorithm`
    and `mode` as for softmax_forward.

    Raises:
        TypeError, ValueError: an address is not a non-negative int, the algorithm or mode is
            unknown, or the handle was destroyed.
        CudnnBadParamError: y, dy and dx differ in dims or dtype.
        CudnnNotSupportedError: this cuDNN or device cannot run the combination.
        CudnnExecutionFailedError: the kernel failed on the device.
    """
    _gradient(_SOFTMAX, _softmax(algorithm, mode), handle, alpha, y_desc, y, dy_desc, dy, None,
              None, beta, dx_desc, dx)
