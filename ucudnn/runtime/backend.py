"""cuDNN's legacy convolution API: descriptors of a problem, and the find, workspace and run
calls of its algorithms (`families.LegacyFamily` runs parts through it; the graph API's
engine configurations are `graph`'s).

The three kernels share one calling shape once their tensors are named by role: two inputs and
one output among x, w and y (forward reads x, w and writes y; backward-data reads w, dy and
writes dx; backward-filter reads x, dy and writes dw).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from ucudnn._native import _cuda, _cudnn
from ucudnn.core.checks import integer, shown
from ucudnn.core.engines import MATH_LICENCE
from ucudnn.core.problem import KERNELS, LAYOUTS, ConvProblem, check_kernel, packed_strides
from ucudnn.core.splits import BATCH, Axis
from ucudnn.runtime.staging import Staging
from ucudnn.runtime.steps import ROLES

# A kernel's operand: a tensor, or the filter (w).
Descriptor = _cudnn.TensorDescriptor | _cudnn.FilterDescriptor
# Where each kernel's two inputs and output sit among (x, w, y), in cuDNN's argument order.
_ROLE_INDEX: dict[str, tuple[int, ...]] = {
    k: tuple("xwy".index(t) for t in ROLES[k]) for k in KERNELS
}


def algorithm_number(kernel: str, algo: object) -> int:
    """cuDNN's enum value for the `algo` argument, an algorithm of `kernel` given as that value
    (any integral type, not bool) or as its name; every refusal names the valid values."""
    names = _cudnn.ALGORITHMS[check_kernel(kernel)]
    valid = f"algo must be a {kernel} algorithm, 0..{len(names) - 1} or one of {', '.join(names)}"
    if isinstance(algo, str):
        if algo not in names:
            raise ValueError(f"{valid}; got {shown(algo)}")
        return names.index(algo)
    try:
        number = integer(algo, "algo")
    except TypeError:
        raise TypeError(f"{valid}; got {shown(algo)} ({type(algo).__name__})") from None
    if not 0 <= number < len(names):
        raise ValueError(f"{valid}; got {number}")
    return number


class ProblemDescriptors:
    """cuDNN descriptors of one problem split along `axis`; x/y descriptors are made once per
    part size. An unequally padded problem (a border slab) has legacy descriptors of its
    `staging`'s problem, whose x the legacy calls here stage."""

    def __init__(self, problem: ConvProblem, axis: Axis = BATCH) -> None:
        self.problem = problem
        self.axis = axis
        self.staging = Staging.of(problem)
        self._legacy = legacy = problem if self.staging is None else self.staging.legacy
        self.w = _cudnn.FilterDescriptor(problem.dtype, problem.filter_layout, problem.w_dims)
        self.conv = _cudnn.ConvolutionDescriptor(
            legacy.padding,
            legacy.stride,
            legacy.dilation,
            mode=problem.mode,
            compute_dtype=problem.compute_dtype,
            groups=problem.groups,
            math_type=problem.math_type,
        )
        self._xy: dict[int, tuple[_cudnn.TensorDescriptor, _cudnn.TensorDescriptor]] = {}
        self._b: _cudnn.TensorDescriptor | None = None

    @property
    def b(self) -> _cudnn.TensorDescriptor:
        """The bias as cuDNN broadcasts it over y: (1, K, 1, ...), made on first use."""
        if self._b is None:
            dims = self.problem.b_dims
            self._b = _cudnn.TensorDescriptor(
                self.problem.dtype, dims, (dims[1], *(1,) * (len(dims) - 1))
            )
        return self._b

    def part(self, micro_batch: int) -> ConvProblem:
        """The problem a part of size `micro_batch` along the axis runs."""
        return self.axis.part(self.problem, micro_batch)

    def whole_xy(self) -> tuple[_cudnn.TensorDescriptor, _cudnn.TensorDescriptor]:
        """x and y of the whole problem, all its parts together."""
        return self.xy(self.axis.extent(self.problem))

    def xy(self, micro_batch: int) -> tuple[_cudnn.TensorDescriptor, _cudnn.TensorDescriptor]:
        """x and y of a part as the legacy calls take them (x staged, for a staged problem)."""
        if micro_batch not in self._xy:
            p = self.axis.part(self._legacy, micro_batch)
            self._xy[micro_batch] = (
                _cudnn.TensorDescriptor(p.dtype, p.x_dims, p.x_strides),
                _cudnn.TensorDescriptor(p.dtype, p.y_dims, p.y_strides),
            )
        return self._xy[micro_batch]

    def by_role(self, kernel: str, micro_batch: int) -> tuple[Descriptor, Descriptor, Descriptor]:
        x, y = self.xy(micro_batch)
        named: dict[str, Descriptor] = {"x": x, "w": self.w, "y": y}
        first, second, out = ROLES[check_kernel(kernel)]
        return named[first], named[second], named[out]


class DescriptorCache:
    """Descriptors of problems, each made once per split axis: a Handle's, kept across its
    plans, or one launch's own (the slabs of its parts)."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, str], ProblemDescriptors] = {}

    def get(self, problem: ConvProblem, axis: Axis = BATCH) -> ProblemDescriptors:
        key = (problem.key(), axis.name)
        if key not in self._made:
            self._made[key] = ProblemDescriptors(problem, axis)
        return self._made[key]


def candidate_math_type(requested: str, reported: str) -> str:
    """The math type to run a variant Find reported under `reported` with, for a problem that
    asked for `requested`: never one that allows less precise arithmetic than asked for (Find
    may report tensor-op or converting variants even under FMA or default math). A math type
    these headers do not name counts as the most permissive."""
    unknown = max(MATH_LICENCE.values()) + 1
    if MATH_LICENCE.get(reported, unknown) > MATH_LICENCE[requested]:
        return requested
    return reported


def add_bias(handle: _cudnn.Handle, descs: ProblemDescriptors, b: int, y: int) -> None:
    """y += b over the whole mini-batch: once, after all its micro-batches."""
    _cudnn.add_tensor(handle, 1.0, descs.b, b, 1.0, descs.whole_xy()[1], y)


def backward_bias(
    handle: _cudnn.Handle,
    descs: ProblemDescriptors,
    dy: int,
    db: int,
    alpha: float,
    beta: float,
) -> None:
    """db = alpha * (dy summed over the batch and every position) + beta * db."""
    dy_desc = descs.whole_xy()[1]
    _cudnn.convolution_backward_bias(handle, alpha, dy_desc, dy, beta, descs.b, db)


def _channels_first(dims: tuple[int, ...]) -> tuple[int, ...]:
    """Strides of a packed (N, C, ...) tensor: (1, K, 1, ...) biases and filters as tensors."""
    return packed_strides(dims, LAYOUTS[len(dims) - 2][0])


def scale_gradient(
    handle: _cudnn.Handle,
    stream: int,
    descs: ProblemDescriptors,
    tensor: Literal["w", "b"],
    ptr: int,
    beta: float,
) -> None:
    """dw or db = beta * itself: what a gradient becomes when an empty batch adds nothing.

    beta 0 writes zeros without reading, as cuDNN's calls do, so the old values may be
    anything (NaN included)."""
    p = descs.problem
    nbytes = p.nbytes(tensor)
    if beta == 1.0 or nbytes == 0:
        return
    if beta == 0.0:
        _cuda.memset(ptr, 0, nbytes, stream)
        return
    # The scaling is element by element, so the filter's layout does not matter.
    desc = (
        descs.b
        if tensor == "b"
        else _cudnn.TensorDescriptor(p.dtype, p.w_dims, _channels_first(p.w_dims))
    )
    _cudnn.scale_tensor(handle, desc, ptr, beta)


def _pointers(kernel: str, x: int, w: int, y: int) -> tuple[int, int, int]:
    """x, w and y in the kernel's role order."""
    pointers = (x, w, y)
    first, second, out = _ROLE_INDEX[kernel]
    return pointers[first], pointers[second], pointers[out]


def algorithm_count(handle: _cudnn.Handle, kernel: str) -> int:
    return _cudnn.algorithm_max_count(handle, check_kernel(kernel))


def workspace_size(
    handle: _cudnn.Handle,
    descs: ProblemDescriptors,
    kernel: str,
    micro_batch: int,
    algo: int,
    math_type: str,
) -> int:
    """Workspace bytes of `algo` under `math_type` (the size depends on it, and the shared
    descriptor may still hold another candidate's)."""
    d1, d2, d3 = descs.by_role(kernel, micro_batch)
    descs.conv.set_math_type(math_type)
    need = _cudnn.workspace_size(handle, kernel, d1, d2, descs.conv, d3, algo)
    return need + (descs.staging.nbytes(micro_batch) if descs.staging else 0)


def find(
    handle: _cudnn.Handle,
    descs: ProblemDescriptors,
    kernel: str,
    micro_batch: int,
    x: int,
    w: int,
    y: int,
    workspace: int,
    workspace_bytes: int,
) -> list[_cudnn.AlgoPerf]:
    """cuDNN's own trial of every algorithm on our buffers (used as a pre-filter only), under
    the problem's own math type. A staged problem's trial runs on its staged x, at the start of
    the workspace (Find only times: what that x holds does not matter)."""
    if descs.staging is not None:
        staged = descs.staging.nbytes(micro_batch)
        if workspace_bytes < staged:
            return []  # no algorithm runs: its staged x alone does not fit
        x, workspace, workspace_bytes = workspace, workspace + staged, workspace_bytes - staged
    d1, d2, d3 = descs.by_role(kernel, micro_batch)
    p1, p2, p3 = _pointers(kernel, x, w, y)
    descs.conv.set_math_type(descs.problem.math_type)
    requested = algorithm_count(handle, kernel)
    return _cudnn.find_algorithm_ex(
        handle, kernel, d1, p1, d2, p2, descs.conv, d3, p3, requested, workspace, workspace_bytes
    )


# A prepared call: (handle, alpha, beta, x, w, y, workspace, workspace_bytes) -> whether it
# newly left the candidate it was prepared for (an engine part falling back; never a legacy one).
PreparedRun = Callable[[_cudnn.Handle, float, float, int, int, int, int, int], bool]


def prepared_run(
    descs: ProblemDescriptors, kernel: str, micro_batch: int, algo: int, math_type: str
) -> PreparedRun:
    """The launch of one kernel on `micro_batch` samples, with its descriptors and argument
    order worked out once: calling it takes the pointers (x and y already offset) and the
    scalars, enqueues the work and does not wait for it."""
    d1, d2, d3 = descs.by_role(kernel, micro_batch)
    first, second, out = _ROLE_INDEX[check_kernel(kernel)]
    # Looked up once, here: a launch prepared while the call is stubbed keeps the stub.
    launch, conv = _cudnn.convolution, descs.conv

    def call(
        handle: _cudnn.Handle,
        alpha: float,
        beta: float,
        x: int,
        w: int,
        y: int,
        workspace: int,
        workspace_bytes: int,
    ) -> bool:
        pointers = (x, w, y)
        # The candidate was measured with its own math type; cuDNN reads it from the shared
        # descriptor, which may hold another candidate's.
        conv.set_math_type(math_type)
        launch(
            handle, kernel, alpha, d1, pointers[first], d2, pointers[second], conv, algo,
            workspace, workspace_bytes, beta, d3, pointers[out],
        )  # fmt: skip
        return False

    if descs.staging is None:
        return call
    return _staged(descs.staging, kernel, micro_batch, call)


def _staged(staging: Staging, kernel: str, micro_batch: int, call: PreparedRun) -> PreparedRun:
    """`call`, a legacy launch of `staging`'s problem, run on the staged x at the start of the
    workspace (`ucudnn.runtime.staging`)."""
    staged_bytes = staging.nbytes(micro_batch)
    writes_x = kernel == "backward_data"

    def staged(
        handle: _cudnn.Handle,
        alpha: float,
        beta: float,
        x: int,
        w: int,
        y: int,
        workspace: int,
        workspace_bytes: int,
    ) -> bool:
        buffer = workspace  # the staged x; the algorithm's workspace follows it
        if not writes_x:
            staging.zero(handle, micro_batch, buffer)
        if not writes_x or beta != 0.0:  # dx's planes, for a beta that reads them
            staging.copy_in(handle, micro_batch, x, buffer)
        call(
            handle, alpha, beta, buffer, w, y, workspace + staged_bytes,
            workspace_bytes - staged_bytes,
        )  # fmt: skip
        if writes_x:
            staging.copy_out(handle, micro_batch, x, buffer)
        return False

    return staged


def run(
    handle: _cudnn.Handle,
    descs: ProblemDescriptors,
    kernel: str,
    micro_batch: int,
    algo: int,
    math_type: str,
    alpha: float,
    beta: float,
    x: int,
    w: int,
    y: int,
    workspace: int,
    workspace_bytes: int,
) -> None:
    """Launch one kernel on `micro_batch` samples at x/y (already offset); no host sync."""
    call = prepared_run(descs, kernel, micro_batch, algo, math_type)
    call(handle, alpha, beta, x, w, y, workspace, workspace_bytes)
