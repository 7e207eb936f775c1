"""The Handle: micro-batched cuDNN convolutions for frameworks, planned on first sight.

WR mode (a per-kernel workspace limit) plans each kernel alone when first seen and runs it in
one shared workspace. WD mode (one total budget) collects the kernels a network registers and
plans them together by integer programming, each schedule at its own offset in one arena.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import warnings
from collections.abc import Iterable, Sequence

from ucudnn._native import _cuda, _cudnn
from ucudnn.core.arena import GrowingArena
from ucudnn.core.device import device_facts
from ucudnn.core.problem import KERNELS, ConvProblem, check_kernel
from ucudnn.errors import CudaOutOfMemoryError, ReplanWarning, WorkspaceFallbackWarning
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.planner.config import byte_count
from ucudnn.planner.graph import free_name
from ucudnn.planner.plan import KernelPlan, Plan
from ucudnn.planner.tables import Candidate, Schedule
from ucudnn.runtime import backend, executor
from ucudnn.runtime.benchmark import Benchmarker, BenchmarkSettings
from ucudnn.runtime.buffers import device_pointer
from ucudnn.runtime.check import EquivalenceCheck, download
from ucudnn.runtime.options import HandleOptions, layer_option, scalar_option
from ucudnn.runtime.planning import plan_kernels
from ucudnn.runtime.steps import ROLES
from ucudnn.runtime.work import Work

logger = logging.getLogger(__name__)

# Argument names of each kernel's tensors, matching ROLES (for error messages).
_ARGS = {
    "forward": ("x", "w", "y"),
    "backward_data": ("w", "dy", "dx"),
    "backward_filter": ("x", "dy", "dw"),
}


@dataclasses.dataclass
class _Slot:
    """One kernel of one layer: its own schedule, even when its problem is shared."""

    name: str  # the layer name the planner knows it by
    problem: ConvProblem
    kernel: str


class Handle:
    """Micro-batched convolutions on one device and stream.

    Give `workspace_limit` (bytes per kernel, WR) or `total_workspace` (bytes for the whole
    network, WD), as integers or text such as "64MiB"; unset values come from UCUDNN_*
    variables (see `ucudnn.planner.config`). `policy` is a policy name or micro-batch sizes;
    `stream` is a cudaStream_t as an int (0: the legacy default stream). Every argument is
    checked before any device work. Arrays' pending work on their own streams is ordered
    before `stream` (DLPack's and __cuda_array_interface__'s stream protocols). The work is
    enqueued on `stream` and nothing here waits for it: keep the arrays alive, and order your
    own stream after it (or synchronise), until it is done.
    """

    def __init__(
        self,
        *,
        workspace_limit: int | str | None = None,
        total_workspace: int | str | None = None,
        policy: str | Iterable[int] | None = None,
        database: str | os.PathLike[str] | None = None,
        use_cache: bool = True,
        stream: int = 0,
        deterministic: bool = False,
        check: bool | None = None,
        benchmark: BenchmarkSettings | None = None,
    ) -> None:
        options = HandleOptions.resolve(
            workspace_limit=workspace_limit, total_workspace=total_workspace, policy=policy,
            database=database, use_cache=use_cache, stream=stream, deterministic=deterministic,
            check=check, benchmark=benchmark,
        )  # fmt: skip
        self.mode, self.limit, self.policy = options.mode, options.limit, options.policy
        self.deterministic = options.deterministic
        self.stream = options.stream
        self.check = EquivalenceCheck() if options.check else None
        # Asking for the device first turns "no driver" into NoDeviceError, where cudnnCreate
        # would only say NOT_INITIALIZED.
        self.facts = device_facts()
        self.device = _cuda.get_device()
        self.cudnn = _cudnn.Handle()
        self.cudnn.set_stream(self.stream)
        self.cache = BenchmarkCache(options.database) if options.database is not None else None
        self.benchmarker = Benchmarker(self.cudnn, self.facts, self.cache, options.benchmark)
        self.plan: Plan | None = None
        self._names: dict[tuple[str, str], str] = {}  # (layer, problem key) -> planner name
        self._slots: dict[tuple[str, str], _Slot] = {}  # (planner name, kernel) -> slot
        self._descriptors: dict[str, backend.ProblemDescriptors] = {}
        self._workspace = GrowingArena()
        self._fallback_warned = False
        self._closed = False

    # -- the three convolutions -------------------------------------------------------------
    # Tensors are raw device pointers (int), DeviceArrays, or arrays exporting
    # __cuda_array_interface__ or DLPack: `object`, since each is checked when used.
    def forward(
        self,
        x: object,
        w: object,
        y: object,
        problem: ConvProblem,
        *,
        bias: object = None,
        alpha: float = 1.0,
        beta: float = 0.0,
        layer: str | None = None,
    ) -> None:
        """y = alpha * conv(x, w) + beta * y, plus `bias` (when given: one value per output
        channel, shape (K,), added once after all micro-batches)."""
        self._run("forward", problem, (x, w, y), alpha, beta, layer, bias)

    def backward_data(
        self,
        w: object,
        dy: object,
        dx: object,
        problem: ConvProblem,
        *,
        alpha: float = 1.0,
        beta: float = 0.0,
        layer: str | None = None,
    ) -> None:
        """dx = alpha * conv_transpose(dy, w) + beta * dx."""
        self._run("backward_data", problem, (w, dy, dx), alpha, beta, layer)

    def backward_filter(
        self,
        x: object,
        dy: object,
        dw: object,
        problem: ConvProblem,
        *,
        alpha: float = 1.0,
        beta: float = 0.0,
        layer: str | None = None,
    ) -> None:
        """dw = alpha * (gradient of the filter from x and dy) + beta * dw."""
        self._run("backward_filter", problem, (x, dy, dw), alpha, beta, layer)

    def backward_bias(
        self, dy: object, db: object, problem: ConvProblem, *, alpha: float = 1.0, beta: float = 0.0
    ) -> None:
        """db = alpha * (dy summed over the batch and every position) + beta * db: the gradient
        of `forward`'s bias, of shape (K,). One cuDNN call, not micro-batched."""
        alpha, beta = scalar_option(alpha, "alpha"), scalar_option(beta, "beta")
        self._check_open(problem)
        dy_ptr = self._pointer(dy, problem, "y", "dy")
        db_ptr = self._pointer(db, problem, "b", "db")
        descs = self.descriptors(problem)
        if problem.batch == 0:
            backend.scale_gradient(self.cudnn, self.stream, descs, "b", db_ptr, beta)
            return
        backend.backward_bias(self.cudnn, descs, dy_ptr, db_ptr, alpha, beta)

    def run_algorithm(
        self,
        kernel: str,
        problem: ConvProblem,
        tensors: Sequence[object],
        algo: int | str,
        *,
        bias: object = None,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> None:
        """Run one algorithm (enum value or name) on the whole batch, with no micro-batching.

        `tensors` are in the kernel's argument order (as for `forward` and the others); `bias`
        is forward's.
        """
        check_kernel(kernel)
        algo = backend.algorithm_number(kernel, algo)
        alpha, beta = scalar_option(alpha, "alpha"), scalar_option(beta, "beta")
        pointers = self._pointers(kernel, problem, tensors)
        bias_ptr = self._bias_pointer(kernel, bias, problem)
        descs = self.descriptors(problem)
        if problem.batch == 0:
            self._empty_batch(kernel, descs, pointers, beta)
            return
        need = backend.workspace_size(
            self.cudnn, descs, kernel, problem.batch, algo, problem.math_type
        )
        if need > self.limit:
            raise ValueError(
                f"{kernel} algorithm {_cudnn.ALGORITHMS[kernel][algo]} needs {need} bytes of "
                f"workspace for {problem.describe()}, over the limit of {self.limit} bytes"
            )
        workspace = self._workspace.ensure(need).at(0, need)
        single = Candidate(problem.batch, algo, 0.0, need, problem.math_type)
        executor.execute(
            self.cudnn, descs, kernel, [single], **pointers,
            workspace=workspace, workspace_bytes=need, alpha=alpha, beta=beta,
        )  # fmt: skip
        if bias_ptr is not None:
            backend.add_bias(self.cudnn, descs, bias_ptr, pointers["y"])

    # -- queries ----------------------------------------------------------------------------
    def schedule(self, problem: ConvProblem, kernel: str, layer: str | None = None) -> Schedule:
        """The micro-batches and algorithms this kernel runs with (plans it if needed)."""
        return self._kernel_plan(self._slot(problem, kernel, layer)).schedule

    def workspace_size(self, problem: ConvProblem, kernel: str, layer: str | None = None) -> int:
        """Workspace bytes the kernel's schedule uses (the handle owns and provides them)."""
        return self.schedule(problem, kernel, layer).workspace_bytes

    @property
    def workspace_in_use(self) -> int:
        """Bytes of device memory the handle holds for workspaces now."""
        return self._workspace.capacity

    # -- network-wide planning (WD) ---------------------------------------------------------
    def register(
        self, problem: ConvProblem, kernels: Iterable[str] = KERNELS, layer: str | None = None
    ) -> None:
        """Declare kernels that will run, so WD can plan the network as a whole."""
        for kernel in [kernels] if isinstance(kernels, str) else kernels:
            self._slot(problem, kernel, layer)

    def finalize(self) -> Plan:
        """Plan every kernel seen so far together (WD), or each alone (WR), and keep it."""
        self._replan(self.limit)
        assert self.plan is not None
        return self.plan

    def replan(
        self,
        *,
        workspace_limit: int | str | None = None,
        total_workspace: int | str | None = None,
    ) -> Plan:
        """Change the limit (or budget) and plan again; measurements come from the cache."""
        name = "total_workspace" if self.mode == "wd" else "workspace_limit"
        new = total_workspace if self.mode == "wd" else workspace_limit
        wrong = workspace_limit if self.mode == "wd" else total_workspace
        if wrong is not None:
            raise ValueError(f"this handle is in {self.mode.upper()} mode; pass {name}")
        if new is not None:
            self.limit = byte_count(new, name)
        return self.finalize()

    def release_workspace(self) -> None:
        """Free the workspace now (say, before a memory-hungry phase); the next call that
        needs it allocates it again, falling back to smaller plans if memory is short."""
        self._workspace.release()

    def close(self) -> None:
        """Release the workspace and the cache connection now rather than at collection."""
        self.release_workspace()
        if self.cache is not None:
            self.cache.close()
        self._closed = True

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------
    def _slot(self, problem: ConvProblem, kernel: str, layer: str | None) -> _Slot:
        check_kernel(kernel)
        _check_problem(problem)
        layer = layer_option(layer)
        identity = (layer or "", problem.key())
        name = self._names.get(identity)
        if name is None:
            # Every (layer, problem) pair gets its own name: a layer seen at two batch sizes
            # (train and test nets) must not share a schedule.
            base = layer or f"conv{len(self._names)}"
            name = free_name(base, set(self._names.values()))
            self._names[identity] = name
        key = (name, kernel)
        if key not in self._slots:
            self._slots[key] = _Slot(name, problem, kernel)
        return self._slots[key]

    def _kernel_plan(self, slot: _Slot) -> KernelPlan:
        key = (slot.name, slot.kernel)
        if self.plan is not None:
            try:
                return self.plan[key]
            except KeyError:  # a kernel the plan has not seen
                if self.mode == "wd":
                    warnings.warn(
                        f"kernel {slot.kernel} of {slot.name} appeared after the network was "
                        "planned; planning the whole network again",
                        ReplanWarning,
                        stacklevel=4,
                    )
        self._replan(self.limit)
        assert self.plan is not None
        return self.plan[key]

    def _replan(self, limit: int) -> None:
        """Plan all slots at `limit`; on allocation failure fall back to less workspace."""
        work = [Work(s.name, s.problem, s.kernel) for s in self._slots.values()]
        while True:
            plan = plan_kernels(
                self.benchmarker, work, mode=self.mode, limit=limit, policy=self.policy,
                deterministic=self.deterministic,
            )  # fmt: skip
            try:
                self._workspace.ensure(plan.workspace_bytes)
            except CudaOutOfMemoryError:
                if limit == 0:
                    raise
                limit = limit // 2 if limit > 1024 else 0
                self._warn_fallback(plan.workspace_bytes, limit)
                continue
            self.plan = plan
            return

    def _warn_fallback(self, wanted: int, limit: int) -> None:
        logger.info("could not allocate %d bytes of workspace; planning within %d", wanted, limit)
        if not self._fallback_warned:
            warnings.warn(
                f"could not allocate {wanted} bytes of workspace; falling back to plans that "
                f"need at most {limit} bytes (warned once per handle)",
                WorkspaceFallbackWarning,
                stacklevel=5,
            )
            self._fallback_warned = True

    def descriptors(self, problem: ConvProblem) -> backend.ProblemDescriptors:
        """The cuDNN descriptors of `problem`, made once per handle and reused."""
        key = problem.key()
        if key not in self._descriptors:
            self._descriptors[key] = backend.ProblemDescriptors(problem)
        return self._descriptors[key]

    def _pointers(
        self, kernel: str, problem: ConvProblem, tensors: Sequence[object]
    ) -> dict[str, int]:
        """Device pointers of the kernel's tensors, each checked against the problem; arrays'
        pending work is ordered before this handle's stream."""
        self._check_open(problem)
        if len(tensors) != 3:
            raise TypeError(f"{kernel} takes 3 tensors ({', '.join(_ARGS[kernel])})")
        return {
            tensor: self._pointer(obj, problem, tensor, role)
            for tensor, role, obj in zip(ROLES[kernel], _ARGS[kernel], tensors, strict=True)
        }

    def _check_open(self, problem: ConvProblem) -> None:
        if self._closed:
            raise ValueError("this Handle is closed")
        _check_problem(problem)

    def _pointer(self, obj: object, problem: ConvProblem, tensor: str, role: str) -> int:
        return device_pointer(obj, problem, tensor, role, stream=self.stream, device=self.device)

    def _bias_pointer(self, kernel: str, bias: object, problem: ConvProblem) -> int | None:
        if bias is None:
            return None
        if kernel != "forward":
            raise ValueError(f"bias is added by the forward kernel, not by {kernel}")
        return self._pointer(bias, problem, "b", "bias")

    def _empty_batch(
        self, kernel: str, descs: backend.ProblemDescriptors, pointers: dict[str, int], beta: float
    ) -> None:
        """An empty batch: y and dx are empty too, and dw only scales by beta."""
        if kernel == "backward_filter":
            backend.scale_gradient(self.cudnn, self.stream, descs, "w", pointers["w"], beta)

    def _run(
        self,
        kernel: str,
        problem: ConvProblem,
        tensors: Sequence[object],
        alpha: float,
        beta: float,
        layer: str | None,
        bias: object = None,
    ) -> None:
        layer = layer_option(layer)
        alpha, beta = scalar_option(alpha, "alpha"), scalar_option(beta, "beta")
        pointers = self._pointers(kernel, problem, tensors)
        bias_ptr = self._bias_pointer(kernel, bias, problem)
        if problem.batch == 0:
            self._empty_batch(kernel, self.descriptors(problem), pointers, beta)
            return
        slot = self._slot(problem, kernel, layer)
        kernel_plan = self._kernel_plan(slot)
        if self._workspace.arena is None:  # released since planning
            self._replan(self.limit)
            kernel_plan = self._kernel_plan(slot)
        nbytes = kernel_plan.workspace_bytes
        workspace = self._workspace.ensure(nbytes).at(kernel_plan.offset or 0, nbytes)
        descs = self.descriptors(problem)
        output = ROLES[kernel][2]
        before = self._copy(pointers[output], problem.nbytes(output)) if self.check else None
        executor.execute(
            self.cudnn, descs, kernel, kernel_plan.schedule.parts, **pointers,
            workspace=workspace, workspace_bytes=nbytes, alpha=alpha, beta=beta,
        )  # fmt: skip
        if self.check is not None and before is not None:
            self._check(self.check, slot, kernel_plan, descs, pointers, before, alpha, beta)
        if bias_ptr is not None:
            backend.add_bias(self.cudnn, descs, bias_ptr, pointers["y"])

    def _copy(self, ptr: int, nbytes: int) -> _cuda.DeviceBuffer:
        copy = _cuda.DeviceBuffer(nbytes)
        _cuda.memcpy_dtod(copy.ptr, ptr, nbytes, self.stream)
        return copy

    def _check(
        self,
        check: EquivalenceCheck,
        slot: _Slot,
        kernel_plan: KernelPlan,
        descs: backend.ProblemDescriptors,
        pointers: dict[str, int],
        before: _cuda.DeviceBuffer,
        alpha: float,
        beta: float,
    ) -> None:
        """Run the undivided convolution on a copy of the old output and compare (debugging:
        its copy and workspace are allocated for the check, beside the handle's limit)."""
        problem, kernel = slot.problem, slot.kernel
        output = ROLES[kernel][2]
        single = kernel_plan.baseline or Candidate(problem.batch, 0, 0.0, 0, problem.math_type)
        need = backend.workspace_size(
            self.cudnn, descs, kernel, problem.batch, single.algo, single.math_type
        )
        same_algorithm = all(part.slot() == single.slot() for part in kernel_plan.schedule.parts)
        workspace = _cuda.DeviceBuffer(need)
        try:
            executor.execute(
                self.cudnn, descs, kernel,
                [dataclasses.replace(single, workspace_bytes=need)],
                **{**pointers, output: before.ptr},
                workspace=workspace.ptr, workspace_bytes=need, alpha=alpha, beta=beta,
            )  # fmt: skip
            nbytes = problem.nbytes(output)
            check.record(
                slot.name, kernel, problem,
                download(pointers[output], nbytes, self.stream),
                download(before.ptr, nbytes, self.stream),
                same_algorithm,
            )  # fmt: skip
        finally:
            workspace.release()
            before.release()


def _check_problem(problem: object) -> None:
    if not isinstance(problem, ConvProblem):
        raise TypeError(f"problem must be a ConvProblem, got {problem!r}")
