"""ucudnn._native._cudnn: versions, descriptors, shapes, errors, leaks; convolutions on a GPU."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from tests import reference_conv
from ucudnn import errors
from ucudnn._native import SIMULATED, _cudnn
from ucudnn.core.array import DeviceArray, host_dtype
from ucudnn.core.problem import ConvProblem

# --- versions and status names ---------------------------------------------------------------


def test_versions() -> None:
    assert _cudnn.version() // 10000 == 9
    assert _cudnn.build_version() // 10000 == _cudnn.version() // 10000
    assert _cudnn.cudart_version() >= 12000


@pytest.mark.parametrize(
    ("word", "cls"),
    [
        ("NOT_INITIALIZED", errors.CudnnNotInitializedError),
        ("BAD_PARAM", errors.CudnnBadParamError),
        ("NOT_SUPPORTED", errors.CudnnNotSupportedError),
        ("ALLOCATION_FAILED", errors.CudnnAllocFailedError),
        ("EXECUTION_FAILED", errors.CudnnExecutionFailedError),
    ],
)
def test_error_classes_agree_with_cudnn_status_names(word: str, cls: type) -> None:
    """Every status cuDNN names with `word` maps to `cls`, and no other status does."""
    for status in [*range(1000, 1010), *range(2000, 2013), *range(3000, 3015), *range(4000, 4007),
                   *range(5000, 5005)]:  # fmt: skip
        name = _cudnn.status_name(status)
        named = word in name or (word == "BAD_PARAM" and name == "CUDNN_STATUS_INVALID_VALUE")
        assert named == (errors.cudnn_error_class(status) is cls), (status, name)


@pytest.mark.skipif(SIMULATED, reason="imports the real binding")
@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ("HEADER_VALUES['CUDNN_DATA_HALF'] = 5", "CUDNN_DATA_HALF = 2, not 5"),
        ("HEADER_VALUES['CUDNN_DATA_FP4'] = 14", "name different cuDNN values: CUDNN_DATA_FP4"),
    ],
)
def test_name_tables_that_differ_from_the_headers_are_refused(change: str, refusal: str) -> None:
    code = f"from ucudnn.core import cudnn_names\ncudnn_names.{change}\nimport ucudnn.cudnn"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "ImportError" in done.stderr and refusal in done.stderr, done.stderr[-2000:]


# --- descriptors -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize(
    ("dims", "strides"),
    [
        ((2, 3, 8, 9), (216, 72, 9, 1)),  # NCHW packed
        ((2, 3, 8, 9), (216, 1, 27, 3)),  # NHWC
        ((4, 5, 6, 7), (420, 84, 14, 1)),  # NCHW with row padding (W stride 14 > 7)
        ((2, 3, 4, 5, 6), (360, 120, 30, 6, 1)),  # NCDHW
        ((2, 3, 4, 5, 6), (360, 1, 90, 18, 3)),  # NDHWC
    ],
)
def test_tensor_descriptor_round_trip(dtype: str, dims: tuple, strides: tuple) -> None:
    desc = _cudnn.TensorDescriptor(dtype, list(dims), strides)
    assert (desc.dtype, desc.dims, desc.strides) == (dtype, dims, strides)
    assert desc.ptr != 0
    assert repr(desc) == f"TensorDescriptor({dtype!r}, dims={dims}, strides={strides})"


@pytest.mark.parametrize(
    ("layout", "dims"),
    [
        ("NCHW", (8, 3, 3, 5)),
        ("NHWC", (8, 3, 3, 5)),
        ("NCDHW", (4, 2, 3, 3, 3)),
        ("NDHWC", (4, 2, 1, 3, 3)),
    ],
)
def test_filter_descriptor_round_trip(layout: str, dims: tuple) -> None:
    desc = _cudnn.FilterDescriptor("float16", layout, dims)
    assert (desc.dtype, desc.layout, desc.dims) == ("float16", layout, dims)


@pytest.mark.parametrize("math_type", list(_cudnn.MATH_TYPES))
@pytest.mark.parametrize("mode", ["cross_correlation", "convolution"])
def test_convolution_descriptor_round_trip(math_type: str, mode: str) -> None:
    desc = _cudnn.ConvolutionDescriptor(
        (1, 2, 0), (2, 1, 3), (1, 2, 1), mode=mode, compute_dtype="float64", groups=4,
        math_type=math_type,
    )  # fmt: skip
    assert (desc.padding, desc.stride, desc.dilation) == ((1, 2, 0), (2, 1, 3), (1, 2, 1))
    assert (desc.mode, desc.compute_dtype, desc.groups, desc.math_type) == (
        mode,
        "float64",
        4,
        math_type,
    )
    desc.set_math_type("fma")
    assert desc.math_type == "fma"


def test_activation_and_pooling_descriptor_round_trip() -> None:
    activation = _cudnn.ActivationDescriptor("clipped_relu", coef=6.0)
    assert (activation.mode, activation.coef) == ("clipped_relu", 6.0)
    pool = _cudnn.PoolingDescriptor("average", (3, 2), (1, 0), (2, 2))
    assert (pool.mode, pool.window, pool.padding, pool.stride) == (
        "average",
        (3, 2),
        (1, 0),
        (2, 2),
    )
    x = _cudnn.TensorDescriptor("float32", (2, 3, 9, 8), (216, 72, 8, 1))
    assert pool.output_dims(x) == (2, 3, (9 + 2 - 3) // 2 + 1, (8 - 2) // 2 + 1)


def _out(size: int, kernel: int, pad: int, stride: int, dilation: int) -> int:
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def _shape_grid(rank: int):
    sizes = (5, 9) if rank == 2 else (4, 7)
    for size, kernel, pad, stride, dilation, groups in itertools.product(
        sizes, (1, 3, 5), (0, 1, 2), (1, 2, 3), (1, 2), (1, 2)
    ):
        spatial = tuple(size + axis for axis in range(rank))  # unequal extents per axis
        yield spatial, kernel, pad, stride, dilation, groups


@pytest.mark.parametrize("rank", [2, 3])
def test_output_dims_match_the_formula(rank: int) -> None:
    checked = rejected = 0
    for spatial, kernel, pad, stride, dilation, groups in _shape_grid(rank):
        n, c, k = 3, 4 * groups, 6 * groups
        dims = (n, c, *spatial)
        strides = tuple(int(np.prod(dims[i + 1 :])) for i in range(len(dims)))
        x = _cudnn.TensorDescriptor("float32", dims, strides)
        w = _cudnn.FilterDescriptor("float32", "NCHW" if rank == 2 else "NCDHW",
                                    (k, c // groups, *(kernel,) * rank))  # fmt: skip
        conv = _cudnn.ConvolutionDescriptor((pad,) * rank, (stride,) * rank, (dilation,) * rank,
                                            groups=groups)  # fmt: skip
        expected = [_out(s, kernel, pad, stride, dilation) for s in spatial]
        if min(expected) < 1:
            with pytest.raises(errors.CudnnBadParamError, match="NdForwardOutputDim"):
                conv.output_dims(x, w)
            rejected += 1
        else:
            assert conv.output_dims(x, w) == (n, k, *expected)
            checked += 1
    assert checked > 100 and rejected > 0


@pytest.mark.parametrize(
    ("make", "call"),
    [
        (lambda: _cudnn.TensorDescriptor("float32", (1, -3, 4, 4), (48, 16, 4, 1)),
         "cudnnSetTensorNdDescriptor"),
        (lambda: _cudnn.FilterDescriptor("float32", "NCHW", (0, 3, 3, 3)),
         "cudnnSetFilterNdDescriptor"),
        (lambda: _cudnn.ConvolutionDescriptor((0, 0), (0, 1), (1, 1)),
         "cudnnSetConvolutionNdDescriptor"),
        (lambda: _cudnn.ConvolutionDescriptor((-1, 0), (1, 1), (1, 1)),
         "cudnnSetConvolutionNdDescriptor"),
        (lambda: _cudnn.ConvolutionDescriptor((0, 0), (1, 1), (1, 1), groups=0),
         "cudnnSetConvolutionGroupCount"),
        (lambda: _cudnn.ConvolutionDescriptor((0, 0), (1, 1), (1, 1), compute_dtype="bfloat16"),
         "cudnnSetConvolutionNdDescriptor"),
        (lambda: _cudnn.ConvolutionDescriptor((1, 1), (1, 1), (1, 1), groups=3).output_dims(
            _cudnn.TensorDescriptor("float32", (1, 4, 5, 5), (100, 25, 5, 1)),
            _cudnn.FilterDescriptor("float32", "NCHW", (6, 2, 3, 3))),
         "cudnnGetConvolutionNdForwardOutputDim"),
    ],
)  # fmt: skip
def test_cudnn_rejections_name_the_call(make, call: str) -> None:
    with pytest.raises(errors.CudnnBadParamError) as info:
        make()
    assert info.value.call == call
    assert info.value.status_name.startswith("CUDNN_STATUS_BAD_PARAM")
    assert str(info.value).startswith(f"{call} failed: CUDNN_STATUS_BAD_PARAM")


def test_detail_carries_cudnns_message() -> None:
    with pytest.raises(errors.CudnnBadParamError) as info:
        _cudnn.ConvolutionDescriptor((0, 0), (0, 1), (1, 1))
    assert "stride" in info.value.detail
    assert info.value.detail in str(info.value)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: _cudnn.TensorDescriptor("float8", (1, 1, 1, 1), (1, 1, 1, 1)), ValueError,
         "unknown dtype 'float8'"),
        (lambda: _cudnn.TensorDescriptor("float32", (1, 2, 3, 4), (24, 12, 4)), ValueError,
         "differ in length"),
        (lambda: _cudnn.TensorDescriptor("float32", (1, 2.0, 3, 4), (24, 12, 4, 1)), TypeError,
         r"dims\[1\] must be an int"),
        (lambda: _cudnn.TensorDescriptor("float32", (1, 2**31, 1, 1), (1, 1, 1, 1)), ValueError,
         "does not fit in a C int"),
        (lambda: _cudnn.TensorDescriptor("float32", (1,) * 9, (1,) * 9), ValueError,
         "1 to 8 entries"),
        (lambda: _cudnn.TensorDescriptor("float32", 4, 4), TypeError, "sequence of ints"),
        (lambda: _cudnn.FilterDescriptor("float32", "KCRS", (1, 1, 1, 1)), ValueError,
         "unknown layout 'KCRS'"),
        (lambda: _cudnn.FilterDescriptor("float32", "NCDHW", (1, 1, 1, 1)), ValueError,
         "layout NCDHW needs 5 dims"),
        (lambda: _cudnn.ConvolutionDescriptor((0, 0), (1, 1), (1,)), ValueError,
         "one entry per spatial dim"),
        (lambda: _cudnn.ConvolutionDescriptor((0,), (1,), (1,), mode="corr"), ValueError,
         "unknown mode 'corr'"),
        (lambda: _cudnn.ConvolutionDescriptor((0,), (1,), (1,), math_type="tf32"), ValueError,
         "unknown math_type 'tf32'"),
        (lambda: _cudnn.ConvolutionDescriptor((0,), (1,), (1,)).set_math_type(None), ValueError,
         "unknown math_type None"),
        (lambda: _cudnn.ActivationDescriptor("gelu"), ValueError, "unknown activation mode"),
        (lambda: _cudnn.PoolingDescriptor("min", (2, 2), (0, 0), (2, 2)), ValueError,
         "unknown pooling mode"),
    ],
)  # fmt: skip
def test_python_side_validation(make, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _descriptor_cycle() -> None:
    _cudnn.TensorDescriptor("float32", (2, 3, 8, 9), (216, 72, 9, 1))
    _cudnn.FilterDescriptor("float32", "NHWC", (4, 3, 3, 3))
    _cudnn.ConvolutionDescriptor((1, 1), (1, 1), (1, 1), groups=1, math_type="tensor_op")
    _cudnn.ActivationDescriptor("relu")
    _cudnn.PoolingDescriptor("max", (2, 2), (0, 0), (2, 2))


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_descriptors_do_not_leak() -> None:
    for _ in range(1000):  # loads cuDNN's sub-libraries and warms the allocators
        _descriptor_cycle()
    before = _rss_bytes()
    for _ in range(100_000):
        _descriptor_cycle()
    # A leaked descriptor costs at least tens of bytes: 100,000 of each would be many MiB.
    assert _rss_bytes() - before < 2 << 20


def test_handle_without_a_device_raises_a_cudnn_error() -> None:
    from ucudnn._native import _cuda

    try:
        _cuda.device_count()
    except errors.NoDeviceError:
        with pytest.raises(errors.CudnnError, match="cudnnCreate"):
            _cudnn.Handle()
    else:
        pytest.skip("this machine has a device")


# --- on a GPU --------------------------------------------------------------------------------

_PERMUTATIONS = {"NCHW": (0, 1, 2, 3), "NHWC": (0, 2, 3, 1), "NCDHW": (0, 1, 2, 3, 4),
                 "NDHWC": (0, 2, 3, 4, 1)}  # fmt: skip
# Normalised L2 error allowed: fp32 with FMA math is near-exact, TF32 and 16-bit types are not.
_TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "tf32": 5e-3, "float16": 1e-2, "bfloat16": 2e-2}
_MATH = {"float64": "default", "float32": "fma", "float16": "tensor_op", "bfloat16": "tensor_op"}

_CASES = [
    # dtype, layout, x dims, w dims, padding, stride, dilation, groups
    ("float32", "NCHW", (3, 4, 9, 8), (5, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ("float32", "NHWC", (2, 6, 10, 7), (4, 3, 3, 2), (1, 0), (2, 1), (1, 2), 2),
    ("float64", "NCHW", (2, 3, 7, 7), (4, 3, 3, 3), (0, 2), (1, 2), (2, 1), 1),
    ("float16", "NHWC", (2, 8, 8, 8), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ("bfloat16", "NHWC", (2, 8, 8, 8), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ("float32", "NCDHW", (2, 3, 5, 6, 4), (4, 3, 3, 3, 2), (1, 1, 0), (1, 2, 1), (1, 1, 1), 1),
    ("float16", "NDHWC", (2, 8, 4, 5, 6), (8, 8, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1),
]


def _stored(logical: np.ndarray, dtype: str, layout: str) -> np.ndarray:
    """The host array holding `logical` (float64) as the device stores it in `layout`."""
    stored = np.ascontiguousarray(logical.transpose(_PERMUTATIONS[layout]))
    return stored.astype(host_dtype(dtype))


def _to_device(logical: np.ndarray, dtype: str, layout: str) -> tuple[DeviceArray, tuple]:
    """A device copy of `logical` stored in `layout`, and its element strides in logical order."""
    perm = _PERMUTATIONS[layout]
    array = DeviceArray.from_numpy(_stored(logical, dtype, layout), dtype=dtype)
    strides = tuple(array.element_strides[perm.index(axis)] for axis in range(logical.ndim))
    return array, strides


def _from_device(array: DeviceArray, layout: str) -> np.ndarray:
    return array.to_numpy().astype(np.float64).transpose(np.argsort(_PERMUTATIONS[layout]))


def _rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    """values as the device sees them after conversion to dtype."""
    return values.astype(host_dtype(dtype)).astype(np.float64)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
@pytest.mark.parametrize("case", _CASES, ids=lambda c: f"{c[0]}-{c[1]}-g{c[7]}")
def test_convolutions_match_the_reference(kernel: str, case: tuple) -> None:
    """Find, workspace size and execution with alpha/beta, against the reference."""
    from ucudnn._native import _cuda

    dtype, layout, x_dims, w_dims, padding, stride, dilation, groups = case
    rng = np.random.default_rng(1)
    x = _rounded(rng.standard_normal(x_dims), dtype)
    w = _rounded(rng.standard_normal(w_dims), dtype)
    problem = ConvProblem.create(
        x_dims[0], x_dims[1], w_dims[0], x_dims[2:], w_dims[2:], padding, stride, dilation,
        groups=groups,
    )  # fmt: skip
    y_dims = problem.y_dims
    dy = _rounded(rng.standard_normal(y_dims), dtype)
    y_ref = reference_conv.forward(problem, x, w)
    dx_ref = reference_conv.backward_data(problem, w, dy)
    dw_ref = reference_conv.backward_filter(problem, x, dy)

    compute = "float32" if dtype in ("float16", "bfloat16") else dtype
    conv = _cudnn.ConvolutionDescriptor(padding, stride, dilation, compute_dtype=compute,
                                        groups=groups, math_type=_MATH[dtype])  # fmt: skip
    xa, x_strides = _to_device(x, dtype, layout)
    wa, _ = _to_device(w, dtype, layout)
    dya, y_strides = _to_device(dy, dtype, layout)
    x_desc = _cudnn.TensorDescriptor(dtype, x_dims, x_strides)
    w_desc = _cudnn.FilterDescriptor(dtype, layout, w_dims)
    y_desc = _cudnn.TensorDescriptor(dtype, y_dims, y_strides)
    assert conv.output_dims(x_desc, w_desc) == y_dims

    # Each kernel reads (a, b) and writes out, in cuDNN's argument order.
    a_desc, a, b_desc, b, out_desc, expected = {
        "forward": (x_desc, xa.ptr, w_desc, wa.ptr, y_desc, y_ref),
        "backward_data": (w_desc, wa.ptr, y_desc, dya.ptr, x_desc, dx_ref),
        "backward_filter": (x_desc, xa.ptr, y_desc, dya.ptr, w_desc, dw_ref),
    }[kernel]
    start = _rounded(rng.standard_normal(expected.shape), dtype)
    out, _ = _to_device(start, dtype, layout)

    handle = _cudnn.Handle()
    workspace = _cuda.DeviceBuffer(64 << 20)
    count = _cudnn.algorithm_max_count(handle, kernel)
    assert count >= 1
    found = _cudnn.find_algorithm_ex(handle, kernel, a_desc, a, b_desc, b, conv, out_desc,
                                     out.ptr, count, workspace.ptr, workspace.nbytes)  # fmt: skip
    assert all(0 <= p.algo < len(_cudnn.ALGORITHMS[kernel]) for p in found)
    usable = [p for p in found if p.status == 0]
    assert usable, found
    assert all(p.time_ms >= 0 and p.memory <= workspace.nbytes for p in usable)
    best = usable[0]
    conv.set_math_type(best.math_type)
    size = _cudnn.workspace_size(handle, kernel, a_desc, b_desc, conv, out_desc, best.algo)
    assert size <= workspace.nbytes

    alpha, beta = 1.5, 0.5
    out.copy_from_numpy(_stored(start, dtype, layout))  # Find overwrote it
    _cudnn.convolution(handle, kernel, alpha, a_desc, a, b_desc, b, conv, best.algo,
                       workspace.ptr, size, beta, out_desc, out.ptr)  # fmt: skip
    result = _from_device(out, layout)
    wanted = alpha * expected + beta * start
    error = np.linalg.norm(result - wanted) / np.linalg.norm(wanted)
    tf32 = dtype == "float32" and best.math_type != "fma"
    assert error <= _TOLERANCE["tf32" if tf32 else dtype], (best, error)


@pytest.mark.gpu
def test_each_kernel_names_its_operands_in_what_it_refuses() -> None:
    """The filter is the forward's second operand, backward-data's first and backward-filter's
    output: anything else in its place, or a pointer that is not one, is refused before cuDNN
    is called, under the operand's name."""
    handle = _cudnn.Handle()
    x = _cudnn.TensorDescriptor("float32", (2, 3, 5, 5), (75, 25, 5, 1))
    y = _cudnn.TensorDescriptor("float32", (2, 4, 3, 3), (36, 9, 3, 1))
    w = _cudnn.FilterDescriptor("float32", "NCHW", (4, 3, 3, 3))
    conv = _cudnn.ConvolutionDescriptor((0, 0), (1, 1), (1, 1))
    refused = "w_desc of a forward convolution must be a FilterDescriptor, got TensorDescriptor"
    with pytest.raises(TypeError, match=f"^{refused}$"):
        _cudnn.workspace_size(handle, "forward", x, x, conv, y, 0)
    refused = "dx_desc of a backward_data convolution must be a TensorDescriptor, got NoneType"
    with pytest.raises(TypeError, match=f"^{refused}$"):
        _cudnn.find_algorithm_ex(handle, "backward_data", w, 0, y, 0, conv, None, 0, 1, 0, 0)
    with pytest.raises(TypeError, match=r"^dw must be an int, got None$"):
        _cudnn.convolution(handle, "backward_filter", 1.0, x, 0, y, 0, conv, 0, 0, 0, 0.0, w, None)
    with pytest.raises(ValueError, match=r"^unknown kernel 'sideways'; expected one of "):
        _cudnn.algorithm_max_count(handle, "sideways")
    counts = [_cudnn.algorithm_max_count(handle, kernel) for kernel in _cudnn.ALGORITHMS]
    assert all(count >= 1 for count in counts)


@pytest.mark.gpu
def test_handle_stream_round_trip() -> None:
    from ucudnn._native import _cuda

    handle, stream = _cudnn.Handle(), _cuda.Stream()
    assert handle.stream == 0
    handle.set_stream(stream.handle)
    assert handle.stream == stream.handle
    handle.destroy()
    handle.destroy()
    with pytest.raises(ValueError, match="destroyed"):
        handle.set_stream(0)


@pytest.mark.gpu
def test_framework_operations() -> None:
    """Bias add and its gradient, ReLU, max pooling and softmax on a small NCHW tensor."""
    handle = _cudnn.Handle()
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    bias = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    desc = _cudnn.TensorDescriptor("float32", x.shape, (48, 16, 4, 1))
    bias_desc = _cudnn.TensorDescriptor("float32", bias.shape, (3, 1, 1, 1))
    xa, ba = DeviceArray.from_numpy(x), DeviceArray.from_numpy(bias)

    _cudnn.add_tensor(handle, 1.0, bias_desc, ba.ptr, 1.0, desc, xa.ptr)
    biased = x + bias
    np.testing.assert_allclose(xa.to_numpy(), biased, rtol=1e-6)

    _cudnn.convolution_backward_bias(handle, 1.0, desc, xa.ptr, 0.0, bias_desc, ba.ptr)
    np.testing.assert_allclose(ba.to_numpy(), biased.sum(axis=(0, 2, 3), keepdims=True),
                               rtol=1e-5)  # fmt: skip

    relu = _cudnn.ActivationDescriptor("relu")
    ya = DeviceArray.empty(x.shape, "float32")
    _cudnn.activation_forward(handle, relu, 1.0, desc, xa.ptr, 0.0, desc, ya.ptr)
    np.testing.assert_array_equal(ya.to_numpy(), np.maximum(biased, 0))
    dxa = DeviceArray.empty(x.shape, "float32")
    _cudnn.activation_backward(handle, relu, 1.0, desc, ya.ptr, desc, xa.ptr, desc, xa.ptr, 0.0,
                               desc, dxa.ptr)  # fmt: skip
    np.testing.assert_array_equal(dxa.to_numpy(), np.where(biased > 0, biased, 0))

    pool = _cudnn.PoolingDescriptor("max", (2, 2), (0, 0), (2, 2))
    pooled_dims = pool.output_dims(desc)
    assert pooled_dims == (2, 3, 2, 2)
    pooled_desc = _cudnn.TensorDescriptor("float32", pooled_dims, (12, 4, 2, 1))
    pa = DeviceArray.empty(pooled_dims, "float32")
    _cudnn.pooling_forward(handle, pool, 1.0, desc, xa.ptr, 0.0, pooled_desc, pa.ptr)
    np.testing.assert_array_equal(pa.to_numpy(), biased.reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5)))
    _cudnn.pooling_backward(handle, pool, 1.0, pooled_desc, pa.ptr, pooled_desc, pa.ptr, desc,
                            xa.ptr, 0.0, desc, dxa.ptr)  # fmt: skip
    assert np.count_nonzero(dxa.to_numpy()) == pa.size  # one winner per window

    _cudnn.softmax_forward(handle, "accurate", "channel", 1.0, desc, xa.ptr, 0.0, desc, ya.ptr)
    soft = ya.to_numpy()
    np.testing.assert_allclose(soft.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(soft, np.exp(biased) / np.exp(biased).sum(axis=1, keepdims=True),
                               rtol=1e-5)  # fmt: skip
    _cudnn.softmax_backward(handle, "accurate", "channel", 1.0, desc, ya.ptr, desc, ya.ptr, 0.0,
                            desc, dxa.ptr)  # fmt: skip
    s = soft
    np.testing.assert_allclose(dxa.to_numpy(), s * (s - (s * s).sum(axis=1, keepdims=True)),
                               rtol=1e-4, atol=1e-6)  # fmt: skip
