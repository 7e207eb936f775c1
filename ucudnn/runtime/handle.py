"""The Handle: micro-batched cuDNN convolutions for frameworks, planned on first sight.

WR mode (a per-kernel workspace limit) plans each kernel alone when first seen and runs it in
one shared workspace. WD mode (one total budget) collects the kernels a network registers and
plans them together by integer programming, each schedule at its own offset in one arena.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Sequence
from typing import SupportsIndex

from ucudnn._native import _cuda, _cudnn
from ucudnn.core.arena import GrowingArena
from ucudnn.core.argtypes import PolicyArgument, Size
from ucudnn.core.checks import shown
from ucudnn.core.device import device_facts
from ucudnn.core.problem import KERNELS, ConvProblem, check_kernel
from ucudnn.core.splits import BATCH
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.planner.config import byte_count
from ucudnn.planner.plan import Plan
from ucudnn.planner.policies import Policy
from ucudnn.planner.tables import Candidate, Schedule
from ucudnn.runtime import backend, executor
from ucudnn.runtime.benchmark import Benchmarker, BenchmarkSettings
from ucudnn.runtime.buffers import device_pointer
from ucudnn.runtime.check import (
    EquivalenceCheck,
    copy_on_device,
    download,
    reference_part,
    run_reference,
)
from ucudnn.runtime.engine_calls import EngineRuns
from ucudnn.runtime.engines_setting import engines_setting
from ucudnn.runtime.launches import Launches, Ready
from ucudnn.runtime.options import HandleOptions, layer_option, scalar_option
from ucudnn.runtime.plan_book import PlanBook
from ucudnn.runtime.slots import Slot
from ucudnn.runtime.steps import ROLES

logger = logging.getLogger(__name__)

# Argument names of each kernel's tensors, matching ROLES (for error messages).
_ARGS = {
    "forward": ("x", "w", "y"),
    "backward_data": ("w", "dy", "dx"),
    "backward_filter": ("x", "dy", "dw"),
}


class Handle:
    """Micro-batched convolutions on one device and stream.

    Give `workspace_limit` (bytes per kernel, WR) or `total_workspace` (bytes for the whole
    network), as integers or text such as "64MiB"; unset values come from UCUDNN_* variables
    (see `ucudnn.planner.config`). An argument beats the environment: `workspace_limit` selects
    WR even with UCUDNN_TOTAL_WORKSPACE_SIZE set, and `total_workspace` (else that variable)
    selects WD, as `ucudnn plan` chooses. `workspace_sharing` says how a total serves the
    kernels: "divided" (the default: each kernel its own slice, their sizes adding up to the
    total, WD, for frameworks that keep one workspace per layer) or "shared" (one buffer of the
    total that each kernel uses in turn, as this Handle runs them one at a time: WR at the
    total, often much faster). `engines` says whether to measure cuDNN's graph-API engine
    configurations besides the legacy algorithms (None: UCUDNN_ENGINES, else wherever they can
    run: cuDNN >= 9.2 and heuristics that answer; `self.engines` says what is in effect and
    why). `policy` is a policy name or micro-batch sizes; `stream` is a cudaStream_t as an int
    (0: the legacy default stream). Every argument is checked before any device work. Arrays'
    pending work on their own streams is ordered before `stream` (DLPack's and
    __cuda_array_interface__'s stream protocols). The work is enqueued on `stream` and nothing
    here waits for it: keep the arrays alive, and order your own stream after it (or
    synchronise), until it is done.

    Raises (when made):
        TypeError: an option of the wrong type (a size neither an integer nor text, a bool or
            a float as the stream, `benchmark` not a BenchmarkSettings).
        ValueError: both workspace_limit and total_workspace, text that is no size or not a
            whole number of bytes, an unknown policy or workspace_sharing, or a bad UCUDNN_*
            variable standing for an option.
        ImportError: cuDNN or the CUDA runtime cannot be loaded.
        NoDeviceError: no usable CUDA device.
        CudnnError: cuDNN cannot make its handle.
    """

    def __init__(
        self,
        *,
        workspace_limit: Size | None = None,
        total_workspace: Size | None = None,
        policy: PolicyArgument | None = None,
        database: str | os.PathLike[str] | None = None,
        use_cache: bool = True,
        stream: SupportsIndex = 0,
        deterministic: bool = False,
        check: bool | None = None,
        benchmark: BenchmarkSettings | None = None,
        engines: bool | None = None,
        workspace_sharing: str | None = None,
    ) -> None:
        options = HandleOptions.resolve(
            workspace_limit=workspace_limit, total_workspace=total_workspace, policy=policy,
            database=database, use_cache=use_cache, stream=stream, deterministic=deterministic,
            check=check, benchmark=benchmark, engines=engines,
            workspace_sharing=workspace_sharing,
        )  # fmt: skip
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
        self.engines = engines_setting(options.engines)
        settings = dataclasses.replace(
            options.benchmark, engines=self.engines.enabled, deterministic_only=self.deterministic
        )
        self.benchmarker = Benchmarker(self.cudnn, self.facts, self.cache, settings)
        self._engine_runs = EngineRuns(self.engines.how_to_turn_off())
        self._launches = Launches(self.cudnn, self._engine_runs)
        self._workspace = GrowingArena()
        self._book = PlanBook(
            self.benchmarker, self._workspace, mode=options.mode, limit=options.limit,
            policy=options.policy, deterministic=self.deterministic,
            on_new_plan=self._launches.clear,
        )  # fmt: skip
        self._closed = False

    @property
    def mode(self) -> str:
        """The mode: "wr" (a limit per kernel) or "wd" (one budget for the network)."""
        return self._book.mode

    @property
    def limit(self) -> int:
        """The workspace limit per kernel (WR) or the budget (WD), in bytes."""
        return self._book.limit

    @property
    def policy(self) -> Policy:
        """The micro-batch sizes planned with."""
        return self._book.policy

    @property
    def plan(self) -> Plan | None:
        """The plan in use; None before the first kernel is planned."""
        return self._book.plan

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
        channel, shape (K,), added once after all micro-batches).

        Raises:
            TypeError: `problem` is not a ConvProblem; a tensor is neither a device pointer
                nor a device array, or has the wrong dtype; alpha or beta is not a number; the
                layer name is not text.
            ValueError: a tensor of the wrong shape or strides, on another device, or a null
                pointer; alpha or beta not finite; a layer name that cannot be one; the
                Handle is closed; a part of a plan given to `use_plan` that no legacy
                algorithm runs within the workspace the plan gives it.
            InfeasibleError: no schedule fits the limit or budget (the message names the
                smallest that would); NoAlgorithmError, a subclass, when cuDNN runs none of
                its algorithms for the problem. The Handle forgets the kernel and goes on.
            SolverError: in WD mode, the solver planning the network fails.
            CudaError, CudnnError: a CUDA or cuDNN call fails.
        """
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
        """dx = alpha * conv_transpose(dy, w) + beta * dx.

        Raises:
            TypeError, ValueError, InfeasibleError, SolverError, CudaError, CudnnError: as
                `forward` does, for the same reasons.
        """
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
        """dw = alpha * (gradient of the filter from x and dy) + beta * dw.

        Raises:
            TypeError, ValueError, InfeasibleError, SolverError, CudaError, CudnnError: as
                `forward` does, for the same reasons.
        """
        self._run("backward_filter", problem, (x, dy, dw), alpha, beta, layer)

    def backward_bias(
        self, dy: object, db: object, problem: ConvProblem, *, alpha: float = 1.0, beta: float = 0.0
    ) -> None:
        """db = alpha * (dy summed over the batch and every position) + beta * db: the gradient
        of `forward`'s bias, of shape (K,). One cuDNN call, not micro-batched.

        Raises:
            TypeError: `problem` is not a ConvProblem; dy or db is neither a device pointer nor
                a device array, or has the wrong dtype; alpha or beta is not a number.
            ValueError: dy or db of the wrong shape, on another device, or a null pointer;
                alpha or beta not finite; the Handle is closed.
            CudnnError: the cuDNN call fails.
        """
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

        Raises:
            TypeError: not three tensors, or a tensor, `problem`, alpha or beta as `forward`
                refuses them; an algorithm neither a number nor a name.
            ValueError: an unknown kernel or algorithm, a bias for a kernel other than
                forward, an algorithm whose workspace exceeds the limit, or a tensor as
                `forward` refuses it.
            CudaError, CudnnError: a CUDA or cuDNN call fails (CudnnNotSupportedError when
                cuDNN cannot run the algorithm on this problem).
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
            self.cudnn, descs, kernel, [single], pointers["x"], pointers["w"], pointers["y"],
            workspace=workspace, workspace_bytes=need, alpha=alpha, beta=beta,
        )  # fmt: skip
        if bias_ptr is not None:
            backend.add_bias(self.cudnn, descs, bias_ptr, pointers["y"])

    # -- queries ----------------------------------------------------------------------------
    def schedule(self, problem: ConvProblem, kernel: str, layer: str | None = None) -> Schedule:
        """The micro-batches and algorithms this kernel runs with (plans it if needed).

        Raises:
            TypeError: `problem` is not a ConvProblem, or the layer name is not text.
            ValueError: an unknown kernel, or a layer name that cannot be one.
            InfeasibleError, SolverError, CudaError, CudnnError: planning fails, as for
                `forward`.
        """
        return self._book.kernel_plan(self._slot(problem, kernel, layer)).schedule

    def workspace_size(self, problem: ConvProblem, kernel: str, layer: str | None = None) -> int:
        """Workspace bytes the kernel's schedule uses (the handle owns and provides them).

        Raises:
            TypeError, ValueError, InfeasibleError, SolverError, CudaError, CudnnError: as
                `schedule` does.
        """
        return self.schedule(problem, kernel, layer).workspace_bytes

    @property
    def workspace_in_use(self) -> int:
        """Bytes of device memory the handle holds for workspaces now."""
        return self._workspace.capacity

    # -- network-wide planning (WD) ---------------------------------------------------------
    def register(
        self, problem: ConvProblem, kernels: Iterable[str] = KERNELS, layer: str | None = None
    ) -> None:
        """Declare kernels that will run, so WD can plan the network as a whole.

        Raises:
            TypeError: `problem` is not a ConvProblem, or the layer name is not text.
            ValueError: an unknown kernel, or a layer name that cannot be one.
        """
        for kernel in [kernels] if isinstance(kernels, str) else kernels:
            self._slot(problem, kernel, layer)

    def finalize(self) -> Plan:
        """Plan every kernel seen so far together (WD), or each alone (WR), and keep it; build
        now the execution plans of the parts that engine configurations run, so that the first
        convolution compiles nothing.

        A kernel that cannot be planned (InfeasibleError, or NoAlgorithmError when cuDNN runs
        none of its algorithms) is forgotten and named in the error; the others are planned
        without it, and those planned before keep their schedules in WR.

        Raises:
            InfeasibleError: a kernel has no schedule within the limit or budget;
                NoAlgorithmError, a subclass, when cuDNN runs none of its algorithms.
            SolverError: in WD mode, the solver fails.
            CudaError, CudnnError: a CUDA or cuDNN call fails while measuring or building.
        """
        plan = self._book.plan_missing()
        self._launches.build_ahead(plan, self._book.slots)
        return plan

    def replan(
        self,
        *,
        workspace_limit: Size | None = None,
        total_workspace: Size | None = None,
    ) -> Plan:
        """Change the limit (or budget) and plan again; measurements come from the cache.

        Raises:
            TypeError: a size neither an integer nor text.
            ValueError: the limit of the other mode (workspace_limit in WD mode,
                total_workspace in WR mode), or text that is no size.
            InfeasibleError, SolverError, CudaError, CudnnError: planning fails, as for
                `finalize`; the previous plan and limit are kept.
        """
        name = "total_workspace" if self.mode == "wd" else "workspace_limit"
        new = total_workspace if self.mode == "wd" else workspace_limit
        wrong = workspace_limit if self.mode == "wd" else total_workspace
        if wrong is not None:
            raise ValueError(f"this handle is in {self.mode.upper()} mode; pass {name}")
        return self._book.replan(self.limit if new is None else byte_count(new, name))

    def use_plan(self, plan: Plan) -> None:
        """Run `plan` from now on: one made offline (`Plan.from_json` of `ucudnn plan
        --json`), or by the planner from this handle's own tables.

        Its kernels must be ones this handle has seen (register them first), under the names it
        knows them by (their layer names), at their problems' batch; it must be a plan of this
        handle's mode within its limit or budget, and deterministic if the handle is. Kernels it
        leaves out are planned when first used, as before (in WD mode, with the whole network).

        Its parts run within the workspace the plan gives their kernel. Where cuDNN asks more
        for a legacy part than that (or refuses its algorithm), that part runs the legacy
        algorithm with the least workspace instead, with one WorkspaceFallbackWarning per
        handle, as a part whose engine configuration fails falls back with an
        EngineFallbackWarning; the answer is the same, the time may not be.

        Raises:
            TypeError: `plan` is not a Plan.
            ValueError: the plan is of the other mode, needs more workspace than the limit or
                budget, names a kernel the Handle has not seen or another batch, runs an
                algorithm that is not deterministic on a deterministic Handle, or runs engine
                configurations on a Handle whose engines are off (`self.engines`).
        """
        self._book.use(plan, self.engines)

    def release_workspace(self) -> None:
        """Free the workspace now (say, before a memory-hungry phase); the next call that
        needs it allocates it again, falling back to smaller plans if memory is short."""
        self._workspace.release()

    def close(self) -> None:
        """Release the workspace and the cache connection now rather than at collection."""
        self.release_workspace()
        self._engine_runs.clear()
        if self.cache is not None:
            self.cache.close()
        self._closed = True

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------
    def _slot(self, problem: ConvProblem, kernel: str, layer: str | None) -> Slot:
        check_kernel(kernel)
        _check_problem(problem)
        return self._book.slots.get(problem, kernel, layer_option(layer))

    def descriptors(self, problem: ConvProblem) -> backend.ProblemDescriptors:
        """The cuDNN descriptors of `problem`, made once per handle and reused: those of its
        batch splits, which serve every call of the whole problem too."""
        return self._launches.descriptors(problem, BATCH)

    def _pointers(
        self, kernel: str, problem: ConvProblem, tensors: Sequence[object]
    ) -> dict[str, int]:
        """Device pointers of the kernel's tensors, each checked against the problem; arrays'
        pending work is ordered before this handle's stream."""
        self._check_open(problem)
        if len(tensors) != 3:
            raise TypeError(f"{kernel} takes 3 tensors ({', '.join(_ARGS[kernel])})")
        (t1, t2, t3), (r1, r2, r3), (a1, a2, a3) = ROLES[kernel], _ARGS[kernel], tensors
        return {
            t1: self._pointer(a1, problem, t1, r1),
            t2: self._pointer(a2, problem, t2, r2),
            t3: self._pointer(a3, problem, t3, r3),
        }

    def _check_open(self, problem: ConvProblem) -> None:
        if self._closed:
            raise ValueError("this Handle is closed")
        _check_problem(problem)

    def _pointer(self, obj: object, problem: ConvProblem, tensor: str, role: str) -> int:
        if type(obj) is int and obj:
            return obj  # a raw pointer, the common case: nothing to check or order
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
        alpha, beta = scalar_option(alpha, "alpha"), scalar_option(beta, "beta")
        pointers = self._pointers(kernel, problem, tensors)
        bias_ptr = self._bias_pointer(kernel, bias, problem)
        if problem.batch == 0:
            layer_option(layer)
            self._empty_batch(kernel, self.descriptors(problem), pointers, beta)
            return
        # Only names checked when their kernel was first prepared can be found here.
        known = layer is None or type(layer) is str
        ready = self._launches.ready.get((layer, kernel, problem.key())) if known else None
        arena = self._workspace.arena
        if ready is None or arena is None:
            ready = self._prepare(kernel, problem, layer)
            arena = self._workspace.arena
            assert arena is not None  # allocated for the plan by _prepare
        workspace = arena.ptr + ready.offset
        output = ROLES[kernel][2]
        before = (
            copy_on_device(pointers[output], problem.nbytes(output), self.stream)
            if self.check
            else None
        )
        fell_back = ready.launch(
            self.cudnn, pointers["x"], pointers["w"], pointers["y"], workspace, alpha, beta
        )
        if fell_back:
            self._book.replan_without(ready.slot, frozenset(self._engine_runs.failed))
        if self.check is not None and before is not None:
            self._check(self.check, ready, pointers, before, alpha, beta)
        if bias_ptr is not None:
            backend.add_bias(self.cudnn, ready.launch.descs, bias_ptr, pointers["y"])

    def _prepare(self, kernel: str, problem: ConvProblem, layer: str | None) -> Ready:
        """The kernel's schedule ready to launch: planned if new, its plan's workspace
        allocated again if it was released, and compiled for the calls to come."""
        slot = self._slot(problem, kernel, layer)
        kernel_plan = self._book.kernel_plan(slot)
        if self._workspace.arena is None:  # released since planning
            assert self.plan is not None
            self._book.adopt(self.plan)
            kernel_plan = self.plan[slot.kernel_id]  # the same, unless memory was short
        return self._launches.compile((layer, kernel, problem.key()), slot, kernel_plan)

    def _check(
        self,
        check: EquivalenceCheck,
        ready: Ready,
        pointers: dict[str, int],
        before: _cuda.DeviceBuffer,
        alpha: float,
        beta: float,
    ) -> None:
        """Run the undivided convolution on `before`, a copy of the old output, and compare."""
        slot, kernel_plan = ready.slot, ready.kernel_plan
        output = ROLES[slot.kernel][2]
        reference = reference_part(kernel_plan, slot.problem, self.engines.enabled)
        same_algorithm = all(part.slot() == reference.slot() for part in kernel_plan.schedule.parts)
        try:
            run_reference(
                self.cudnn, ready.launch.descs, slot.kernel, reference,
                {**pointers, output: before.ptr}, alpha, beta, self._engine_runs,
            )  # fmt: skip
            nbytes = slot.problem.nbytes(output)
            check.record(
                slot.name, slot.kernel, slot.problem,
                download(pointers[output], nbytes, self.stream),
                download(before.ptr, nbytes, self.stream),
                same_algorithm,
            )  # fmt: skip
        finally:
            before.release()


def _check_problem(problem: object) -> None:
    if not isinstance(problem, ConvProblem):
        raise TypeError(f"problem must be a ConvProblem, got {shown(problem)}")
