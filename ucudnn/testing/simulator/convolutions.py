"""The simulated legacy convolution API: checks, capabilities, Find, workspace and execution.

Every call first reads its descriptors into a `SimProblem` and refuses what cuDNN refuses;
what it can run, with what workspace and in what time, comes from the capability model
(`DEVICE.caps`), whose every answer carries its provenance. Execution checks the workspace
against what `…WorkspaceSize` reports and every operand against live memory, then defers the
arithmetic until something reads the output.
"""

from __future__ import annotations

import dataclasses

from ucudnn.core.problem import LAYOUTS as _LAYOUTS, packed_strides
from ucudnn.testing.simulator import numerics
from ucudnn.testing.simulator.capabilities import ALGORITHMS
from ucudnn.testing.simulator.convert import cudnn_error, to_int
from ucudnn.testing.simulator.descriptors import (
    BAD_PARAM,
    NOT_SUPPORTED,
    ConvolutionDescriptor,
    FilterDescriptor,
    TensorDescriptor,
)
from ucudnn.testing.simulator.device import DEVICE, CallRecord
from ucudnn.testing.simulator.faults import Context
from ucudnn.testing.simulator.problem import AlgoFacts, Kernel, SimProblem
from ucudnn.testing.simulator.tensors import Array, Operand, check_disjoint, operand

# Which of x, w and y each kernel reads (first, second) and writes, and what the binding calls
# the pointers.
ROLES: dict[Kernel, tuple[str, str, str]] = {
    "forward": ("x", "w", "y"),
    "backward_data": ("w", "y", "x"),
    "backward_filter": ("x", "y", "w"),
}
NAMES: dict[Kernel, tuple[str, str, str]] = {
    "forward": ("x", "w", "y"),
    "backward_data": ("w", "dy", "dx"),
    "backward_filter": ("x", "dy", "dw"),
}
_C_NAMES = {"forward": "Forward", "backward_data": "BackwardData",
            "backward_filter": "BackwardFilter"}  # fmt: skip
# The compute types cuDNN's legacy convolutions take for each data type.
COMPUTE = {"float32": ("float32",), "float16": ("float32", "float16"),
            "bfloat16": ("float32",), "float64": ("float64",)}  # fmt: skip


def c_call(kernel: Kernel, what: str) -> str:
    """The C name of a kernel's call: c_call("backward_data", "Find{}AlgorithmEx") ->
    "cudnnFindConvolutionBackwardDataAlgorithmEx"."""
    return "cudnn" + what.format(f"Convolution{_C_NAMES[kernel]}")


@dataclasses.dataclass(frozen=True)
class Descriptors:
    """The descriptors of one convolution call, by tensor: x, w and y (dx, dy, dw alike)."""

    kernel: Kernel
    x: TensorDescriptor
    w: FilterDescriptor
    y: TensorDescriptor
    conv: ConvolutionDescriptor

    def problem(self, call: str) -> SimProblem:
        """The problem these descriptors make, or the CudnnError cuDNN gives for them."""
        x, w, y, conv = self.x, self.w, self.y, self.conv
        expected = conv.output_dims(x, w)  # rank and channel checks, as cuDNN makes them
        if y.dims != expected:
            raise cudnn_error(BAD_PARAM, call, f"y dims {y.dims} are not the output {expected}")
        if not x.dtype == w.dtype == y.dtype:
            raise cudnn_error(
                BAD_PARAM, call, f"x, w and y types differ: {x.dtype}, {w.dtype}, {y.dtype}"
            )
        if w.dims[0] % conv.groups:
            raise cudnn_error(BAD_PARAM, call, f"K={w.dims[0]} is not a multiple of the groups")
        if conv.compute_dtype not in COMPUTE[x.dtype]:
            raise cudnn_error(
                NOT_SUPPORTED, call, f"{x.dtype} data cannot be computed in {conv.compute_dtype}"
            )
        return SimProblem(
            kernel=self.kernel,
            dtype=x.dtype,
            compute_dtype=conv.compute_dtype,
            math_type=conv.math_type,
            layout=_layout(x, y),
            filter_layout=w.layout,
            x_dims=x.dims,
            w_dims=w.dims,
            y_dims=y.dims,
            padding=conv.padding,
            stride=conv.stride,
            dilation=conv.dilation,
            groups=conv.groups,
            mode=conv.mode,
        )

    def operands(self, x: int, w: int, y: int, call: str) -> tuple[Operand, Operand, Operand]:
        """The kernel's two inputs and its output, in role order."""
        named: dict[str, TensorDescriptor | FilterDescriptor] = {
            "x": self.x,
            "w": self.w,
            "y": self.y,
        }
        pointers = dict(zip("xwy", (x, w, y), strict=True))
        first, second, out = (
            operand(name, named[tensor], pointers[tensor], call)
            for tensor, name in zip(ROLES[self.kernel], NAMES[self.kernel], strict=True)
        )
        return first, second, out


def _layout(x: TensorDescriptor, y: TensorDescriptor) -> str:
    for name in _LAYOUTS.get(len(x.dims) - 2, ()):
        if all(t.strides == packed_strides(t.dims, name) for t in (x, y)):
            return name
    return "strided"


def algorithm(algo: object, kernel: Kernel) -> int:
    value = to_int(algo, "algo")
    if not 0 <= value < len(ALGORITHMS[kernel]):
        raise ValueError(
            f"unknown {kernel} algorithm {value}; expected 0..{len(ALGORITHMS[kernel]) - 1}"
        )
    return value


def _fault(call: str, problem: SimProblem, algo: int | None = None) -> int | None:
    return DEVICE.faults.status(Context(call, kernel=problem.kernel, algo=algo, problem=problem))


def _raise_fault(call: str, problem: SimProblem, algo: int | None = None) -> None:
    status = _fault(call, problem, algo)
    if status is not None:
        raise cudnn_error(status, call, "injected fault")


def _supported(facts: AlgoFacts, problem: SimProblem, call: str) -> AlgoFacts:
    if not facts.ok:
        name = ALGORITHMS[problem.kernel][facts.algo]
        raise cudnn_error(
            facts.status,
            call,
            f"{name} does not run {problem.describe()} ({facts.provenance})",
        )
    return facts


def workspace_size(descs: Descriptors, algo: object) -> int:
    number = algorithm(algo, descs.kernel)
    call = c_call(descs.kernel, "Get{}WorkspaceSize")
    problem = descs.problem(call)
    _raise_fault(call, problem, number)
    return _supported(DEVICE.caps.facts(problem)[number], problem, call).workspace_bytes


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of Find's answer, before it becomes an AlgoPerf."""

    algo: int
    status: int
    time_ms: float
    memory: int
    deterministic: bool


def _ranked(rows: list[Row]) -> list[Row]:
    """cuDNN's order: what ran, fastest first, then what did not, in enum order."""
    ran = sorted((r for r in rows if r.status == 0), key=lambda r: r.time_ms)
    return ran + [r for r in rows if r.status != 0]


def _row(facts: AlgoFacts, status: int) -> Row:
    if status:
        return Row(facts.algo, status, -1.0, 0, facts.deterministic)
    return Row(facts.algo, 0, facts.time_ms, facts.workspace_bytes, facts.deterministic)


def find(
    descs: Descriptors,
    stream: int,
    pointers: tuple[int, int, int],
    requested: int,
    workspace: int,
    workspace_bytes: int,
) -> list[Row]:
    """Find…AlgorithmEx: every algorithm tried on the caller's buffers, whose output it
    overwrites (with NaN here, so nothing can rely on what Find left there)."""
    call = c_call(descs.kernel, "Find{}AlgorithmEx")
    problem = descs.problem(call)
    _raise_fault(call, problem)
    first, second, out = descs.operands(*pointers, call)
    given = workspace and workspace_bytes
    space = workspace_operand(workspace, workspace_bytes, call) if given else None
    check_apart((first, second), out, space, call)
    short, _ = DEVICE.caps.contract_status("find_without_workspace")
    rows = []
    for facts in DEVICE.caps.facts(problem):
        status = facts.status
        if status == 0 and facts.workspace_bytes > workspace_bytes:
            status = short
        if status == 0:
            status = _fault(call, problem, facts.algo) or 0
        rows.append(_row(facts, status))
    # Deferred like a result: the runs timed next usually replace it before anything reads it.
    span = out.span
    DEVICE.defer(span, True, (), lambda _: span.allocation.fill(span.offset, span.nbytes, 0xFF))
    DEVICE.advance(stream, sum(r.time_ms for r in rows if r.status == 0))
    return _ranked(rows)[:requested]


def check_apart(
    inputs: tuple[Operand, Operand], out: Operand, workspace: Operand | None, call: str
) -> None:
    """A convolution writes its output and its workspace: neither may share a byte with
    another operand (a staged input must lie outside the workspace the kernel is given)."""
    check_disjoint(out, [*inputs, *([workspace] if workspace else [])], call)
    if workspace is not None:
        check_disjoint(workspace, list(inputs), call)


def workspace_operand(ptr: int, nbytes: int, call: str) -> Operand:
    span = DEVICE.span(ptr, nbytes, "workspace", call)
    return Operand("workspace", "float32", (1,), (1,), span)


def run(
    descs: Descriptors,
    stream: int,
    alpha: float,
    beta: float,
    pointers: tuple[int, int, int],
    algo: object,
    workspace: int,
    workspace_bytes: int,
) -> None:
    """One convolution: checked now, computed when its output is read."""
    number = algorithm(algo, descs.kernel)
    call = c_call(descs.kernel, "{}")
    problem = descs.problem(call)
    _raise_fault(call, problem, number)
    facts = _supported(DEVICE.caps.facts(problem)[number], problem, call)
    if workspace_bytes < facts.workspace_bytes:
        status, provenance = DEVICE.caps.contract_status("workspace_too_small")
        raise cudnn_error(
            status,
            call,
            f"{ALGORITHMS[problem.kernel][number]} needs {facts.workspace_bytes} bytes of "
            f"workspace for {problem.describe()}, {workspace_bytes} given (status {provenance})",
        )
    operands = descs.operands(*pointers, call)
    space = workspace_operand(workspace, workspace_bytes, call) if workspace_bytes else None
    record = CallRecord(
        call, problem.kernel, number, problem.math_type, facts.deterministic, problem.batch, stream
    )
    launch(problem, stream, alpha, beta, operands, space, facts.time_ms, record)


def launch(
    problem: SimProblem,
    stream: int,
    alpha: float,
    beta: float,
    operands: tuple[Operand, Operand, Operand],
    workspace: Operand | None,
    time_ms: float,
    record: CallRecord,
) -> None:
    """Enqueue one convolution on checked operands (its two inputs and output, in role
    order): computed when its output is read, timed `time_ms` on `stream`, logged."""
    first, second, out = operands
    check_apart((first, second), out, workspace, record.call)
    inputs = (first, second, out) if beta != 0 else (first, second)  # beta 0 never reads y

    def compute(views: list[Array]) -> None:
        a, b, *old = (t.computed(v) for t, v in zip(inputs, views, strict=True))
        result = numerics.convolve(problem, a, b)
        out.write(numerics.blend(result, old[0] if old else None, alpha, beta, problem.dtype))

    DEVICE.defer(out.span, out.dense, inputs, compute, accumulates=beta != 0)
    DEVICE.advance(stream, time_ms)
    DEVICE.calls.append(record)
