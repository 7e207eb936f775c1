"""The simulated libraries against the real native modules, on what the real ones answer
without a GPU and what does not depend on the cuDNN version: name tables, Python-side
refusals, which descriptors cuDNN refuses (status class and call), and output dims.

The ordinary test pass runs this: there `ucudnn._native` is the real Cython binding, and the
simulator's modules are imported beside it.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from ucudnn import errors
from ucudnn._native import SIMULATED, _cuda, _cudnn
from ucudnn.testing.simulator import cuda as sim_cuda, cudnn as sim_cudnn

pytestmark = pytest.mark.skipif(SIMULATED, reason="compares the simulator with the real modules")

TABLES = ["DTYPES", "MATH_TYPES", "CONVOLUTION_MODES", "FILTER_LAYOUTS", "ACTIVATIONS",
          "POOLING_MODES", "SOFTMAX_ALGORITHMS", "SOFTMAX_MODES", "ALGORITHMS"]  # fmt: skip


@pytest.mark.parametrize("name", TABLES)
def test_name_tables_are_the_bindings(name: str) -> None:
    assert getattr(sim_cudnn, name) == getattr(_cudnn, name)


def _outcome(make):
    """What a call gives: its value, or the exception's class, call and status class."""
    try:
        value = make()
    except errors.CudnnError as exc:
        return ("CudnnError", type(exc).__name__, exc.call, exc.status // 1000)
    except (TypeError, ValueError, OverflowError) as exc:
        return (type(exc).__name__, str(exc))
    return ("ok", value)


def _both(make) -> None:
    """`make(module)` gives the same outcome with the real binding and the simulator."""
    assert _outcome(lambda: make(sim_cudnn)) == _outcome(lambda: make(_cudnn))


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.TensorDescriptor("float32", (5,), (1,)).dims,
        lambda m: m.TensorDescriptor("float32", (5, 3), (3, 1)).dims,
        lambda m: m.TensorDescriptor("float64", (0, 3, 4, 4), (48, 16, 4, 1)).dims,
        lambda m: m.TensorDescriptor("float16", (1, 3, 4, 4), (48, 0, 4, 1)).dims,
        lambda m: m.TensorDescriptor("float16", (1, 1, 4, 4), (48, 0, 4, 1)).strides,
        lambda m: m.TensorDescriptor("bfloat16", (2, 3, 4, 5, 6), (360, 1, 90, 18, 3)).strides,
        lambda m: m.TensorDescriptor("float32", (2**20, 2**12, 1, 1), (2**12, 1, 1, 1)).dims,
        lambda m: m.TensorDescriptor("float8", (1, 1, 1, 1), (1, 1, 1, 1)),
        lambda m: m.TensorDescriptor("float32", (1, 2, 3, 4), (24, 12, 4)),
        lambda m: m.TensorDescriptor("float32", (1, 2.0, 3, 4), (24, 12, 4, 1)),
        lambda m: m.TensorDescriptor("float32", (1, 2**31, 1, 1), (1, 1, 1, 1)),
        lambda m: m.TensorDescriptor("float32", (1,) * 9, (1,) * 9),
        lambda m: m.TensorDescriptor("float32", 4, 4),
        lambda m: repr(m.TensorDescriptor("float32", (2, 3, 8, 9), (216, 72, 9, 1))),
        lambda m: m.FilterDescriptor("float32", "NCHW", (1, -1, 1, 1)).dims,
        lambda m: m.FilterDescriptor("float32", "KCRS", (1, 1, 1, 1)),
        lambda m: m.FilterDescriptor("float32", "NCDHW", (1, 1, 1, 1)),
        lambda m: repr(m.FilterDescriptor("float16", "NDHWC", (4, 2, 1, 3, 3))),
        lambda m: repr(m.ConvolutionDescriptor((1, 2, 0), (2, 1, 3), (1, 2, 1), groups=4)),
        lambda m: m.ConvolutionDescriptor((0, 0), (0, 1), (1, 1)),
        lambda m: m.ConvolutionDescriptor((-1, 0), (1, 1), (1, 1)),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (0, 1)),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (1, 1), groups=0),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (1, 1), compute_dtype="bfloat16"),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (1, 1), compute_dtype="float16").mode,
        lambda m: m.ConvolutionDescriptor((0,), (1,), (1,), mode="corr"),
        lambda m: m.ConvolutionDescriptor((0,), (1,), (1,), math_type="tf32"),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (1,)),
        lambda m: m.ConvolutionDescriptor((0,), (1,), (1,)).set_math_type(None),
        lambda m: m.ActivationDescriptor("gelu"),
        lambda m: repr(m.ActivationDescriptor("clipped_relu", coef=6.0)),
        lambda m: m.PoolingDescriptor("min", (2, 2), (0, 0), (2, 2)),
        lambda m: m.PoolingDescriptor("max", (0, 2), (0, 0), (1, 1)),
        lambda m: repr(m.PoolingDescriptor("average", (3, 2), (1, 0), (2, 2))),
        lambda m: m.PoolingDescriptor("max", (9, 9), (0, 0), (1, 1)).output_dims(
            m.TensorDescriptor("float32", (1, 2, 3, 4), (24, 12, 4, 1))
        ),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (1, 1)).output_dims(
            m.TensorDescriptor("float32", (1, 2, 3, 4, 5), (120, 60, 20, 5, 1)),
            m.FilterDescriptor("float32", "NCHW", (1, 2, 1, 1)),
        ),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (1, 1)).output_dims(
            m.TensorDescriptor("float32", (1, 2, 3, 4), (24, 12, 4, 1)),
            m.FilterDescriptor("float32", "NCHW", (1, 3, 1, 1)),
        ),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (1, 1)).output_dims(
            m.TensorDescriptor("float32", (1, 2, 3, 4), (24, 12, 4, 1)),
            m.FilterDescriptor("float16", "NCHW", (1, 2, 1, 1)),
        ),
        lambda m: m.ConvolutionDescriptor((0, 0), (1, 1), (1, 1), groups=2).output_dims(
            m.TensorDescriptor("float32", (1, 4, 3, 4), (48, 12, 4, 1)),
            m.FilterDescriptor("float32", "NCHW", (3, 2, 1, 1)),
        ),
    ],
)  # fmt: skip
def test_descriptors_are_refused_alike(make) -> None:
    _both(make)


@settings(max_examples=300, deadline=None)
@given(
    rank=st.sampled_from([2, 3]),
    size=st.integers(1, 12),
    kernel=st.integers(1, 6),
    pad=st.integers(0, 3),
    stride=st.integers(1, 4),
    dilation=st.integers(1, 3),
    groups=st.integers(1, 3),
    layout=st.sampled_from(["NCHW", "NHWC"]),
)
def test_output_dims_agree(rank, size, kernel, pad, stride, dilation, groups, layout) -> None:
    dims = (2, 2 * groups, *(size + axis for axis in range(rank)))
    strides = tuple(math.prod(dims[i + 1 :]) for i in range(len(dims)))
    layout = layout if rank == 2 else {"NCHW": "NCDHW", "NHWC": "NDHWC"}[layout]

    def make(m):
        x = m.TensorDescriptor("float32", dims, strides)
        w = m.FilterDescriptor("float32", layout, (3 * groups, 2, *(kernel,) * rank))
        conv = m.ConvolutionDescriptor(
            (pad,) * rank, (stride,) * rank, (dilation,) * rank, groups=groups
        )
        return conv.output_dims(x, w)

    _both(make)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.DeviceBuffer(-1),
        lambda m: m.DeviceBuffer(2.0),
        lambda m: m.DeviceBuffer("8"),
        lambda m: m.free(0),
        lambda m: m.free(-1),
        lambda m: (m.DeviceBuffer(0).ptr, m.DeviceBuffer(0).device),
        lambda m: m.memset(0, 256, 1),
        lambda m: m.memcpy_dtod(0, 0, -1),
    ],
)
def test_runtime_refusals_agree(make) -> None:
    assert _outcome(lambda: make(sim_cuda)) == _outcome(lambda: make(_cuda))
