"""The simulated device runs spatial micro-batches (issue 40) exactly and strictly, both ways
the runtime runs them:

- graph API: a border slab is a convolution whose pre and post paddings differ; it computes
  as the simulator's own arithmetic on an input padded explicitly (np.pad, unequal widths),
  runs on views of the whole tensors whose extents are checked like any tensor's, and the
  engines of `engines.PAD_ALIKE_ONLY` refuse it when its plan is built while others run it;
- legacy API: a border slab is staged, zeroed with cudaMemset and copied with cudnnAddTensor
  between views of equal dims and different strides, then convolved without padding along
  the split axis; the copy is exact for every dtype, reads nothing of its destination when
  beta is 0, takes modelled time, and the staged input may not lie in the convolution's
  workspace.

They run only on the simulator (`--device=sim`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import numpy as np
import pytest

from tests.test_simulator_backend import (
    OUTPUT,
    Buffers,
    _graph,
    _identity,
    _plan,
    _results,
    _workspace_of,
)
from tests.test_simulator_numerics import _sim
from ucudnn import errors
from ucudnn._native import _cuda, _cudnn
from ucudnn.core import slabs
from ucudnn.core.array import DeviceArray
from ucudnn.core.dtypes import host_dtype
from ucudnn.core.problem import ConvProblem, packed_strides
from ucudnn.runtime.graph import engine_config

pytestmark = pytest.mark.simulator
KERNELS = ("forward", "backward_data", "backward_filter")
# Pre and post paddings that differ on every axis, with strides and dilations.
UNEQUAL = {
    "NCHW": dict(input_size=(7, 6), filter_size=3, padding=(2, 0), padding_after=(0, 1),
                 stride=(2, 1)),
    "NHWC": dict(input_size=(6, 7), filter_size=(3, 2), padding=(0, 1), padding_after=(2, 0),
                 dilation=(1, 2)),
    "NCDHW": dict(input_size=(5, 4, 6), filter_size=3, padding=(1, 0, 2), padding_after=(0, 2, 1),
                  stride=(1, 2, 1)),
}  # fmt: skip


@pytest.fixture
def handle() -> Iterator[object]:
    made = _cudnn.Handle()
    yield made
    made.destroy()


@pytest.fixture
def sim():
    from ucudnn.testing import simulator

    return simulator


def _unequal(layout: str) -> ConvProblem:
    fields = dict(UNEQUAL[layout])
    return ConvProblem.create(
        3, 4, 6, fields.pop("input_size"), fields.pop("filter_size"), layout=layout,
        math_type="fma", **fields,
    )  # fmt: skip


def _explicitly_padded(
    problem: ConvProblem, kernel: str, math_type: str, host: dict[str, np.ndarray]
) -> np.ndarray:
    """The kernel's result by the simulator's numerics on x padded with np.pad by the problem's
    pre and post paddings, convolved without padding."""
    from ucudnn.testing.simulator import numerics

    widths = [(0, 0), (0, 0), *zip(problem.padding, problem.padding_end, strict=True)]
    x = np.pad(host["x"], widths)
    padded = dataclasses.replace(
        _sim(problem, kernel), math_type=math_type, x_dims=x.shape,
        padding=(0,) * problem.rank, padding_after=(),
    )  # fmt: skip
    w, dy = host["w"], host["y"]
    if kernel == "forward":
        return numerics.convolve(padded, x, w)
    if kernel == "backward_filter":
        return numerics.convolve(padded, x, dy)
    inner = tuple(slice(p, p + n) for p, n in zip(problem.padding, problem.input_size, strict=True))
    return numerics.convolve(padded, w, dy)[(..., *inner)]


def _pads_unequally(config) -> bool:
    from ucudnn.testing.simulator import engines

    return _identity(config).index not in engines.PAD_ALIKE_ONLY


# --- graph API -------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("layout", list(UNEQUAL))
def test_unequal_paddings_compute_as_explicit_zeros(handle, sim, layout, kernel) -> None:
    from ucudnn.testing.simulator import numerics

    problem = _unequal(layout)
    alpha, beta = 0.75, 0.5
    graph = _graph(handle, problem, kernel, alpha=alpha, beta=beta)
    plan = _plan(handle, next(c for c in _results(graph) if _pads_unequally(c)))
    buffers = Buffers(problem, _workspace_of(plan, "EXECUTION_PLAN_WORKSPACE_SIZE"))
    _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, buffers.workspace.ptr)
    out = OUTPUT[kernel]
    math_type = sim.DEVICE.calls[-1].math_type  # the configuration's, from its notes
    result = _explicitly_padded(problem, kernel, math_type, buffers.host)
    expected = numerics.blend(result, buffers.host[out], alpha, beta, problem.dtype)
    np.testing.assert_array_equal(buffers.read(out), expected)
    buffers.release()


@pytest.mark.parametrize("kernel", KERNELS)
def test_engines_that_pad_alike_only_refuse_unequal_paddings_when_the_plan_is_built(
    handle, kernel
) -> None:
    problem = _unequal("NCDHW")
    graph = _graph(handle, problem, kernel)
    offered = [*_results(graph, "A"), *_results(graph, "FALLBACK")]
    refusing = [c for c in offered if not _pads_unequally(c)]
    assert refusing and all(_pads_unequally(c) for c in _results(graph, "FALLBACK"))
    for config in refusing:  # heuristics offer them; their plans do not build
        with pytest.raises(errors.CudnnNotSupportedError, match="pre and post paddings differ"):
            _plan(handle, config)
    for config in offered:
        if _pads_unequally(config):
            _plan(handle, config)
    alike = _graph(handle, dataclasses.replace(problem, padding_after=()), kernel)
    for config in refusing:
        _plan(handle, engine_config(alike, _identity(config)))


@pytest.mark.parametrize("kernel", KERNELS)
def test_slabs_run_on_views_of_the_whole_tensors(handle, sim, kernel) -> None:
    """Every slab of a 3D problem run through a graph on views of the whole x and y (their
    strides, pointers offset by whole planes; backward filter adds up in dw) gives the whole
    kernel's result; a view one plane too far is an illegal address."""
    whole = ConvProblem.create(2, 3, 4, (7, 4, 5), 3, 1, dtype="float64")
    buffers = Buffers(whole, 0)
    x, w, y = buffers.pointers
    parts = slabs.slabs(whole, kernel, 3)
    assert any(s.pre != s.post for s in parts)
    for number, slab in enumerate(parts):
        beta = 1.0 if kernel == "backward_filter" and number else 0.0
        graph = _graph(handle, slab.problem(whole), kernel, beta=beta)
        plan = _plan(handle, _results(graph, "FALLBACK")[0])
        views = (x + slab.offset_bytes(whole, "x"), w, y + slab.offset_bytes(whole, "y"))
        _cudnn.execute_plan(handle, plan, (1, 2, 3), views, 0)
    out = OUTPUT[kernel]
    expected = _explicitly_padded(whole, kernel, "default", buffers.host)
    np.testing.assert_allclose(buffers.read(out), expected, rtol=1e-12, atol=1e-12)
    plane = whole.x_strides[2] * whole.itemsize
    last = parts[-1]
    graph = _graph(handle, last.problem(whole), kernel)
    plan = _plan(handle, _results(graph, "FALLBACK")[0])
    beyond = (x + last.offset_bytes(whole, "x") + plane, w, y + last.offset_bytes(whole, "y"))
    with pytest.raises(sim.IllegalAddressError, match="x"):
        _cudnn.execute_plan(handle, plan, (1, 2, 3), beyond, 0)
    buffers.release()


def test_unequally_padded_problems_are_priced_by_the_model(sim) -> None:
    """No table or probe measured a border slab: a measured layer padded unequally gets the
    model's algorithms and engine configurations."""
    from ucudnn.testing.simulator import engines

    # ResNet-50's layer1.0.conv2 at micro-batch 32: in the legacy tables and the engine probe.
    alike = ConvProblem.create(32, 64, 64, (56, 56), 3, padding=1, dtype="float16")
    uneven = dataclasses.replace(alike, padding_after=(0, 1))
    for kernel in KERNELS:
        measured, modelled = (_sim(p, kernel) for p in (alike, uneven))
        assert {f.provenance.split(":")[0] for f in sim.DEVICE.caps.facts(measured)} == {"measured"}
        facts = sim.DEVICE.caps.facts(modelled)
        assert {f.provenance for f in facts} == {"model"} and any(f.ok for f in facts)
        probed, offered = engines.offer(measured), engines.offer(modelled)
        assert probed is not None and offered is not None
        assert {f.provenance.split(":")[0] for f in probed.a} == {"probed"}
        assert {f.provenance for f in (*offered.a, *offered.fallback)} == {"model"}


# --- legacy API: staging ---------------------------------------------------------------------


def _staging(dims: tuple[int, ...], pre: int, post: int) -> tuple[int, ...]:
    """The dims of a buffer holding a view of `dims` with `pre` and `post` zero planes."""
    return (*dims[:2], pre + dims[2] + post, *dims[3:])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("dims", [(2, 3, 7, 5), (2, 3, 6, 4, 5)], ids=["4d", "5d"])
def test_add_tensor_copies_a_view_into_a_staging_buffer_and_back(handle, dtype, dims) -> None:
    """cudnnAddTensor with equal dims is a strided copy: a slab of planes of a whole tensor
    into the middle of a packed staging buffer, exactly, and back into another whole tensor,
    leaving every element outside the views as it was; with beta 0 it reads nothing of its
    destination, so the uninitialised (NaN) staging buffer does not leak in."""
    rng = np.random.default_rng(40)
    values = rng.standard_normal(dims).astype(host_dtype(dtype))
    values.flat[0] = -0.0
    whole = DeviceArray.from_numpy(values, dtype=dtype)
    first, count, pre, post = 2, 3, 1, 2
    view = (*dims[:2], count, *dims[3:])
    layout = "NCHW" if len(dims) == 4 else "NCDHW"
    whole_strides = packed_strides(dims, layout)
    staged_dims = _staging(view, pre, post)
    staged_strides = packed_strides(staged_dims, layout)
    staged = DeviceArray.empty(staged_dims, dtype)  # 0xFF bytes: NaN in every dtype
    itemsize = values.itemsize
    source = whole.ptr + first * whole_strides[2] * itemsize
    middle = staged.ptr + pre * staged_strides[2] * itemsize
    planes = values[:, :, first : first + count]
    in_whole = _cudnn.TensorDescriptor(dtype, view, whole_strides)
    in_staging = _cudnn.TensorDescriptor(dtype, view, staged_strides)

    _cudnn.add_tensor(handle, 1.0, in_whole, source, 0.0, in_staging, middle)
    got = staged.to_numpy()
    assert got[:, :, pre : pre + count].tobytes() == planes.tobytes()
    outside = np.concatenate([got[:, :, :pre], got[:, :, pre + count :]], axis=2)
    assert set(outside.tobytes()) == {0xFF}

    _cuda.memset(staged.ptr, 0, staged.nbytes)
    _cudnn.add_tensor(handle, 1.0, in_whole, source, 0.0, in_staging, middle)
    widths = [(0, 0), (0, 0), (pre, post), *[(0, 0)] * (len(dims) - 3)]
    assert staged.to_numpy().tobytes() == np.pad(planes, widths).tobytes()

    other = rng.standard_normal(dims).astype(host_dtype(dtype))
    back = DeviceArray.from_numpy(other, dtype=dtype)
    target = back.ptr + first * whole_strides[2] * itemsize
    _cudnn.add_tensor(handle, 1.0, in_staging, middle, 0.0, in_whole, target)
    other[:, :, first : first + count] = planes
    assert back.to_numpy().tobytes() == other.tobytes()


def test_add_tensor_blends_and_takes_a_copys_modelled_time(handle) -> None:
    dims, strides = (2, 3, 8, 8), packed_strides((2, 3, 8, 8), "NCHW")
    a, c = np.full(dims, 2.0, np.float32), np.full(dims, 3.0, np.float32)
    a_device, c_device = DeviceArray.from_numpy(a), DeviceArray.from_numpy(c)
    times = []
    for planes in (4, 8):  # half of the planes, then all
        part = _cudnn.TensorDescriptor("float32", (2, 3, planes, 8), strides)
        start, end = _cuda.Event(), _cuda.Event()
        start.record()
        _cudnn.add_tensor(handle, 0.5, part, a_device.ptr, 1.0, part, c_device.ptr)
        end.record()
        times.append(start.elapsed_ms(end))
    assert 0 < times[0] < times[1]
    expected = c + 0.5 * a
    expected[:, :, :4] += 0.5 * a[:, :, :4]
    np.testing.assert_array_equal(c_device.to_numpy(), expected)


def test_a_staged_border_slab_runs_as_a_legacy_convolution(handle, sim) -> None:
    """The first forward slab of a "same" 3D problem, staged in the workspace with its zero
    plane before it, convolved without padding along D into its view of y: y's planes of the
    whole convolution. A workspace that holds the staged x is a conformance error."""
    whole = ConvProblem.create(2, 3, 4, (6, 5, 4), 3, 1, dtype="float64")
    slab = slabs.slab_at(whole, "forward", 0, 2)
    assert (slab.pre, slab.post) == (1, 0)
    buffers = Buffers(whole, 0)
    x, w, y = buffers.pointers
    view = (*whole.x_dims[:2], slab.x_planes, *whole.x_dims[3:])
    staged_dims = _staging(view, slab.pre, slab.post)
    staged_strides = packed_strides(staged_dims, "NCDHW")
    y_view = (*whole.y_dims[:2], slab.y_planes, *whole.y_dims[3:])
    descriptors = (
        _cudnn.TensorDescriptor("float64", staged_dims, staged_strides),
        _cudnn.FilterDescriptor("float64", "NCDHW", whole.w_dims),
        _cudnn.ConvolutionDescriptor((0, 1, 1), (1, 1, 1), (1, 1, 1), compute_dtype="float64"),
        _cudnn.TensorDescriptor("float64", y_view, whole.y_strides),
    )
    x_desc, w_desc, conv_desc, y_desc = descriptors
    algo = next(
        a for a in range(len(_cudnn.ALGORITHMS["forward"]))
        if _runs_with_workspace(handle, descriptors, a)
    )  # fmt: skip
    needed = _cudnn.workspace_size(handle, "forward", *descriptors, algo)
    staged_bytes = math.prod(staged_dims) * whole.itemsize
    space = _cuda.DeviceBuffer(staged_bytes + needed)  # the staged x, then the algorithm's
    _cuda.memset(space.ptr, 0, staged_bytes)
    _cudnn.add_tensor(
        handle, 1.0, _cudnn.TensorDescriptor("float64", view, whole.x_strides),
        x + slab.offset_bytes(whole, "x"), 0.0,
        _cudnn.TensorDescriptor("float64", view, staged_strides),
        space.ptr + slab.pre * staged_strides[2] * whole.itemsize,
    )  # fmt: skip
    y_slab = y + slab.offset_bytes(whole, "y")

    def run(workspace: int) -> None:
        _cudnn.convolution(
            handle, "forward", 1.0, x_desc, space.ptr, w_desc, w, conv_desc, algo, workspace,
            needed, 0.0, y_desc, y_slab,
        )  # fmt: skip

    with pytest.raises(sim.ConformanceError, match="workspace overlaps x"):
        run(space.ptr)
    run(space.ptr + staged_bytes)
    expected = _explicitly_padded(whole, "forward", "default", buffers.host)
    got = buffers.read("y")[:, :, : slab.y_planes]
    np.testing.assert_allclose(got, expected[:, :, : slab.y_planes], rtol=1e-12, atol=1e-12)
    space.release()
    buffers.release()


def _runs_with_workspace(handle, descriptors, algo: int) -> bool:
    try:
        return _cudnn.workspace_size(handle, "forward", *descriptors, algo) > 0
    except errors.CudnnNotSupportedError:
        return False
