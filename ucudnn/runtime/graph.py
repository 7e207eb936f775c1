"""One convolution kernel as a cuDNN graph-API (backend) operation graph, its engine
configurations and their execution plans.

This module decides which backend attributes to set, in which order and with which values;
`_cudnn.BackendDescriptor` only passes them to cuDNN. So everything here can be checked on a
CPU against a recording stand-in (tests/test_runtime_graph.py keeps the exact sequences).

Tensors are named by role whatever the kernel, with fixed unique ids (`UIDS`): x (dx for
backward data) is 1, w (dw for backward filter) is 2, y (dy for the backward kernels) is 3, so a
plan runs with the problem's x, w and y pointers in that order. The filter is a plain tensor
(K, C/groups, *filter) with its layout's strides: cuDNN's graph API has no group count, and
takes it from x's channels over w's. x and y keep the whole batch's strides, so a micro-batch's
tensors alias a slice of the caller's. A plan is built for fixed shapes, byte alignments, alpha
and beta (all set on the operation graph), hence `GraphPlans`' key.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Sequence
from typing import cast

from ucudnn._native import _cudnn
from ucudnn.core.checks import integer, shown
from ucudnn.core.engines import EngineConfig
from ucudnn.core.problem import ConvProblem, check_kernel, packed_strides
from ucudnn.errors import CudnnError
from ucudnn.runtime.steps import ROLES

logger = logging.getLogger(__name__)

UIDS: dict[str, int] = {"x": 1, "w": 2, "y": 3}
_UID_ORDER = (UIDS["x"], UIDS["w"], UIDS["y"])  # execute_plan's pointers come as (x, w, y)

# The most byte alignment declared: 16 bytes, one 128-bit vector load, is the most a
# convolution kernel uses (PyTorch declares no more). Declaring more than a pointer has lets
# cuDNN pick kernels that then fail or misbehave (pytorch/pytorch#91032).
MAX_ALIGNMENT = 16

# cudnnDataType_t names (after CUDNN_DATA_) of the problem's dtypes and compute dtypes.
DATA_TYPES = {"float32": "FLOAT", "float16": "HALF", "bfloat16": "BFLOAT16", "float64": "DOUBLE"}
CONVOLUTION_MODES = {"cross_correlation": "CROSS_CORRELATION", "convolution": "CONVOLUTION"}

# Per kernel: the operation's descriptor kind, its attributes' prefix, and the attribute of each
# tensor in `ROLES` order (forward x, w -> y; backward data w, dy -> dx; backward filter
# x, dy -> dw), as cudnn_graph.h names them.
OPERATIONS: dict[str, tuple[str, str, tuple[str, str, str]]] = {
    "forward": (
        "OPERATION_CONVOLUTION_FORWARD",
        "OPERATION_CONVOLUTION_FORWARD_",
        ("X", "W", "Y"),
    ),
    "backward_data": (
        "OPERATION_CONVOLUTION_BACKWARD_DATA",
        "OPERATION_CONVOLUTION_BWD_DATA_",
        ("W", "DY", "DX"),
    ),
    "backward_filter": (
        "OPERATION_CONVOLUTION_BACKWARD_FILTER",
        "OPERATION_CONVOLUTION_BWD_FILTER_",
        ("X", "DY", "DW"),
    ),
}

HEURISTIC_MODES = ("A", "FALLBACK")

# Built plans one Handle keeps. A schedule needs about one plan per (problem, kernel): 68 for
# ResNet-50 (issue 26's probe), a few times that with odd part sizes, poorly aligned parts and
# the beta = 1 plans of backward filter. A plan holds about 200 KiB of host memory (PyTorch's
# estimate for its own plan cache), so 1024 plans stay near 200 MiB, while a bound below what
# a schedule uses would rebuild plans on every step (runtime-compiled ones take up to a second).
MAX_PLANS = 1024


def alignment(pointer: int) -> int:
    """The byte alignment to declare for a tensor at `pointer`: the largest power of two that
    divides it, at most `MAX_ALIGNMENT` (0, a null pointer, counts as fully aligned)."""
    if type(pointer) is not int or pointer <= 0:  # checked off the hot path: 3 calls a part
        pointer = integer(pointer, "pointer", minimum=0)
        if pointer == 0:
            return MAX_ALIGNMENT
    lowest = pointer & -pointer  # the lowest bit set
    return lowest if lowest < MAX_ALIGNMENT else MAX_ALIGNMENT


def _checked_alignments(alignments: Sequence[int]) -> tuple[int, int, int]:
    if isinstance(alignments, str | bytes) or len(alignments) != 3:
        raise ValueError(
            f"alignments must be the (x, w, y) byte alignments, got {shown(alignments)}"
        )
    checked = tuple(integer(a, "alignment", minimum=1) for a in alignments)
    for value in checked:
        if value & (value - 1):
            raise ValueError(f"alignments must be powers of two, got {shown(alignments)}")
    return cast("tuple[int, int, int]", checked)


def _tensor(
    data_type: str, dims: Sequence[int], strides: Sequence[int], uid: int, byte_alignment: int
) -> _cudnn.BackendDescriptor:
    tensor = _cudnn.BackendDescriptor("TENSOR")
    tensor.set("TENSOR_DATA_TYPE", "DATA_TYPE", [data_type])
    tensor.set("TENSOR_DIMENSIONS", "INT64", list(dims))
    tensor.set("TENSOR_STRIDES", "INT64", list(strides))
    tensor.set("TENSOR_UNIQUE_ID", "INT64", [uid])
    tensor.set("TENSOR_BYTE_ALIGNMENT", "INT64", [byte_alignment])
    tensor.set("TENSOR_IS_VIRTUAL", "BOOLEAN", [False])
    tensor.finalize()
    return tensor


def _tensors(
    problem: ConvProblem, alignments: tuple[int, int, int]
) -> dict[str, _cudnn.BackendDescriptor]:
    """x, w and y of `problem` (its batch is the micro-batch), in that order."""
    data_type = DATA_TYPES[problem.dtype]
    w_strides = packed_strides(problem.w_dims, problem.filter_layout)
    shapes = {
        "x": (problem.x_dims, problem.x_strides),
        "w": (problem.w_dims, w_strides),
        "y": (problem.y_dims, problem.y_strides),
    }
    return {
        name: _tensor(data_type, dims, strides, UIDS[name], byte_alignment)
        for (name, (dims, strides)), byte_alignment in zip(shapes.items(), alignments, strict=True)
    }


def _convolution(problem: ConvProblem) -> _cudnn.BackendDescriptor:
    conv = _cudnn.BackendDescriptor("CONVOLUTION")
    conv.set("CONVOLUTION_COMP_TYPE", "DATA_TYPE", [DATA_TYPES[problem.compute_dtype]])
    conv.set("CONVOLUTION_CONV_MODE", "CONVOLUTION_MODE", [CONVOLUTION_MODES[problem.mode]])
    conv.set("CONVOLUTION_SPATIAL_DIMS", "INT64", [problem.rank])
    # Both ends alike, but for the border slabs of a spatial split (ucudnn.core.slabs).
    conv.set("CONVOLUTION_PRE_PADDINGS", "INT64", list(problem.padding))
    conv.set("CONVOLUTION_POST_PADDINGS", "INT64", list(problem.padding_end))
    conv.set("CONVOLUTION_DILATIONS", "INT64", list(problem.dilation))
    conv.set("CONVOLUTION_FILTER_STRIDES", "INT64", list(problem.stride))
    conv.finalize()
    return conv


def operation_graph(
    handle: _cudnn.Handle,
    problem: ConvProblem,
    kernel: str,
    alignments: tuple[int, int, int],
    alpha: float,
    beta: float,
) -> _cudnn.BackendDescriptor:
    """The finalized operation graph of one `kernel` of `problem` (whose batch is the
    micro-batch), for tensors with these (x, w, y) byte `alignments`, computing
    out = alpha * kernel(...) + beta * out."""
    kernel = check_kernel(kernel)
    tensors = _tensors(problem, _checked_alignments(alignments))
    conv = _convolution(problem)
    kind, prefix, names = OPERATIONS[kernel]
    # alpha and beta have the output's precision: double for float64, float otherwise.
    scalar = "DOUBLE" if problem.dtype == "float64" else "FLOAT"
    operation = _cudnn.BackendDescriptor(kind)
    for name, role in zip(names, ROLES[kernel], strict=True):
        operation.set(prefix + name, "BACKEND_DESCRIPTOR", [tensors[role]])
    operation.set(prefix + "CONV_DESC", "BACKEND_DESCRIPTOR", [conv])
    operation.set(prefix + "ALPHA", scalar, [float(alpha)])
    operation.set(prefix + "BETA", scalar, [float(beta)])
    operation.finalize()
    graph = _cudnn.BackendDescriptor("OPERATIONGRAPH")
    graph.set("OPERATIONGRAPH_HANDLE", "HANDLE", [handle])
    graph.set("OPERATIONGRAPH_OPS", "BACKEND_DESCRIPTOR", [operation])
    graph.finalize()
    return graph


@dataclasses.dataclass(frozen=True)
class EngineChoice:
    """One engine configuration the heuristics offered for an operation graph."""

    config: EngineConfig
    notes: tuple[str, ...]  # numerical notes, then behaviour notes, as cuDNN names them
    workspace_bytes: int | None  # ENGINECFG_WORKSPACE_SIZE; None where cuDNN does not say
    descriptor: _cudnn.BackendDescriptor  # the finalized ENGINECFG


def _int(descriptor: _cudnn.BackendDescriptor, attribute: str, attr_type: str = "INT64") -> int:
    value = descriptor.get(attribute, attr_type, 1)[0]
    if not isinstance(value, int):
        raise TypeError(f"{attribute} read back {shown(value)}, not an integer")
    return value


# cuDNN counts no knob or note list for a count query; like the cuDNN frontend, ask for more
# than there are types (46 knob types, 10 numerical and 5 behaviour notes in cuDNN 9.28).
MAX_KNOBS = 64
MAX_NOTES = 32


def _names(descriptor: _cudnn.BackendDescriptor, attribute: str, attr_type: str) -> list[str]:
    return [str(value) for value in descriptor.get(attribute, attr_type, MAX_NOTES)]


def _children(
    descriptor: _cudnn.BackendDescriptor, attribute: str, kind: str, count: int | None = None
) -> list[_cudnn.BackendDescriptor]:
    return cast(
        "list[_cudnn.BackendDescriptor]",
        descriptor.get(attribute, "BACKEND_DESCRIPTOR", count, kind),
    )


def _choice(config: _cudnn.BackendDescriptor) -> EngineChoice:
    """The identity, notes and workspace of one finalized ENGINECFG."""
    engine = _children(config, "ENGINECFG_ENGINE", "ENGINE", 1)[0]
    index = _int(engine, "ENGINE_GLOBAL_INDEX")
    notes = (
        *_names(engine, "ENGINE_NUMERICAL_NOTE", "NUMERICAL_NOTE"),
        *_names(engine, "ENGINE_BEHAVIOR_NOTE", "BEHAVIOR_NOTE"),
    )
    knobs = tuple(
        (_int(choice, "KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE"), _int(choice, "KNOB_CHOICE_KNOB_VALUE"))
        for choice in _children(config, "ENGINECFG_KNOB_CHOICES", "KNOB_CHOICE", MAX_KNOBS)
    )
    identity = EngineConfig(index, knobs)
    try:
        workspace: int | None = _int(config, "ENGINECFG_WORKSPACE_SIZE")
    # cuDNN before 9.2 has no such attribute (ValueError: the native module does not know the
    # name); a later one may still refuse it for an engine that cannot say before a plan.
    except (CudnnError, ValueError) as exc:
        logger.debug("%s: no workspace size before its plan: %s", identity.tag, exc)
        workspace = None
    return EngineChoice(identity, notes, workspace, config)


def _heuristic_results(
    graph: _cudnn.BackendDescriptor, mode: str
) -> list[_cudnn.BackendDescriptor]:
    heuristics = _cudnn.BackendDescriptor("ENGINEHEUR")
    heuristics.set("ENGINEHEUR_OPERATION_GRAPH", "BACKEND_DESCRIPTOR", [graph])
    heuristics.set("ENGINEHEUR_MODE", "HEUR_MODE", [mode])
    heuristics.finalize()
    # cuDNN hands its results back finalized: they are read, and built into plans, as they are.
    return _children(heuristics, "ENGINEHEUR_RESULTS", "ENGINECFG")


def heuristic_choices(
    graph: _cudnn.BackendDescriptor, modes: Sequence[str] = HEURISTIC_MODES
) -> list[EngineChoice]:
    """The engine configurations cuDNN's heuristics `modes` offer for `graph`, best first
    (mode by mode), each tag once where first ranked. A configuration that cannot be read is
    left out, and so is a mode cuDNN refuses for this graph, unless it refuses every mode: then
    the first refusal is raised."""
    if isinstance(modes, str) or not modes:
        raise ValueError(
            f"modes must be heuristics mode names, e.g. ('A', 'FALLBACK'), got {shown(modes)}"
        )
    choices: dict[str, EngineChoice] = {}
    refusals: list[CudnnError] = []
    for mode in modes:
        try:
            results = _heuristic_results(graph, mode)
        except CudnnError as exc:
            logger.debug("heuristics mode %s refused this graph: %s", mode, exc)
            refusals.append(exc)
            continue
        for rank, config in enumerate(results):
            try:
                choice = _choice(config)
            except (CudnnError, ValueError, TypeError) as exc:
                logger.debug("heuristics mode %s, result %d could not be read: %s", mode, rank, exc)
                continue
            choices.setdefault(choice.config.tag, choice)
    if len(refusals) == len(modes):
        raise refusals[0]
    return list(choices.values())


def engine_config(
    graph: _cudnn.BackendDescriptor, config: EngineConfig
) -> _cudnn.BackendDescriptor:
    """A finalized ENGINECFG for `graph` made from a configuration's identity (engine index
    and knob choices), as a stored tag names it: no heuristics query."""
    engine = _cudnn.BackendDescriptor("ENGINE")
    engine.set("ENGINE_OPERATION_GRAPH", "BACKEND_DESCRIPTOR", [graph])
    engine.set("ENGINE_GLOBAL_INDEX", "INT64", [config.index])
    engine.finalize()
    choices = []
    for knob, value in config.knobs:
        choice = _cudnn.BackendDescriptor("KNOB_CHOICE")
        choice.set("KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE", [knob])
        choice.set("KNOB_CHOICE_KNOB_VALUE", "INT64", [value])
        choice.finalize()
        choices.append(choice)
    descriptor = _cudnn.BackendDescriptor("ENGINECFG")
    descriptor.set("ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", [engine])
    if choices:  # an engine without knobs takes the default of each
        descriptor.set("ENGINECFG_KNOB_CHOICES", "BACKEND_DESCRIPTOR", choices)
    descriptor.finalize()
    return descriptor


@dataclasses.dataclass(frozen=True)
class GraphPlan:
    """A built execution plan and what it needs to run."""

    descriptor: _cudnn.BackendDescriptor  # the finalized EXECUTION_PLAN
    workspace_bytes: int
    tag: str  # the engine configuration it runs


def build_plan(
    handle: _cudnn.Handle, config_descriptor: _cudnn.BackendDescriptor, tag: str
) -> GraphPlan:
    """The execution plan of a finalized ENGINECFG (`tag` names it); runtime-compiled engines
    compile here."""
    plan = _cudnn.BackendDescriptor("EXECUTION_PLAN")
    plan.set("EXECUTION_PLAN_HANDLE", "HANDLE", [handle])
    plan.set("EXECUTION_PLAN_ENGINE_CONFIG", "BACKEND_DESCRIPTOR", [config_descriptor])
    plan.finalize()
    return GraphPlan(plan, _int(plan, "EXECUTION_PLAN_WORKSPACE_SIZE"), tag)


def run_plan(
    handle: _cudnn.Handle, plan: GraphPlan, x: int, w: int, y: int, workspace: int
) -> None:
    """Run `plan` on the problem's x, w and y (dx, dw, dy as the kernel has them), with
    `workspace` holding at least `plan.workspace_bytes`: one call into the native module."""
    _cudnn.execute_plan(handle, plan.descriptor, _UID_ORDER, (x, w, y), workspace)


PlanKey = tuple[str, str, EngineConfig, tuple[int, int, int], float, float]


class GraphPlans:
    """The execution plans one Handle has built, by (problem, kernel, configuration, byte
    alignments, alpha, beta): the least recently used goes first beyond `max_entries`."""

    def __init__(self, max_entries: int = MAX_PLANS) -> None:
        self.max_entries = integer(max_entries, "max_entries", minimum=1)
        self._plans: collections.OrderedDict[PlanKey, GraphPlan] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._plans)

    def plan(
        self,
        handle: _cudnn.Handle,
        problem: ConvProblem,
        kernel: str,
        config: EngineConfig,
        alignments: tuple[int, int, int],
        alpha: float,
        beta: float,
    ) -> GraphPlan:
        """The plan running `config` for `kernel` of `problem` (batch = the micro-batch),
        built on first use."""
        checked = _checked_alignments(alignments)
        key: PlanKey = (problem.key(), kernel, config, checked, float(alpha), float(beta))
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            return plan
        graph = operation_graph(handle, problem, kernel, checked, alpha, beta)
        plan = build_plan(handle, engine_config(graph, config), config.tag)
        self._plans[key] = plan
        while len(self._plans) > self.max_entries:
            self._plans.popitem(last=False)
        return plan

    def clear(self) -> None:
        self._plans.clear()
