# The legacy convolution kernels: how many algorithms each has, Find, workspace size and run,
# each written once over the kernel; only the C call itself is chosen per kernel.

import collections

cimport cudnn as c
from cpython.mem cimport PyMem_Free, PyMem_Malloc

from convert cimport to_address, to_size

AlgoPerf = collections.namedtuple(
    "AlgoPerf", "algo status status_name time_ms memory deterministic math_type",
    module=__name__,
)
AlgoPerf.__doc__ = """One row of the algorithm list cuDNN's Find measured.

Rows whose status is not 0 (CUDNN_STATUS_SUCCESS) are algorithms that cannot run this problem.
"""

# Each kernel reads two tensors and writes a third; in cuDNN's argument order forward reads x
# and w and writes y, backward_data reads w and dy and writes dx, backward_filter reads x and dy
# and writes dw. Arguments are named by role (a, b -> out) and pointers converted under these
# names, so that an error says which tensor it was.
cdef enum _Kernel:
    _FORWARD
    _BACKWARD_DATA
    _BACKWARD_FILTER

cdef dict _KERNELS = {
    "forward": _FORWARD,
    "backward_data": _BACKWARD_DATA,
    "backward_filter": _BACKWARD_FILTER,
}
cdef tuple _OPERANDS = (("x", "w", "y"), ("w", "dy", "dx"), ("x", "dy", "dw"))
cdef tuple _FILTER_AT = (1, 0, 2)  # which operand is the filter
cdef tuple _C_KERNELS = ("Forward", "BackwardData", "BackwardFilter")  # as cuDNN's calls say


cdef struct _Operands:
    void* a_desc
    void* b_desc
    void* out_desc
    c.cudnnDataType_t out_dtype
    const void* a
    const void* b
    void* out


cdef void* _operand_desc(object desc, bint is_filter, str role, object kernel,
                         c.cudnnDataType_t* dtype) except NULL:
    """The C descriptor of one operand (its data type into dtype, unless NULL)."""
    if is_filter and isinstance(desc, FilterDescriptor):
        if dtype != NULL:
            dtype[0] = (<FilterDescriptor>desc)._dtype
        return (<FilterDescriptor>desc)._desc
    if not is_filter and isinstance(desc, TensorDescriptor):
        if dtype != NULL:
            dtype[0] = (<TensorDescriptor>desc)._dtype
        return (<TensorDescriptor>desc)._desc
    expected = "FilterDescriptor" if is_filter else "TensorDescriptor"
    raise TypeError(f"{role}_desc of a {kernel} convolution must be a {expected}, "
                    f"got {type(desc).__name__}")


cdef int _kernel_descriptors(_Operands* ops, object kernel, object a_desc, object b_desc,
                             object out_desc) except -1:
    """The kernel's number, with its operands' descriptors checked into ops."""
    cdef int k = _lookup(_KERNELS, kernel, "kernel")
    role_a, role_b, role_out = _OPERANDS[k]
    filter_at = _FILTER_AT[k]
    ops.a_desc = _operand_desc(a_desc, filter_at == 0, role_a, kernel, NULL)
    ops.b_desc = _operand_desc(b_desc, filter_at == 1, role_b, kernel, NULL)
    ops.out_desc = _operand_desc(out_desc, filter_at == 2, role_out, kernel, &ops.out_dtype)
    return k


cdef int _kernel_pointers(_Operands* ops, _Kernel kernel, a, b, out) except -1:
    role_a, role_b, role_out = _OPERANDS[kernel]
    ops.a = <const void*>to_address(a, role_a)
    ops.b = <const void*>to_address(b, role_b)
    ops.out = <void*>to_address(out, role_out)
    return 0


cdef inline int _check_kernel_call(c.cudnnStatus_t status, str call, _Kernel kernel) except -1:
    # The call's name ("cudnnConvolution{}", ...) is made only when it failed: runs are hot.
    if status != c.CUDNN_STATUS_SUCCESS:
        raise _error(status, call.format(_C_KERNELS[kernel]))
    return 0


def algorithm_max_count(Handle handle not None, kernel):
    """How many algorithms `kernel` has: the `requested` that lists them all."""
    cdef int count = 0
    cdef c.cudnnStatus_t status
    cdef _Kernel k = <_Kernel>_lookup(_KERNELS, kernel, "kernel")
    cdef c.cudnnHandle_t h = handle._live()
    if k == _FORWARD:
        status = c.cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count)
    elif k == _BACKWARD_DATA:
        status = c.cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count)
    else:
        status = c.cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count)
    _check_kernel_call(status, "cudnnGetConvolution{}AlgorithmMaxCount", k)
    return count


# --- Find ------------------------------------------------------------------------------------

ctypedef fused _perf_t:
    c.cudnnConvolutionFwdAlgoPerf_t
    c.cudnnConvolutionBwdDataAlgoPerf_t
    c.cudnnConvolutionBwdFilterAlgoPerf_t

# Room for one row of any kernel's list (cuDNN writes rows of the kernel's own struct).
ctypedef union _AnyPerf:
    c.cudnnConvolutionFwdAlgoPerf_t forward
    c.cudnnConvolutionBwdDataAlgoPerf_t backward_data
    c.cudnnConvolutionBwdFilterAlgoPerf_t backward_filter


cdef list _perf_list(_perf_t* perf, int count):
    return [
        AlgoPerf(<int>perf[i].algo, <int>perf[i].status,
                 c.cudnnGetErrorString(perf[i].status).decode(), perf[i].time, perf[i].memory,
                 perf[i].determinism == c.CUDNN_DETERMINISTIC,
                 _MATH_TYPE_NAMES.get(<int>perf[i].mathType, str(<int>perf[i].mathType)))
        for i in range(count)
    ]


cdef list _kernel_perf_list(_Kernel kernel, void* perf, int count):
    if kernel == _FORWARD:
        return _perf_list(<c.cudnnConvolutionFwdAlgoPerf_t*>perf, count)
    if kernel == _BACKWARD_DATA:
        return _perf_list(<c.cudnnConvolutionBwdDataAlgoPerf_t*>perf, count)
    return _perf_list(<c.cudnnConvolutionBwdFilterAlgoPerf_t*>perf, count)


def find_algorithm_ex(Handle handle not None, kernel, a_desc, a, b_desc, b,
                      ConvolutionDescriptor conv_desc not None, out_desc, out, int requested,
                      workspace, workspace_bytes):
    """cudnnFind<kernel>AlgorithmEx: time `kernel`'s algorithms on the caller's buffers (out
    is overwritten); rows that ran come first, fastest first."""
    cdef _Operands ops
    cdef _Kernel k = <_Kernel>_kernel_descriptors(&ops, kernel, a_desc, b_desc, out_desc)
    cdef c.cudnnHandle_t h = handle._live()
    _kernel_pointers(&ops, k, a, b, out)
    cdef void* ws_ptr = <void*>to_address(workspace, "workspace")
    cdef size_t ws_bytes = to_size(workspace_bytes, "workspace_bytes")
    if requested < 1:
        raise ValueError(f"requested must be >= 1, got {requested}")
    cdef void* perf = PyMem_Malloc(requested * sizeof(_AnyPerf))
    if perf == NULL:
        raise MemoryError()
    cdef int returned = 0
    cdef c.cudnnStatus_t status
    try:
        with nogil:
            if k == _FORWARD:
                status = c.cudnnFindConvolutionForwardAlgorithmEx(
                    h, ops.a_desc, ops.a, ops.b_desc, ops.b, conv_desc._desc,
                    ops.out_desc, ops.out, requested, &returned,
                    <c.cudnnConvolutionFwdAlgoPerf_t*>perf, ws_ptr, ws_bytes)
            elif k == _BACKWARD_DATA:
                status = c.cudnnFindConvolutionBackwardDataAlgorithmEx(
                    h, ops.a_desc, ops.a, ops.b_desc, ops.b, conv_desc._desc,
                    ops.out_desc, ops.out, requested, &returned,
                    <c.cudnnConvolutionBwdDataAlgoPerf_t*>perf, ws_ptr, ws_bytes)
            else:
                status = c.cudnnFindConvolutionBackwardFilterAlgorithmEx(
                    h, ops.a_desc, ops.a, ops.b_desc, ops.b, conv_desc._desc,
                    ops.out_desc, ops.out, requested, &returned,
                    <c.cudnnConvolutionBwdFilterAlgoPerf_t*>perf, ws_ptr, ws_bytes)
        _check_kernel_call(status, "cudnnFindConvolution{}AlgorithmEx", k)
        return _kernel_perf_list(k, perf, returned)
    finally:
        PyMem_Free(perf)


# --- workspace size and run ------------------------------------------------------------------

def workspace_size(Handle handle not None, kernel, a_desc, b_desc,
                   ConvolutionDescriptor conv_desc not None, out_desc, algo):
    """The workspace bytes `kernel`'s algorithm `algo` needs for these descriptors."""
    cdef _Operands ops
    cdef _Kernel k = <_Kernel>_kernel_descriptors(&ops, kernel, a_desc, b_desc, out_desc)
    cdef c.cudnnHandle_t h = handle._live()
    cdef int c_algo = _algorithm(algo, kernel)
    cdef size_t size = 0
    cdef c.cudnnStatus_t status
    if k == _FORWARD:
        status = c.cudnnGetConvolutionForwardWorkspaceSize(
            h, ops.a_desc, ops.b_desc, conv_desc._desc, ops.out_desc,
            <c.cudnnConvolutionFwdAlgo_t>c_algo, &size)
    elif k == _BACKWARD_DATA:
        status = c.cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, ops.a_desc, ops.b_desc, conv_desc._desc, ops.out_desc,
            <c.cudnnConvolutionBwdDataAlgo_t>c_algo, &size)
    else:
        status = c.cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, ops.a_desc, ops.b_desc, conv_desc._desc, ops.out_desc,
            <c.cudnnConvolutionBwdFilterAlgo_t>c_algo, &size)
    _check_kernel_call(status, "cudnnGetConvolution{}WorkspaceSize", k)
    return size


def convolution(Handle handle not None, kernel, double alpha, a_desc, a, b_desc, b,
                ConvolutionDescriptor conv_desc not None, algo, workspace, workspace_bytes,
                double beta, out_desc, out):
    """One legacy convolution: out = alpha * kernel(a, b) + beta * out (y = conv(x, w);
    dx = conv_transpose(dy, w); dw = dconv(x, dy))."""
    cdef _Operands ops
    cdef _Kernel k = <_Kernel>_kernel_descriptors(&ops, kernel, a_desc, b_desc, out_desc)
    cdef _Call call
    _start(&call, handle, alpha, beta, ops.out_dtype)
    cdef int c_algo = _algorithm(algo, kernel)
    _kernel_pointers(&ops, k, a, b, out)
    cdef void* ws_ptr = <void*>to_address(workspace, "workspace")
    cdef size_t ws_bytes = to_size(workspace_bytes, "workspace_bytes")
    cdef c.cudnnStatus_t status
    with nogil:
        if k == _FORWARD:
            status = c.cudnnConvolutionForward(
                call.handle, &call.alpha, ops.a_desc, ops.a, ops.b_desc, ops.b, conv_desc._desc,
                <c.cudnnConvolutionFwdAlgo_t>c_algo, ws_ptr, ws_bytes, &call.beta,
                ops.out_desc, ops.out)
        elif k == _BACKWARD_DATA:
            status = c.cudnnConvolutionBackwardData(
                call.handle, &call.alpha, ops.a_desc, ops.a, ops.b_desc, ops.b, conv_desc._desc,
                <c.cudnnConvolutionBwdDataAlgo_t>c_algo, ws_ptr, ws_bytes, &call.beta,
                ops.out_desc, ops.out)
        else:
            status = c.cudnnConvolutionBackwardFilter(
                call.handle, &call.alpha, ops.a_desc, ops.a, ops.b_desc, ops.b, conv_desc._desc,
                <c.cudnnConvolutionBwdFilterAlgo_t>c_algo, ws_ptr, ws_bytes, &call.beta,
                ops.out_desc, ops.out)
    _check_kernel_call(status, "cudnnConvolution{}", k)
