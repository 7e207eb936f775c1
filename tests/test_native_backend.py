"""ucudnn._native._cudnn's backend (graph) API: descriptors, values, errors, leaks; plans on a GPU.

Without a device cuDNN creates, sets and checks host-only descriptors (tensors, convolutions,
convolution operations, knob choices), but a finalize loads its engine sub-libraries first: the
cuDNN 9.28 wheel then refuses with CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED where there is no
libcuda, and a get needs a finalized descriptor. Tests that need a finalize skip naming that
status there instead of passing. Operation graphs, heuristics, plans and execution need a
handle: they are gpu tests (real device or the simulated one). Tests marked `real_cudnn` check
the real library itself (its own statuses, this module's tables, its memory) and skip on the
simulated device.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys

import numpy as np
import pytest

from tests import reference_conv
from ucudnn import _native, errors
from ucudnn._native import _cudnn
from ucudnn.core.problem import ConvProblem

real_cudnn = pytest.mark.skipif(
    _native.SIMULATED, reason="checks the real libcudnn, not the simulated device"
)
NO_DRIVER = "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"


def _new(kind: str) -> _cudnn.BackendDescriptor:
    return _cudnn.BackendDescriptor(kind)


def _finalize(desc: _cudnn.BackendDescriptor) -> None:
    """Finalize desc, or skip the test naming the status where cuDNN cannot without a driver."""
    try:
        desc.finalize()
    except errors.CudnnError as exc:
        if exc.status_name == NO_DRIVER:
            pytest.skip(f"{exc.call} without a driver: {exc.status_name}")
        raise
    assert desc.finalized


def _tensor(
    uid: int, dims: tuple[int, ...], dtype: str = "FLOAT", alignment: int = 16
) -> _cudnn.BackendDescriptor:
    """A packed, non-virtual tensor."""
    strides = [int(np.prod(dims[i + 1 :])) for i in range(len(dims))]
    tensor = _new("TENSOR")
    tensor.set("TENSOR_DATA_TYPE", "DATA_TYPE", [dtype])
    tensor.set("TENSOR_DIMENSIONS", "INT64", list(dims))
    tensor.set("TENSOR_STRIDES", "INT64", strides)
    tensor.set("TENSOR_UNIQUE_ID", "INT64", [uid])
    tensor.set("TENSOR_BYTE_ALIGNMENT", "INT64", [alignment])
    tensor.set("TENSOR_IS_VIRTUAL", "BOOLEAN", [False])
    return tensor


def _convolution(
    rank: int, mode: str = "CROSS_CORRELATION", compute: str = "FLOAT", padding: int = 1
) -> _cudnn.BackendDescriptor:
    conv = _new("CONVOLUTION")
    conv.set("CONVOLUTION_COMP_TYPE", "DATA_TYPE", [compute])
    conv.set("CONVOLUTION_CONV_MODE", "CONVOLUTION_MODE", [mode])
    conv.set("CONVOLUTION_SPATIAL_DIMS", "INT64", [rank])
    conv.set("CONVOLUTION_PRE_PADDINGS", "INT64", [padding] * rank)
    conv.set("CONVOLUTION_POST_PADDINGS", "INT64", [padding] * rank)
    conv.set("CONVOLUTION_DILATIONS", "INT64", [1] * rank)
    conv.set("CONVOLUTION_FILTER_STRIDES", "INT64", [1] * rank)
    return conv


# Per operation kind: its attribute prefix and its tensors' (attribute suffix, role) pairs.
_OPERATIONS = {
    "OPERATION_CONVOLUTION_FORWARD": (
        "OPERATION_CONVOLUTION_FORWARD_", (("X", "x"), ("W", "w"), ("Y", "y"))),
    "OPERATION_CONVOLUTION_BACKWARD_DATA": (
        "OPERATION_CONVOLUTION_BWD_DATA_", (("DX", "x"), ("W", "w"), ("DY", "y"))),
    "OPERATION_CONVOLUTION_BACKWARD_FILTER": (
        "OPERATION_CONVOLUTION_BWD_FILTER_", (("X", "x"), ("DW", "w"), ("DY", "y"))),
}  # fmt: skip
_UIDS = {"x": 1, "w": 2, "y": 3}


def _operation(
    kind: str,
    tensors: dict[str, _cudnn.BackendDescriptor],
    conv: _cudnn.BackendDescriptor,
    scalar_type: str = "FLOAT",
    alpha: float = 1.0,
    beta: float = 0.0,
) -> _cudnn.BackendDescriptor:
    prefix, roles = _OPERATIONS[kind]
    op = _new(kind)
    for suffix, role in roles:
        op.set(prefix + suffix, "BACKEND_DESCRIPTOR", [tensors[role]])
    op.set(prefix + "CONV_DESC", "BACKEND_DESCRIPTOR", [conv])
    op.set(prefix + "ALPHA", scalar_type, [alpha])
    op.set(prefix + "BETA", scalar_type, [beta])
    return op


def _problem_tensors(dtype: str = "FLOAT") -> dict[str, _cudnn.BackendDescriptor]:
    """x (2, 4, 6, 6), w (8, 4, 3, 3), y (2, 8, 6, 6): a 3x3 convolution with padding 1."""
    dims = {"x": (2, 4, 6, 6), "w": (8, 4, 3, 3), "y": (2, 8, 6, 6)}
    return {role: _tensor(_UIDS[role], dims[role], dtype) for role in dims}


# --- names -----------------------------------------------------------------------------------


@real_cudnn
def test_tables_name_what_the_graph_path_uses() -> None:
    assert {"TENSOR", "CONVOLUTION", *_OPERATIONS, "OPERATIONGRAPH", "ENGINEHEUR", "ENGINECFG",
            "ENGINE", "KNOB_INFO", "KNOB_CHOICE", "EXECUTION_PLAN",
            "VARIANT_PACK"} <= set(_cudnn.BACKEND_KINDS)  # fmt: skip
    assert {"INT64", "FLOAT", "DOUBLE", "BOOLEAN", "DATA_TYPE", "CONVOLUTION_MODE", "HEUR_MODE",
            "KNOB_TYPE", "NUMERICAL_NOTE", "BEHAVIOR_NOTE", "HANDLE", "BACKEND_DESCRIPTOR",
            "CHAR", "VOID_PTR"} <= set(_cudnn.BACKEND_TYPES)  # fmt: skip
    used = {
        "OPERATIONGRAPH_HANDLE", "OPERATIONGRAPH_OPS", "OPERATIONGRAPH_ENGINE_GLOBAL_COUNT",
        "ENGINEHEUR_OPERATION_GRAPH", "ENGINEHEUR_MODE", "ENGINEHEUR_RESULTS",
        "ENGINEHEUR_SM_COUNT_TARGET", "ENGINE_OPERATION_GRAPH", "ENGINE_GLOBAL_INDEX",
        "ENGINE_KNOB_INFO", "ENGINE_NUMERICAL_NOTE", "ENGINE_BEHAVIOR_NOTE", "KNOB_INFO_TYPE",
        "KNOB_INFO_MINIMUM_VALUE", "KNOB_INFO_MAXIMUM_VALUE", "KNOB_INFO_STRIDE",
        "KNOB_CHOICE_KNOB_TYPE", "KNOB_CHOICE_KNOB_VALUE", "ENGINECFG_ENGINE",
        "ENGINECFG_KNOB_CHOICES", "EXECUTION_PLAN_HANDLE", "EXECUTION_PLAN_ENGINE_CONFIG",
        "EXECUTION_PLAN_WORKSPACE_SIZE", "EXECUTION_PLAN_JSON_REPRESENTATION",
        "VARIANT_PACK_UNIQUE_IDS", "VARIANT_PACK_DATA_POINTERS", "VARIANT_PACK_WORKSPACE",
    }  # fmt: skip
    for prefix, roles in _OPERATIONS.values():
        used |= {prefix + name for name in ("CONV_DESC", "ALPHA", "BETA", *dict(roles))}
    assert used <= set(_cudnn.BACKEND_ATTRIBUTES), used - set(_cudnn.BACKEND_ATTRIBUTES)
    # Newer than 9.1: known exactly when the loaded library has them (the build's headers do).
    newer = {"ENGINECFG_WORKSPACE_SIZE": 90200, "ENGINECFG_SHARED_MEMORY_USED": 90200}
    for name, since in newer.items():
        assert (name in _cudnn.BACKEND_ATTRIBUTES) == (_cudnn.version() >= since), name
    assert set(_cudnn.HEURISTIC_MODES) == {"INSTANT", "B", "FALLBACK", "A"}
    assert {"TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION",
            "NONDETERMINISTIC"} <= set(_cudnn.NUMERICAL_NOTES)  # fmt: skip
    assert "RUNTIME_COMPILATION" in _cudnn.BEHAVIOR_NOTES
    # Names are unique both ways, so enum values read back as the name they were set with.
    for table in (_cudnn.BACKEND_DATA_TYPES, _cudnn.HEURISTIC_MODES, _cudnn.NUMERICAL_NOTES,
                  _cudnn.BEHAVIOR_NOTES, _cudnn.BACKEND_CONVOLUTION_MODES):  # fmt: skip
        assert len(set(table.values())) == len(table)


# --- host-only descriptors: create, set, finalize, read back ---------------------------------


@pytest.mark.parametrize("dtype", ["FLOAT", "HALF", "BFLOAT16", "DOUBLE"])
@pytest.mark.parametrize("dims", [(2, 3, 5, 7), (2, 3, 4, 5, 6)])
def test_tensor_round_trip(dtype: str, dims: tuple[int, ...]) -> None:
    tensor = _tensor(7, dims, dtype, alignment=8)
    assert (tensor.kind, tensor.finalized) == ("TENSOR", False)
    _finalize(tensor)
    strides = [int(np.prod(dims[i + 1 :])) for i in range(len(dims))]
    assert tensor.get("TENSOR_DIMENSIONS", "INT64") == list(dims)
    assert tensor.get("TENSOR_STRIDES", "INT64") == strides
    assert tensor.get("TENSOR_DATA_TYPE", "DATA_TYPE") == [dtype]
    assert tensor.get("TENSOR_UNIQUE_ID", "INT64") == [7]
    # TENSOR_BYTE_ALIGNMENT is not read back: cuDNN 9.28 answers NOT_SUPPORTED.
    assert tensor.get("TENSOR_IS_VIRTUAL", "BOOLEAN") == [False]
    assert tensor.get("TENSOR_DIMENSIONS", "INT64", count=2) == list(dims[:2])


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("mode", ["CROSS_CORRELATION", "CONVOLUTION"])
def test_convolution_round_trip(rank: int, mode: str) -> None:
    conv = _convolution(rank, mode, compute="DOUBLE", padding=2)
    _finalize(conv)
    assert conv.get("CONVOLUTION_COMP_TYPE", "DATA_TYPE") == ["DOUBLE"]
    # CONVOLUTION_CONV_MODE is not read back: cuDNN 9.28 wants it read as a DATA_TYPE.
    assert conv.get("CONVOLUTION_SPATIAL_DIMS", "INT64") == [rank]
    assert conv.get("CONVOLUTION_PRE_PADDINGS", "INT64") == [2] * rank
    assert conv.get("CONVOLUTION_POST_PADDINGS", "INT64") == [2] * rank
    assert conv.get("CONVOLUTION_DILATIONS", "INT64") == [1] * rank
    assert conv.get("CONVOLUTION_FILTER_STRIDES", "INT64") == [1] * rank


@pytest.mark.parametrize("kind", list(_OPERATIONS))
@pytest.mark.parametrize(("dtype", "scalar_type"), [("FLOAT", "FLOAT"), ("DOUBLE", "DOUBLE")])
def test_convolution_operation_round_trip(kind: str, dtype: str, scalar_type: str) -> None:
    """Each operation reads back its scalars, and its tensors as finalized descriptors."""
    tensors = _problem_tensors(dtype)
    conv = _convolution(2, compute=dtype)
    for desc in (*tensors.values(), conv):
        _finalize(desc)
    op = _operation(kind, tensors, conv, scalar_type, alpha=1.5, beta=0.25)
    _finalize(op)
    prefix, roles = _OPERATIONS[kind]
    assert op.get(prefix + "ALPHA", scalar_type) == [1.5]
    assert op.get(prefix + "BETA", scalar_type) == [0.25]
    # Single descriptors are read with count=1 (cuDNN counts none); cuDNN gives its own form
    # of each tensor back (5-d, grouped, without the unique id), so only its type is compared.
    for suffix, _ in roles:
        (tensor,) = op.get(prefix + suffix, "BACKEND_DESCRIPTOR", count=1, kind="TENSOR")
        assert (tensor.kind, tensor.finalized) == ("TENSOR", True)
        assert tensor.get("TENSOR_DATA_TYPE", "DATA_TYPE") == [dtype]
    # The convolution is not read back: cuDNN 9.28 refuses it for backward operations.


@real_cudnn
def test_single_descriptors_are_read_with_count_one() -> None:
    tensors = _problem_tensors()
    conv = _convolution(2)
    for desc in (*tensors.values(), conv):
        _finalize(desc)
    op = _operation("OPERATION_CONVOLUTION_FORWARD", tensors, conv)
    _finalize(op)
    with pytest.raises(errors.CudnnError) as info:  # BAD_PARAM or NOT_INITIALIZED, by kind
        op.get("OPERATION_CONVOLUTION_FORWARD_X", "BACKEND_DESCRIPTOR", kind="TENSOR")
    assert "count=1" in "".join(info.value.__notes__)
    with pytest.raises(errors.CudnnError, match="requestedElementCount"):
        op.get("OPERATION_CONVOLUTION_FORWARD_X", "BACKEND_DESCRIPTOR", count=2, kind="TENSOR")


def test_knob_choice_round_trip() -> None:
    """Knob types travel as ints (tags print them); values may be negative."""
    choice = _new("KNOB_CHOICE")
    choice.set("KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE", [25])
    choice.set("KNOB_CHOICE_KNOB_VALUE", "INT64", [-1])
    _finalize(choice)
    assert choice.get("KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE") == [25]
    assert choice.get("KNOB_CHOICE_KNOB_VALUE", "INT64") == [-1]


# --- errors ----------------------------------------------------------------------------------


def test_finalizing_an_incomplete_tensor_is_a_bad_param() -> None:
    tensor = _new("TENSOR")
    tensor.set("TENSOR_DATA_TYPE", "DATA_TYPE", ["FLOAT"])
    with pytest.raises(errors.CudnnError, match=r"cudnnBackendFinalize\(TENSOR\)") as info:
        tensor.finalize()
    if info.value.status_name == NO_DRIVER:
        pytest.skip(f"{info.value.call} without a driver: {info.value.status_name}")
    assert isinstance(info.value, errors.CudnnBadParamError)
    assert not tensor.finalized


@real_cudnn
def test_cudnn_statuses_map_to_error_classes_naming_the_call() -> None:
    """What the real library refuses without a device, with its own statuses."""
    tensor = _new("TENSOR")
    with pytest.raises(errors.CudnnNotInitializedError,
                       match=r"cudnnBackendGetAttribute\(TENSOR, TENSOR_DIMENSIONS\).*"
                             "NOT_INITIALIZED"):  # fmt: skip
        tensor.get("TENSOR_DIMENSIONS", "INT64")  # not finalized
    with pytest.raises(errors.CudnnBadParamError,
                       match=r"cudnnBackendSetAttribute\(TENSOR, TENSOR_DIMENSIONS\).*"
                             "BAD_PARAM_ATTRIBUTE_TYPE"):  # fmt: skip
        tensor.set("TENSOR_DIMENSIONS", "FLOAT", [1.0])
    with pytest.raises(
        errors.CudnnBadParamError,
        match=r"cudnnBackendSetAttribute\(TENSOR, CONVOLUTION_COMP_TYPE\)",
    ):
        tensor.set("CONVOLUTION_COMP_TYPE", "DATA_TYPE", ["FLOAT"])  # another kind's attribute


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: _new("TENSORS"), "'TENSORS'.*'TENSOR'"),
        (lambda: _new("TENSOR").set("TENSOR_DIMS", "INT64", [1]),
         "'TENSOR_DIMS'.*'TENSOR_DIMENSIONS'"),
        (lambda: _new("TENSOR").set("TENSOR_DIMENSIONS", "LONG", [1]), "'LONG'.*'INT64'"),
        (lambda: _new("TENSOR").get("TENSOR_DIMENSIONS", "LONG"), "'LONG'.*'INT64'"),
        (lambda: _new("TENSOR").set("TENSOR_DATA_TYPE", "DATA_TYPE", ["float32"]),
         "'float32'.*'FLOAT'"),
        (lambda: _new("ENGINEHEUR").set("ENGINEHEUR_MODE", "HEUR_MODE", ["C"]),
         "'C'.*'FALLBACK'"),
        (lambda: _new("CONVOLUTION").set("CONVOLUTION_CONV_MODE", "CONVOLUTION_MODE",
                                         ["cross_correlation"]),
         "'cross_correlation'.*'CROSS_CORRELATION'"),
    ],
)  # fmt: skip
def test_unknown_names_are_value_errors_listing_the_known_ones(call, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        call()


@pytest.mark.parametrize(
    ("kind", "attribute", "attr_type", "values"),
    [
        ("TENSOR", "TENSOR_DIMENSIONS", "INT64", ["2"]),
        ("TENSOR", "TENSOR_DIMENSIONS", "INT64", 2),
        ("TENSOR", "TENSOR_DATA_TYPE", "DATA_TYPE", "FLOAT"),  # a name, not a list of names
        ("TENSOR", "TENSOR_DATA_TYPE", "DATA_TYPE", [0]),
        ("TENSOR", "TENSOR_IS_VIRTUAL", "BOOLEAN", [0]),
        ("OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_FORWARD_ALPHA", "FLOAT", ["1"]),
        ("OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_FORWARD_X",
         "BACKEND_DESCRIPTOR", [1]),
        ("OPERATIONGRAPH", "OPERATIONGRAPH_HANDLE", "HANDLE", [0]),
        ("EXECUTION_PLAN", "EXECUTION_PLAN_JSON_REPRESENTATION", "CHAR", ["{}"]),
    ],
)  # fmt: skip
def test_values_of_the_wrong_python_type_are_type_errors(
    kind: str, attribute: str, attr_type: str, values: object
) -> None:
    with pytest.raises(TypeError, match=attribute):
        _new(kind).set(attribute, attr_type, values)


@real_cudnn
def test_this_modules_own_checks() -> None:
    tensor = _new("TENSOR")
    with pytest.raises(ValueError, match="does not fit in a 64-bit integer"):
        tensor.set("TENSOR_DIMENSIONS", "INT64", [2**63])
    with pytest.raises(ValueError, match="kind= is needed for BACKEND_DESCRIPTOR values"):
        tensor.get("TENSOR_DIMENSIONS", "BACKEND_DESCRIPTOR")
    with pytest.raises(ValueError, match="and only for them"):
        tensor.get("TENSOR_DIMENSIONS", "INT64", kind="TENSOR")
    assert repr(tensor) == "BackendDescriptor('TENSOR', finalized=False)"


# --- references and leaks --------------------------------------------------------------------


@real_cudnn
def test_descriptors_keep_what_they_were_given() -> None:
    """cuDNN points at the descriptors set on another: they must outlive it."""
    x, other = _tensor(1, (1, 1, 1, 1)), _tensor(1, (1, 1, 1, 1))
    before = sys.getrefcount(x)
    op = _new("OPERATION_CONVOLUTION_FORWARD")
    op.set("OPERATION_CONVOLUTION_FORWARD_X", "BACKEND_DESCRIPTOR", [x])
    assert sys.getrefcount(x) == before + 1
    op.set("OPERATION_CONVOLUTION_FORWARD_X", "BACKEND_DESCRIPTOR", [other])  # replaces x
    assert sys.getrefcount(x) == before
    del op
    gc.collect()
    assert sys.getrefcount(other) == before


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _descriptor_cycle() -> None:
    tensors = _problem_tensors()
    conv = _convolution(2)
    op = _operation("OPERATION_CONVOLUTION_BACKWARD_FILTER", tensors, conv)
    choice = _new("KNOB_CHOICE")
    choice.set("KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE", [2])
    for desc in (*tensors.values(), conv, op, choice):
        # Without a driver finalize fails: that error path must not leak either.
        with contextlib.suppress(errors.CudnnError):
            desc.finalize()
    with contextlib.suppress(TypeError):
        _new("VARIANT_PACK").set("VARIANT_PACK_UNIQUE_IDS", "INT64", ["1"])


@real_cudnn
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_descriptors_do_not_leak() -> None:
    for _ in range(500):  # loads cuDNN's sub-libraries and warms the allocators
        _descriptor_cycle()
    before = _rss_bytes()
    for _ in range(3000):
        _descriptor_cycle()
    # A backend descriptor holds hundreds of bytes or more: 21,000 leaked would be many MiB.
    assert _rss_bytes() - before < 2 << 20


# --- on a GPU: graph, heuristics, plan, execution ---------------------------------------------


@real_cudnn
@pytest.mark.gpu
def test_execute_plan_checks_its_arguments() -> None:
    handle = _cudnn.Handle()
    not_a_plan = _new("VARIANT_PACK")
    with pytest.raises(ValueError, match="finalized EXECUTION_PLAN"):
        _cudnn.execute_plan(handle, not_a_plan, (1,), (0,), 0)
    with pytest.raises(ValueError, match="finalized EXECUTION_PLAN"):
        _cudnn.execute_plan(handle, _new("EXECUTION_PLAN"), (1,), (0,), 0)
    with pytest.raises(ValueError, match="as long as each other"):
        _cudnn.execute_plan(handle, _new("EXECUTION_PLAN"), (1, 2), (0,), 0)
    with pytest.raises(ValueError, match="at most 8"):
        _cudnn.execute_plan(handle, _new("EXECUTION_PLAN"), (1,) * 9, (0,) * 9, 0)


@pytest.mark.gpu
def test_a_heuristic_plan_runs_a_convolution() -> None:
    """Graph -> heuristics (A, then FALLBACK) -> the first plan that builds -> execute_plan,
    against the numpy reference; and each config's identity reads back."""
    from ucudnn._native import _cuda
    from ucudnn.core.array import DeviceArray

    handle = _cudnn.Handle()
    tensors = _problem_tensors()
    conv = _convolution(2)
    for desc in (*tensors.values(), conv):
        desc.finalize()
    op = _operation("OPERATION_CONVOLUTION_FORWARD", tensors, conv, alpha=1.0, beta=0.0)
    op.finalize()
    graph = _new("OPERATIONGRAPH")
    graph.set("OPERATIONGRAPH_HANDLE", "HANDLE", [handle])
    graph.set("OPERATIONGRAPH_OPS", "BACKEND_DESCRIPTOR", [op])
    graph.finalize()
    # cuDNN 9.19 on an H100 answers NOT_SUPPORTED when the handle is read back: not asked.
    (engine_count,) = graph.get("OPERATIONGRAPH_ENGINE_GLOBAL_COUNT", "INT64")
    assert isinstance(engine_count, int) and engine_count >= 1

    configs = []
    for mode in ("A", "FALLBACK"):
        heuristics = _new("ENGINEHEUR")
        heuristics.set("ENGINEHEUR_OPERATION_GRAPH", "BACKEND_DESCRIPTOR", [graph])
        heuristics.set("ENGINEHEUR_MODE", "HEUR_MODE", [mode])
        heuristics.finalize()
        configs += heuristics.get("ENGINEHEUR_RESULTS", "BACKEND_DESCRIPTOR", kind="ENGINECFG")
    assert configs and all(cfg.kind == "ENGINECFG" and cfg.finalized for cfg in configs)
    for cfg in configs:
        (engine,) = cfg.get("ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", count=1, kind="ENGINE")
        (index,) = engine.get("ENGINE_GLOBAL_INDEX", "INT64")
        assert 0 <= index < engine_count
        notes = engine.get("ENGINE_NUMERICAL_NOTE", "NUMERICAL_NOTE")
        assert all(note in _cudnn.NUMERICAL_NOTES or note.startswith("UNKNOWN_")
                   for note in notes)  # fmt: skip
        knobs = cfg.get(
            "ENGINECFG_KNOB_CHOICES", "BACKEND_DESCRIPTOR", count=64, kind="KNOB_CHOICE"
        )
        for choice in knobs:
            assert choice.get("KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE")[0] >= 0

    plan = None
    for cfg in configs:
        candidate = _new("EXECUTION_PLAN")
        candidate.set("EXECUTION_PLAN_HANDLE", "HANDLE", [handle])
        candidate.set("EXECUTION_PLAN_ENGINE_CONFIG", "BACKEND_DESCRIPTOR", [cfg])
        try:
            candidate.finalize()
        except errors.CudnnError:
            continue
        plan = candidate
        break
    assert plan is not None, "no heuristic configuration built a plan"
    (workspace_bytes,) = plan.get("EXECUTION_PLAN_WORKSPACE_SIZE", "INT64")

    problem = ConvProblem.create(2, 4, 8, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    xa, wa = DeviceArray.from_numpy(x), DeviceArray.from_numpy(w)
    ya = DeviceArray.empty((2, 8, 6, 6), "float32")
    workspace = _cuda.DeviceBuffer(workspace_bytes)
    expected = reference_conv.forward(problem, x.astype(np.float64), w.astype(np.float64))
    _cudnn.execute_plan(handle, plan, (1, 2, 3), (xa.ptr, wa.ptr, ya.ptr), workspace.ptr)
    error = np.linalg.norm(ya.to_numpy() - expected) / np.linalg.norm(expected)
    assert error <= 5e-3  # TF32 engines are allowed here
