"""The simulated device's backend (graph) API: the whole sequence from tensors to an executed
plan gives the reference's answer; every check cuDNN makes (and a few it does not) refuses
with the error class the binding raises; heuristics answer the H100 probe's configurations
for a problem it measured; faults make chosen configurations fail.

Most tests run only on the simulator (`--device=sim`). The differential ones run in the
ordinary pass, beside the real binding, on what it answers without a GPU.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import numpy as np
import pytest

from tests import reference_conv as ref
from ucudnn import errors
from ucudnn._native import SIMULATED, _cudnn
from ucudnn.core import cudnn_names
from ucudnn.core.engines import EngineConfig
from ucudnn.core.problem import ConvProblem, packed_strides
from ucudnn.runtime.graph import engine_config
from ucudnn.testing.simulator import cudnn as sim_cudnn

simulator = pytest.mark.simulator
ROLE_ATTRIBUTES = {  # the operation kind and its attributes for x, w, y
    "forward": ("OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_FORWARD_",
                ("X", "W", "Y")),
    "backward_data": ("OPERATION_CONVOLUTION_BACKWARD_DATA", "OPERATION_CONVOLUTION_BWD_DATA_",
                      ("DX", "W", "DY")),
    "backward_filter": ("OPERATION_CONVOLUTION_BACKWARD_FILTER",
                        "OPERATION_CONVOLUTION_BWD_FILTER_", ("X", "DW", "DY")),
}  # fmt: skip
DATA_TYPES = {"float32": "FLOAT", "float16": "HALF", "float64": "DOUBLE"}


# --- building descriptors --------------------------------------------------------------------


def _tensor(data_type: str, dims, strides, uid: int, alignment: int = 16):
    tensor = _cudnn.BackendDescriptor("TENSOR")
    tensor.set("TENSOR_DATA_TYPE", "DATA_TYPE", [data_type])
    tensor.set("TENSOR_DIMENSIONS", "INT64", list(dims))
    tensor.set("TENSOR_STRIDES", "INT64", list(strides))
    tensor.set("TENSOR_UNIQUE_ID", "INT64", [uid])
    tensor.set("TENSOR_BYTE_ALIGNMENT", "INT64", [alignment])
    tensor.finalize()
    return tensor


def _convolution(problem: ConvProblem, compute: str = "FLOAT"):
    conv = _cudnn.BackendDescriptor("CONVOLUTION")
    conv.set("CONVOLUTION_COMP_TYPE", "DATA_TYPE", [compute])
    mode = "CONVOLUTION" if problem.mode == "convolution" else "CROSS_CORRELATION"
    conv.set("CONVOLUTION_CONV_MODE", "CONVOLUTION_MODE", [mode])
    conv.set("CONVOLUTION_SPATIAL_DIMS", "INT64", [problem.rank])
    conv.set("CONVOLUTION_PRE_PADDINGS", "INT64", list(problem.padding))
    conv.set("CONVOLUTION_POST_PADDINGS", "INT64", list(problem.padding_end))
    conv.set("CONVOLUTION_DILATIONS", "INT64", list(problem.dilation))
    conv.set("CONVOLUTION_FILTER_STRIDES", "INT64", list(problem.stride))
    conv.finalize()
    return conv


def _operation(
    problem: ConvProblem,
    kernel: str,
    alpha=1.0,
    beta=0.0,
    alignments=(16,) * 3,
    skip="",
    final=True,
):
    """The operation of `kernel`, with every attribute but `skip` (e.g. "BETA") set."""
    data_type = DATA_TYPES[problem.dtype]
    shapes = {
        "x": (problem.x_dims, problem.x_strides),
        "w": (problem.w_dims, packed_strides(problem.w_dims, problem.filter_layout)),
        "y": (problem.y_dims, problem.y_strides),
    }
    kind, prefix, names = ROLE_ATTRIBUTES[kernel]
    scalar = "DOUBLE" if problem.dtype == "float64" else "FLOAT"
    compute = "DOUBLE" if problem.dtype == "float64" else "FLOAT"
    operation = _cudnn.BackendDescriptor(kind)
    values = {
        name: ("BACKEND_DESCRIPTOR", [_tensor(data_type, dims, strides, uid, alignment)])
        for uid, ((dims, strides), name, alignment) in enumerate(
            zip(shapes.values(), names, alignments, strict=True), 1
        )
    }
    values["CONV_DESC"] = ("BACKEND_DESCRIPTOR", [_convolution(problem, compute)])
    values["ALPHA"], values["BETA"] = (scalar, [alpha]), (scalar, [beta])
    for name, (attr_type, value) in values.items():
        if name != skip:
            operation.set(prefix + name, attr_type, value)
    if final:
        operation.finalize()
    return operation


def _graph(handle, problem: ConvProblem, kernel: str, **scalars):
    graph = _cudnn.BackendDescriptor("OPERATIONGRAPH")
    graph.set("OPERATIONGRAPH_HANDLE", "HANDLE", [handle])
    graph.set("OPERATIONGRAPH_OPS", "BACKEND_DESCRIPTOR", [_operation(problem, kernel, **scalars)])
    graph.finalize()
    return graph


def _results(graph, mode: str = "A") -> list:
    heuristics = _cudnn.BackendDescriptor("ENGINEHEUR")
    heuristics.set("ENGINEHEUR_OPERATION_GRAPH", "BACKEND_DESCRIPTOR", [graph])
    heuristics.set("ENGINEHEUR_MODE", "HEUR_MODE", [mode])
    heuristics.finalize()
    return heuristics.get("ENGINEHEUR_RESULTS", "BACKEND_DESCRIPTOR", kind="ENGINECFG")


def _engine_of(config):
    return config.get("ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", 1, kind="ENGINE")[0]


def _identity(config) -> EngineConfig:
    index = _engine_of(config).get("ENGINE_GLOBAL_INDEX", "INT64")[0]
    choices = config.get("ENGINECFG_KNOB_CHOICES", "BACKEND_DESCRIPTOR", kind="KNOB_CHOICE")
    knobs = tuple(
        (
            c.get("KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE")[0],
            c.get("KNOB_CHOICE_KNOB_VALUE", "INT64")[0],
        )
        for c in choices
    )
    return EngineConfig(index, knobs)


def _notes(config) -> list[str]:
    engine = _engine_of(config)
    return [
        *engine.get("ENGINE_NUMERICAL_NOTE", "NUMERICAL_NOTE"),
        *engine.get("ENGINE_BEHAVIOR_NOTE", "BEHAVIOR_NOTE"),
    ]


def _plan(handle, config):
    plan = _cudnn.BackendDescriptor("EXECUTION_PLAN")
    plan.set("EXECUTION_PLAN_HANDLE", "HANDLE", [handle])
    plan.set("EXECUTION_PLAN_ENGINE_CONFIG", "BACKEND_DESCRIPTOR", [config])
    plan.finalize()
    return plan


def _workspace_of(descriptor, attribute: str) -> int:
    return descriptor.get(attribute, "INT64")[0]


# --- device memory ---------------------------------------------------------------------------


class Buffers:
    """x, w and y of a problem on the device, in its layouts, and a workspace."""

    def __init__(self, problem: ConvProblem, workspace: int, seed: int = 0) -> None:
        from ucudnn._native import _cuda

        self.problem = problem
        rng = np.random.default_rng(seed)
        self.host = {
            t: rng.standard_normal(getattr(problem, f"{t}_dims")).astype(problem.dtype)
            for t in "xwy"
        }
        self.device = {t: _cuda.DeviceBuffer(problem.nbytes(t)) for t in "xwy"}
        self.workspace = _cuda.DeviceBuffer(max(workspace, 1))
        for t, values in self.host.items():
            stored = np.ascontiguousarray(np.moveaxis(values, 1, -1) if self._last(t) else values)
            _cuda.memcpy_htod(self.device[t].ptr, stored, stored.nbytes)

    def _last(self, tensor: str) -> bool:
        layout = self.problem.filter_layout if tensor == "w" else self.problem.layout
        return layout in ("NHWC", "NDHWC")

    @property
    def pointers(self) -> tuple[int, int, int]:
        return self.device["x"].ptr, self.device["w"].ptr, self.device["y"].ptr

    def read(self, tensor: str) -> np.ndarray:
        from ucudnn._native import _cuda

        shape = list(getattr(self.problem, f"{tensor}_dims"))
        if self._last(tensor):
            shape = [shape[0], *shape[2:], shape[1]]
        out = np.empty(shape, self.problem.dtype)
        _cuda.memcpy_dtoh(out, self.device[tensor].ptr, out.nbytes)
        _cuda.stream_synchronize(0)
        return np.moveaxis(out, -1, 1) if self._last(tensor) else out

    def release(self) -> None:
        for buffer in (*self.device.values(), self.workspace):
            buffer.release()


@pytest.fixture
def handle() -> Iterator[object]:
    made = _cudnn.Handle()
    yield made
    made.destroy()


@pytest.fixture
def sim():
    from ucudnn.testing import simulator

    return simulator


def _reference(problem: ConvProblem, kernel: str, host: dict[str, np.ndarray]) -> np.ndarray:
    x, w, y = host["x"], host["w"], host["y"]
    return {
        "forward": lambda: ref.forward(problem, x, w),
        "backward_data": lambda: ref.backward_data(problem, w, y),
        "backward_filter": lambda: ref.backward_filter(problem, x, y),
    }[kernel]()


OUTPUT = {"forward": "y", "backward_data": "x", "backward_filter": "w"}
PROBLEMS = {
    "NCHW": dict(input_size=(7, 6), filter_size=3, padding=1, stride=(2, 1), groups=2),
    "NHWC": dict(input_size=(6, 7), filter_size=(3, 2), padding=(1, 0), dilation=(1, 2)),
    "NCDHW": dict(input_size=(5, 4, 6), filter_size=3, padding=1, stride=(1, 2, 1)),
    "NDHWC": dict(input_size=(4, 5, 4), filter_size=(2, 3, 1), groups=2, mode="convolution"),
}


def _problem(layout: str, dtype: str = "float32", batch: int = 3) -> ConvProblem:
    fields = dict(PROBLEMS[layout])
    return ConvProblem.create(
        batch, 4, 6, fields.pop("input_size"), fields.pop("filter_size"), layout=layout,
        dtype=dtype, math_type="fma", **fields,
    )  # fmt: skip


# --- the whole sequence ----------------------------------------------------------------------


@simulator
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
@pytest.mark.parametrize("layout", list(PROBLEMS))
def test_tensors_to_an_executed_plan_give_the_references_answer(handle, layout, kernel) -> None:
    problem = _problem(layout)
    alpha, beta = 0.75, 0.5
    graph = _graph(handle, problem, kernel, alpha=alpha, beta=beta)
    # The first configuration without tensor cores (float32 stays float32), made again from
    # its identity as a stored tag would make it.
    chosen = next(c for c in _results(graph) if "TENSOR_CORE" not in _notes(c))
    config = engine_config(graph, _identity(chosen))
    plan = _plan(handle, config)
    workspace = _workspace_of(plan, "EXECUTION_PLAN_WORKSPACE_SIZE")
    assert workspace == _workspace_of(config, "ENGINECFG_WORKSPACE_SIZE")
    buffers = Buffers(problem, workspace)
    _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, buffers.workspace.ptr)
    out = OUTPUT[kernel]
    expected = alpha * _reference(problem, kernel, buffers.host) + beta * buffers.host[out]
    np.testing.assert_allclose(buffers.read(out), expected, rtol=1e-4, atol=1e-4)
    buffers.release()


@simulator
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
def test_float64_graphs_take_double_scalars_and_compute_in_double(handle, kernel) -> None:
    problem = _problem("NCHW", "float64")
    graph = _graph(handle, problem, kernel, alpha=-2.0, beta=0.0)
    plan = _plan(handle, _results(graph, "FALLBACK")[0])
    buffers = Buffers(problem, _workspace_of(plan, "EXECUTION_PLAN_WORKSPACE_SIZE"), seed=1)
    _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, buffers.workspace.ptr)
    expected = -2.0 * _reference(problem, kernel, buffers.host)
    np.testing.assert_allclose(buffers.read(OUTPUT[kernel]), expected, rtol=1e-12, atol=1e-12)
    buffers.release()


@simulator
def test_a_tensor_core_configuration_runs_float32_in_tf32(handle, sim) -> None:
    problem = _problem("NCHW")
    graph = _graph(handle, problem, "forward")
    config = next(c for c in _results(graph) if "TENSOR_CORE" in _notes(c))
    plan = _plan(handle, config)
    buffers = Buffers(problem, _workspace_of(plan, "EXECUTION_PLAN_WORKSPACE_SIZE"))
    _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, buffers.workspace.ptr)
    record = sim.DEVICE.calls[-1]
    assert (record.call, record.kernel, record.math_type) == (
        "cudnnBackendExecute", "forward", "default"
    )  # fmt: skip
    assert record.engine == _identity(config).tag and record.algo == _identity(config).index
    assert record.micro_batch == problem.batch and record.deterministic
    got, exact = buffers.read("y"), ref.forward(problem, buffers.host["x"], buffers.host["w"])
    assert 1e-6 < np.max(np.abs(got - exact)) < 1e-2  # TF32's 10-bit mantissa, not float32's
    buffers.release()


@simulator
def test_execution_advances_the_clock_by_the_configurations_time(handle, sim) -> None:
    from ucudnn._native import _cuda
    from ucudnn.testing.simulator import engines

    problem = _problem("NCHW")
    graph = _graph(handle, problem, "backward_filter")
    offer = engines.offer(_sim_problem(problem, "backward_filter"))
    assert offer is not None
    for mode in ("A", "FALLBACK"):
        for config in _results(graph, mode):
            plan = _plan(handle, config)
            buffers = Buffers(problem, _workspace_of(plan, "EXECUTION_PLAN_WORKSPACE_SIZE"))
            start, end = _cuda.Event(), _cuda.Event()
            start.record()
            _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, buffers.workspace.ptr)
            end.record()
            facts = offer.find(_identity(config))
            assert facts is not None
            assert start.elapsed_ms(end) == pytest.approx(facts.time_ms)
            buffers.release()


def _sim_problem(problem: ConvProblem, kernel: str):
    from ucudnn.testing.simulator.problem import SimProblem

    return SimProblem(
        kernel=kernel, dtype=problem.dtype, compute_dtype=problem.compute_dtype,
        math_type="default", layout=problem.layout, filter_layout=problem.filter_layout,
        x_dims=problem.x_dims, w_dims=problem.w_dims, y_dims=problem.y_dims,
        padding=problem.padding, stride=problem.stride, dilation=problem.dilation,
        groups=problem.groups, mode=problem.mode,
    )  # fmt: skip


# --- heuristics ------------------------------------------------------------------------------


@simulator
def test_fallback_answers_fewer_slower_configurations_than_mode_a(handle, sim) -> None:
    from ucudnn.testing.simulator import engines

    problem = _problem("NCHW")
    graph = _graph(handle, problem, "forward")
    a = [_identity(c) for c in _results(graph, "A")]
    fallback = [_identity(c) for c in _results(graph, "FALLBACK")]
    assert [_identity(c) for c in _results(graph, "INSTANT")] == a
    assert fallback and len(fallback) < len(a) and not set(a) & set(fallback)
    offer = engines.offer(_sim_problem(problem, "forward"))
    time = {f.config: f.time_ms for f in (*offer.a, *offer.fallback)}
    assert min(time[c] for c in fallback) > min(time[c] for c in a)
    assert {(f.config, f.provenance) for f in offer.a} == {(c, "model") for c in a}


def _probe_record(description: str, kernel: str) -> list:
    from ucudnn.testing.simulator import engines

    with gzip.open(engines.DATA / engines.ENGINES) as data:
        document = json.load(data)
    plans = next(p for d, k, p in document["records"] if (d, k) == (description, kernel))
    return [(document["tags"][tag], workspace, ms) for tag, workspace, ms in plans]


@simulator
@pytest.mark.parametrize(
    ("layout", "dtype", "kernel"),
    [("NCHW", "float16", "forward"), ("NHWC", "float16", "backward_filter"),
     ("NCHW", "float32", "backward_data")],
)  # fmt: skip
def test_a_problem_the_probe_measured_gets_its_configurations(handle, layout, dtype, kernel):
    # ResNet-50's layer1.0.conv2 at micro-batch 32, measured by the H100 engine probe.
    problem = ConvProblem.create(32, 64, 64, (56, 56), 3, padding=1, layout=layout, dtype=dtype)
    expected = _probe_record(problem.describe(), kernel)
    graph = _graph(handle, problem, kernel)
    found = {}
    for mode in ("A", "FALLBACK"):
        for config in _results(graph, mode):
            identity = _identity(config)
            assert bool(identity.knobs) == (mode == "A")  # FALLBACK: the generic engines
            found[identity.tag] = (
                _workspace_of(config, "ENGINECFG_WORKSPACE_SIZE"), _notes(config)
            )  # fmt: skip
    assert sorted(found) == sorted(EngineConfig(*_parsed(tag)).tag for tag, _, _ in expected)
    for tag, workspace, _ in expected:
        canonical = EngineConfig(*_parsed(tag)).tag
        assert found[canonical][0] == workspace
        notes = found[canonical][1]
        assert ("TENSOR_CORE" in notes) == (dtype == "float16" and not _fma(kernel, tag))
        assert ("RUNTIME_COMPILATION" in notes) == (_parsed(tag)[0] in (19, 70, 71, 78))
    first = _results(graph)[0]
    built = _plan(handle, first)
    assert _workspace_of(built, "EXECUTION_PLAN_WORKSPACE_SIZE") == found[_identity(first).tag][0]


def _parsed(tag: str) -> tuple[int, tuple[tuple[int, int], ...]]:
    from ucudnn.core.engines import parse_tag

    config = parse_tag(tag)
    return config.index, config.knobs


def _fma(kernel: str, tag: str) -> bool:
    from ucudnn.testing.simulator import engines

    with gzip.open(engines.DATA / engines.ENGINES) as data:
        fma = json.load(data)["fma_engines"][kernel]
    return _parsed(tag)[0] in fma


@simulator
def test_engines_say_their_knobs_notes_and_count(handle) -> None:
    graph = _graph(handle, _problem("NCHW"), "backward_data")
    assert graph.get("OPERATIONGRAPH_ENGINE_GLOBAL_COUNT", "INT64") == [79]
    fallback = _results(graph, "FALLBACK")
    generic = next(c for c in fallback if _identity(c).index == 0)
    assert _notes(generic) == ["NONDETERMINISTIC"]
    config = _results(graph)[0]
    identity = _identity(config)
    infos = _engine_of(config).get("ENGINE_KNOB_INFO", "BACKEND_DESCRIPTOR", kind="KNOB_INFO")
    read = [
        (i.get("KNOB_INFO_TYPE", "KNOB_TYPE")[0], i.get("KNOB_INFO_MINIMUM_VALUE", "INT64")[0],
         i.get("KNOB_INFO_MAXIMUM_VALUE", "INT64")[0], i.get("KNOB_INFO_STRIDE", "INT64")[0])
        for i in infos
    ]  # fmt: skip
    assert read == [(knob, value, value, 1) for knob, value in identity.knobs]
    choices = config.get("ENGINECFG_KNOB_CHOICES", "BACKEND_DESCRIPTOR", 1, kind="KNOB_CHOICE")
    assert len(choices) == 1 and choices[0].finalized and choices[0].kind == "KNOB_CHOICE"


@simulator
def test_the_simulator_reports_cudnn_9_19(sim) -> None:
    assert _cudnn.version() == 91900
    assert _cudnn.BACKEND_KINDS is cudnn_names.BACKEND_KINDS


# --- refusals --------------------------------------------------------------------------------


def _tensor_missing(attribute: str):
    tensor = _cudnn.BackendDescriptor("TENSOR")
    values = {
        "TENSOR_DATA_TYPE": ("DATA_TYPE", ["FLOAT"]),
        "TENSOR_DIMENSIONS": ("INT64", [1, 2, 3, 3]),
        "TENSOR_STRIDES": ("INT64", [18, 9, 3, 1]),
        "TENSOR_UNIQUE_ID": ("INT64", [1]),
        "TENSOR_BYTE_ALIGNMENT": ("INT64", [16]),
    }
    for name, (attr_type, value) in values.items():
        if name != attribute:
            tensor.set(name, attr_type, value)
    return tensor


@simulator
@pytest.mark.parametrize(
    "attribute",
    ["TENSOR_DATA_TYPE", "TENSOR_DIMENSIONS", "TENSOR_STRIDES", "TENSOR_UNIQUE_ID",
     "TENSOR_BYTE_ALIGNMENT"],
)  # fmt: skip
def test_a_tensor_without_a_required_attribute_does_not_finalize(attribute) -> None:
    tensor = _tensor_missing(attribute)
    with pytest.raises(errors.CudnnBadParamError, match=attribute) as info:
        tensor.finalize()
    assert info.value.call == "cudnnBackendFinalize(TENSOR)" and not tensor.finalized
    _tensor_missing("").finalize()


@simulator
def test_what_each_descriptor_needs_is_required_at_finalize(handle) -> None:
    problem = _problem("NCHW")
    graph = _cudnn.BackendDescriptor("OPERATIONGRAPH")
    graph.set("OPERATIONGRAPH_OPS", "BACKEND_DESCRIPTOR", [_operation(problem, "forward")])
    with pytest.raises(errors.CudnnBadParamError, match="OPERATIONGRAPH_HANDLE"):
        graph.finalize()
    heuristics = _cudnn.BackendDescriptor("ENGINEHEUR")
    heuristics.set("ENGINEHEUR_OPERATION_GRAPH", "BACKEND_DESCRIPTOR", [graph])
    heuristics.set("ENGINEHEUR_MODE", "HEUR_MODE", ["A"])
    with pytest.raises(errors.CudnnBadParamError, match="is not finalized"):
        heuristics.finalize()  # its graph is not
    for kernel, skip in (("forward", "BETA"), ("backward_data", "DY"), ("backward_filter", "DW")):
        operation = _operation(problem, kernel, skip=skip, final=False)
        with pytest.raises(errors.CudnnBadParamError, match=f"_{skip} is required"):
            operation.finalize()
    plan = _cudnn.BackendDescriptor("EXECUTION_PLAN")
    plan.set("EXECUTION_PLAN_HANDLE", "HANDLE", [handle])
    with pytest.raises(errors.CudnnBadParamError, match="EXECUTION_PLAN_ENGINE_CONFIG"):
        plan.finalize()
    config = _cudnn.BackendDescriptor("ENGINECFG")
    plan.set("EXECUTION_PLAN_ENGINE_CONFIG", "BACKEND_DESCRIPTOR", [config])
    with pytest.raises(errors.CudnnBadParamError, match="not finalized"):
        plan.finalize()


@simulator
def test_an_operation_whose_tensors_make_no_convolution_is_refused(handle) -> None:
    problem = _problem("NCHW")
    operation = _cudnn.BackendDescriptor("OPERATION_CONVOLUTION_FORWARD")
    dims = {"X": problem.x_dims, "W": problem.w_dims, "Y": (3, 6, 9, 9)}  # y is not the output
    for uid, (name, shape) in enumerate(dims.items(), 1):
        strides = packed_strides(shape, "NCHW")
        operation.set(f"OPERATION_CONVOLUTION_FORWARD_{name}", "BACKEND_DESCRIPTOR",
                      [_tensor("FLOAT", shape, strides, uid)])  # fmt: skip
    operation.set("OPERATION_CONVOLUTION_FORWARD_CONV_DESC", "BACKEND_DESCRIPTOR",
                  [_convolution(problem)])  # fmt: skip
    operation.set("OPERATION_CONVOLUTION_FORWARD_ALPHA", "FLOAT", [1.0])
    operation.set("OPERATION_CONVOLUTION_FORWARD_BETA", "FLOAT", [0.0])
    with pytest.raises(errors.CudnnBadParamError, match="output"):
        operation.finalize()


@simulator
def test_engines_and_configurations_the_graph_does_not_have_are_not_supported(handle) -> None:
    graph = _graph(handle, _problem("NCHW"), "forward")
    known = _identity(_results(graph)[0])
    for index in (79, 3):  # out of range; in range but not an engine of this graph
        engine = _cudnn.BackendDescriptor("ENGINE")
        engine.set("ENGINE_OPERATION_GRAPH", "BACKEND_DESCRIPTOR", [graph])
        engine.set("ENGINE_GLOBAL_INDEX", "INT64", [index])
        with pytest.raises(errors.CudnnNotSupportedError, match=f"engine {index}"):
            engine.finalize()
    wrong = EngineConfig(known.index, ((known.knobs[0][0], known.knobs[0][1] + 1),))
    with pytest.raises(errors.CudnnNotSupportedError, match=wrong.tag):
        engine_config(graph, wrong)


@simulator
def test_values_of_the_wrong_attribute_type_or_count_are_bad_params() -> None:
    tensor = _cudnn.BackendDescriptor("TENSOR")
    with pytest.raises(errors.CudnnBadParamError) as info:
        tensor.set("TENSOR_DIMENSIONS", "FLOAT", [1.0, 2.0])
    assert info.value.status == 2010 and info.value.call == (
        "cudnnBackendSetAttribute(TENSOR, TENSOR_DIMENSIONS)"
    )
    with pytest.raises(errors.CudnnBadParamError) as info:
        tensor.set("TENSOR_UNIQUE_ID", "INT64", [1, 2])
    assert info.value.status == 2000
    with pytest.raises(errors.CudnnBadParamError) as info:
        tensor.set("CONVOLUTION_SPATIAL_DIMS", "INT64", [2])  # another kind's attribute
    assert info.value.status == 2000
    operation = _cudnn.BackendDescriptor("OPERATION_CONVOLUTION_FORWARD")
    with pytest.raises(errors.CudnnBadParamError) as info:
        operation.set("OPERATION_CONVOLUTION_FORWARD_ALPHA", "INT64", [1])
    assert info.value.status == 2000  # ALPHA takes FLOAT or DOUBLE
    with pytest.raises(errors.CudnnBadParamError) as info:
        operation.set("OPERATION_CONVOLUTION_FORWARD_X", "BACKEND_DESCRIPTOR",
                      [_cudnn.BackendDescriptor("CONVOLUTION")])  # fmt: skip
    assert info.value.status == 2012
    config = _cudnn.BackendDescriptor("ENGINECFG")
    with pytest.raises(errors.CudnnNotSupportedError):
        config.set("ENGINECFG_WORKSPACE_SIZE", "INT64", [0])  # cuDNN's to say


@simulator
def test_a_finalized_descriptor_is_read_only_and_an_open_one_unreadable() -> None:
    tensor = _tensor_missing("")
    with pytest.raises(errors.CudnnNotInitializedError):
        tensor.get("TENSOR_UNIQUE_ID", "INT64")
    tensor.finalize()
    assert tensor.get("TENSOR_DIMENSIONS", "INT64", 2) == [1, 2]
    assert tensor.get("TENSOR_IS_VIRTUAL", "BOOLEAN") == [False]
    with pytest.raises(errors.CudnnNotInitializedError) as info:
        tensor.set("TENSOR_UNIQUE_ID", "INT64", [2])
    assert info.value.call == "cudnnBackendSetAttribute(TENSOR, TENSOR_UNIQUE_ID)"
    with pytest.raises(errors.CudnnBadParamError):
        tensor.finalize()
    assert tensor.get("TENSOR_UNIQUE_ID", "INT64") == [1]


@simulator
def test_single_descriptors_are_read_with_count_one(handle) -> None:
    config = _results(_graph(handle, _problem("NCHW"), "forward"))[0]
    with pytest.raises(errors.CudnnBadParamError) as info:
        config.get("ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", kind="ENGINE")
    assert "count=1" in "".join(info.value.__notes__)
    with pytest.raises(errors.CudnnBadParamError, match="requestedElementCount"):
        config.get("ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", 2, kind="ENGINE")
    with pytest.raises(errors.CudnnBadParamError) as info:
        config.get("ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", 1, kind="ENGINECFG")
    assert info.value.status == 2012  # an engine is no ENGINECFG
    (engine,) = config.get("ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", 1, kind="ENGINE")
    assert (engine.kind, engine.finalized) == ("ENGINE", True)


@simulator
def test_a_backward_filter_configuration_with_the_workspace_knob_builds_no_beta_1_plan(
    handle,
) -> None:
    problem = _problem("NCHW")
    blending = _graph(handle, problem, "backward_filter", beta=1.0)
    refused = [c for c in _results(blending) if (25, 1) in _identity(c).knobs]
    assert refused
    with pytest.raises(errors.CudnnNotSupportedError, match="beta = 1"):
        _plan(handle, refused[0])
    _plan(handle, next(c for c in _results(blending) if (25, 1) not in _identity(c).knobs))
    plain = _graph(handle, problem, "backward_filter", beta=0.0)
    _plan(handle, engine_config(plain, _identity(refused[0])))
    forward = _graph(handle, problem, "forward", beta=1.0)
    _plan(handle, next(c for c in _results(forward) if (25, 1) in _identity(c).knobs))


@simulator
def test_a_pointer_less_aligned_than_its_tensor_declares_is_a_conformance_error(
    handle, sim
) -> None:
    problem = _problem("NCHW")
    graph = _graph(handle, problem, "forward")
    plan = _plan(handle, _results(graph, "FALLBACK")[0])
    from ucudnn._native import _cuda

    buffers = Buffers(problem, 0)
    x, _, y = buffers.pointers
    wider = _cuda.DeviceBuffer(problem.nbytes("w") + 16)  # w at wider + 4 is 4-byte aligned
    with pytest.raises(sim.ConformanceError, match="TENSOR_BYTE_ALIGNMENT 16"):
        _cudnn.execute_plan(handle, plan, (1, 2, 3), (x, wider.ptr + 4, y), 0)
    relaxed = _cudnn.BackendDescriptor("OPERATIONGRAPH")
    relaxed.set("OPERATIONGRAPH_HANDLE", "HANDLE", [handle])
    relaxed.set(
        "OPERATIONGRAPH_OPS", "BACKEND_DESCRIPTOR",
        [_operation(problem, "forward", alignments=(16, 4, 16))],
    )  # fmt: skip
    relaxed.finalize()
    plan = _plan(handle, _results(relaxed, "FALLBACK")[0])
    _cudnn.execute_plan(handle, plan, (1, 2, 3), (x, wider.ptr + 4, y), 0)
    wider.release()
    buffers.release()


@simulator
def test_a_workspace_shorter_than_the_plans_is_an_illegal_address(handle, sim) -> None:
    from ucudnn._native import _cuda

    problem = _problem("NHWC")
    graph = _graph(handle, problem, "forward")
    plan = _plan(handle, _results(graph)[0])
    needed = _workspace_of(plan, "EXECUTION_PLAN_WORKSPACE_SIZE")
    assert needed > 0
    buffers = Buffers(problem, needed - 8)
    with pytest.raises(sim.IllegalAddressError, match="workspace"):
        _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, buffers.workspace.ptr)
    with pytest.raises(errors.CudnnBadParamError, match="null"):
        _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, 0)
    with pytest.raises(errors.CudnnBadParamError, match="uid 3"):
        _cudnn.execute_plan(handle, plan, (1, 2), buffers.pointers[:2], buffers.workspace.ptr)
    freed = _cuda.DeviceBuffer(needed)
    address = freed.ptr
    freed.release()
    with pytest.raises(sim.IllegalAddressError, match="freed"):
        _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, address)
    buffers.release()


@simulator
def test_execute_plans_own_arguments_are_checked_as_the_binding_checks_them(handle) -> None:
    graph = _graph(handle, _problem("NCHW"), "forward")
    plan = _plan(handle, _results(graph)[0])
    with pytest.raises(TypeError, match="expected tuple, got list"):
        _cudnn.execute_plan(handle, plan, [1, 2, 3], (0, 0, 0), 0)
    with pytest.raises(ValueError, match="as long as each other"):
        _cudnn.execute_plan(handle, plan, (1, 2, 3), (0, 0), 0)
    with pytest.raises(TypeError, match="must be int64s"):
        _cudnn.execute_plan(handle, plan, (1, 2, 3), (0, -1, 0), 0)
    with pytest.raises(ValueError, match="finalized EXECUTION_PLAN"):
        _cudnn.execute_plan(handle, graph, (1, 2, 3), (0, 0, 0), 0)


# --- faults ----------------------------------------------------------------------------------


@simulator
def test_an_engine_can_be_made_to_fail_at_its_plan_or_its_execution(handle, sim) -> None:
    problem = _problem("NCHW")
    graph = _graph(handle, problem, "forward")
    config = _results(graph)[0]
    tag = _identity(config).tag
    rule = sim.fail_engine(tag, at="plan", times=1, when=lambda p: p.kernel == "forward")
    with pytest.raises(errors.CudnnNotSupportedError, match="injected") as info:
        _plan(handle, config)
    assert info.value.call == "cudnnBackendFinalize(EXECUTION_PLAN)" and rule.hits == 1
    plan = _plan(handle, config)  # used up
    sim.fail_engine(tag, status=5003)
    buffers = Buffers(problem, _workspace_of(plan, "EXECUTION_PLAN_WORKSPACE_SIZE"))
    calls = len(sim.DEVICE.calls)
    with pytest.raises(errors.CudnnError, match="injected") as info:
        _cudnn.execute_plan(handle, plan, (1, 2, 3), buffers.pointers, buffers.workspace.ptr)
    assert info.value.status == 5003 and info.value.call == "cudnnBackendExecute"
    assert len(sim.DEVICE.calls) == calls
    other = _plan(handle, _results(graph)[1])  # another configuration still runs
    _cudnn.execute_plan(handle, other, (1, 2, 3), buffers.pointers, buffers.workspace.ptr)
    with pytest.raises(ValueError, match="at must be"):
        sim.fail_engine(tag, at="build")
    sim.reset()
    buffers.release()


# --- against the real binding (ordinary pass) -------------------------------------------------

differential = pytest.mark.skipif(SIMULATED, reason="compares the simulator with the binding")


@differential
@pytest.mark.parametrize(
    "name",
    ["BACKEND_KINDS", "BACKEND_ATTRIBUTES", "BACKEND_TYPES", "BACKEND_DATA_TYPES",
     "BACKEND_CONVOLUTION_MODES", "HEURISTIC_MODES", "NUMERICAL_NOTES", "BEHAVIOR_NOTES"],
)  # fmt: skip
def test_backend_name_tables_are_the_bindings(name: str) -> None:
    assert list(getattr(sim_cudnn, name).items()) == list(getattr(_cudnn, name).items())


def _outcome(make):
    """What a call gives: its value, or the exception's class, status, call and notes."""
    try:
        value = make()
    except errors.CudnnError as exc:
        notes = getattr(exc, "__notes__", [])
        return ("CudnnError", type(exc).__name__, exc.status, exc.call, notes)
    except (TypeError, ValueError) as exc:
        return (type(exc).__name__, str(exc))
    return ("ok", value)


def _set(kind: str, attribute: str, attr_type: str, values):
    return lambda m: m.BackendDescriptor(kind).set(attribute, attr_type, values)


@differential
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.BackendDescriptor("FOO"),
        lambda m: repr(m.BackendDescriptor("TENSOR")),
        lambda m: (m.BackendDescriptor("ENGINE").kind, m.BackendDescriptor("ENGINE").finalized),
        _set("TENSOR", "FOO", "INT64", [1]),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "FOO", [1]),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "INT64", [1]),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "INT64", [1, 2]),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "INT64", []),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "INT64", 1),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "INT64", ["1"]),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "INT64", [1.0]),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "INT64", [2**63]),
        _set("TENSOR", "TENSOR_UNIQUE_ID", "INT32", [1]),
        _set("TENSOR", "TENSOR_DIMENSIONS", "FLOAT", [1.0]),
        _set("TENSOR", "TENSOR_DIMENSIONS", "INT64", []),
        _set("TENSOR", "TENSOR_DIMENSIONS", "CHAR", b"abc"),
        _set("TENSOR", "TENSOR_DATA_TYPE", "DATA_TYPE", ["HALF"]),
        _set("TENSOR", "TENSOR_DATA_TYPE", "DATA_TYPE", ["FOO"]),
        _set("TENSOR", "TENSOR_DATA_TYPE", "DATA_TYPE", [2]),
        _set("TENSOR", "TENSOR_DATA_TYPE", "INT64", [2]),
        _set("TENSOR", "TENSOR_IS_VIRTUAL", "BOOLEAN", [1]),
        _set("TENSOR", "CONVOLUTION_COMP_TYPE", "DATA_TYPE", ["FLOAT"]),
        _set(
            "OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_FORWARD_ALPHA", "DOUBLE", [1.0]
        ),
        _set("OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_FORWARD_ALPHA", "INT64", [1]),
        _set(
            "OPERATION_CONVOLUTION_FORWARD",
            "OPERATION_CONVOLUTION_FORWARD_ALPHA",
            "FLOAT",
            [1.0, 2.0],
        ),
        _set("OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_FORWARD_BETA", "FLOAT", ["x"]),
        _set("OPERATIONGRAPH", "OPERATIONGRAPH_OPS", "BACKEND_DESCRIPTOR", []),
        _set("OPERATIONGRAPH", "OPERATIONGRAPH_OPS", "BACKEND_DESCRIPTOR", [None]),
        _set("OPERATIONGRAPH", "OPERATIONGRAPH_HANDLE", "HANDLE", [None]),
        _set("OPERATIONGRAPH", "OPERATIONGRAPH_ENGINE_GLOBAL_COUNT", "INT64", [3]),
        _set("ENGINEHEUR", "ENGINEHEUR_MODE", "HEUR_MODE", ["A", "B"]),
        _set("ENGINEHEUR", "ENGINEHEUR_MODE", "HEUR_MODE", "A"),
        _set("ENGINEHEUR", "ENGINEHEUR_SM_COUNT_TARGET", "INT64", [10]),
        _set("ENGINECFG", "ENGINECFG_WORKSPACE_SIZE", "INT64", [5]),
        _set("ENGINECFG", "ENGINECFG_KNOB_CHOICES", "BACKEND_DESCRIPTOR", []),
        _set("KNOB_INFO", "KNOB_INFO_TYPE", "KNOB_TYPE", [1]),
        _set("KNOB_CHOICE", "KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE", [2**31]),
        _set("EXECUTION_PLAN", "EXECUTION_PLAN_WORKSPACE_SIZE", "INT64", [0]),
        _set("EXECUTION_PLAN", "EXECUTION_PLAN_JSON_REPRESENTATION", "CHAR", [b"{}"]),
        _set("EXECUTION_PLAN", "EXECUTION_PLAN_JSON_REPRESENTATION", "CHAR", ["{}"]),
        _set("VARIANT_PACK", "VARIANT_PACK_DATA_POINTERS", "VOID_PTR", [16, 32]),
        _set("VARIANT_PACK", "VARIANT_PACK_DATA_POINTERS", "VOID_PTR", [-1]),
        _set("VARIANT_PACK", "VARIANT_PACK_WORKSPACE", "VOID_PTR", [0, 8]),
        lambda m: m.BackendDescriptor("TENSOR").get("TENSOR_UNIQUE_ID", "INT64"),
        lambda m: m.BackendDescriptor("TENSOR").get("TENSOR_UNIQUE_ID", "BACKEND_DESCRIPTOR"),
        lambda m: m.BackendDescriptor("TENSOR").get("TENSOR_UNIQUE_ID", "INT64", kind="TENSOR"),
        lambda m: m.BackendDescriptor("ENGINEHEUR").get(
            "ENGINEHEUR_RESULTS", "BACKEND_DESCRIPTOR", kind="FOO"
        ),
        lambda m: m.BackendDescriptor("TENSOR").get("TENSOR_UNIQUE_ID", "INT64", -1),
        lambda m: m.BackendDescriptor("ENGINECFG").get(
            "ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", kind="ENGINE"
        ),
        lambda m: m.BackendDescriptor("ENGINECFG").get(
            "ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", 1, kind="ENGINE"
        ),
        lambda m: m.BackendDescriptor("EXECUTION_PLAN").get(
            "EXECUTION_PLAN_WORKSPACE_SIZE", "INT64"
        ),
    ],
)
def test_set_and_get_refuse_as_the_binding_and_cudnn_do(make) -> None:
    assert _outcome(lambda: make(sim_cudnn)) == _outcome(lambda: make(_cudnn))


# --- the data's builder ----------------------------------------------------------------------


def test_the_builder_keeps_generic_engines_each_bands_first_and_fastest_and_first_sources():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import build_simulator_engines as builder

    MiB = 1 << 20

    def plan(name: str, workspace: int, ms: float) -> dict:
        return {"name": name, "workspace": workspace, "ms": ms}

    half = "N=8 C=4->K=4 8x8 filter 3x3 NCHW float16"
    plans = [
        plan("eng62_k2=0", 2 * MiB, 1.0), plan("eng62_k2=1", 3 * MiB, 0.5),
        plan("eng62_k2=2", 4 * MiB, 0.9), plan("eng45_k2=0", 0, 2.0), plan("eng0", 0, 9.0),
        plan("eng70_k2=3", 100 * MiB, 0.4), {"index": 9, "error": "Deselecting execution plan"},
    ]  # fmt: skip
    first = {"device": "H100", "cudnn": "9.19.0", "records": [
        {"net": "resnet50", "problem": half, "kernel": "forward", "plans": plans},
        {"net": "vgg16", "problem": half, "kernel": "backward_data",
         "plans": [plan("eng77", 0, 1.0)]},
        {"net": "resnet50", "problem": half.replace("float16", "float32"),
         "kernel": "forward", "plans": [plan("eng28_k2=4", 0, 3.0)]},
    ]}  # fmt: skip
    second = {"device": "H100", "cudnn": "9.19.0", "records": [
        {"net": "resnet50", "problem": half, "kernel": "forward",
         "plans": [plan("eng1", 0, 5.0)]},
    ]}  # fmt: skip
    document = builder.build([("a", first), ("b", second)], {"resnet50"}, band_top=1)
    tags = document["tags"]
    records = {(p, k): [(tags[t], w, ms) for t, w, ms in c] for p, k, c in document["records"]}
    assert records[(half, "forward")] == [
        ("eng62_k2=0", 2 * MiB, 1.0),  # the 8 MiB band's first, then its fastest
        ("eng62_k2=1", 3 * MiB, 0.5),
        ("eng45_k2=0", 0, 2.0),
        ("eng0", 0, 9.0),  # no knobs: always kept
        ("eng70_k2=3", 100 * MiB, 0.4),
    ]
    assert len(records) == 2  # vgg16 left out; the second source's repeat too
    assert document["fma_engines"] == {"forward": [28]}
    assert document["engine_count"] == 78  # vgg16's engine 77 still counts
    assert (document["cudnn_version"], document["sources"]) == (91900, ["a", "b"])
