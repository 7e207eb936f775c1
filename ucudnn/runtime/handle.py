"""The Handle: micro-batched cuDNN convolutions for frameworks, planned on first sight.

WR mode (a per-kernel workspace limit) plans each kernel alone when first seen and runs it in
one shared workspace. WD mode (one total budget) collects the kernels a network registers and
plans them together by integer programming, each schedule at its own offset in one arena.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from typing import SupportsIndex

from ucudnn._native import _cuda, _cudnn
from ucudnn.core.arena import GrowingArena
from ucudnn.core.argtypes import PolicyArgument, Size
from ucudnn.core.array import order_after
from ucudnn.core.device import device_facts
from ucudnn.core.problem import ConvProblem, check_kernel, check_problem
from ucudnn.core.splits import BATCH
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import backend, executor
from ucudnn.runtime.benchmark import Benchmarker, BenchmarkSettings
from ucudnn.runtime.buffers import bias_pointer, device_pointer, kernel_pointers
from ucudnn.runtime.check import EquivalenceCheck, ReferenceRuns
from ucudnn.runtime.engine_calls import EngineRuns
from ucudnn.runtime.engines_setting import engines_setting
from ucudnn.runtime.handle_planning import HandlePlanning
from ucudnn.runtime.launches import Launches, Ready
from ucudnn.runtime.options import HandleOptions, layer_option, scalar_option, stream_option
from ucudnn.runtime.plan_book import PlanBook

logger = logging.getLogger(__name__)


class Handle(HandlePlanning):
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
    why). `policy` is a policy name or micro-batch sizes; `slab_policy` names the slab extents
    also measured, each micro-batch cut along its outermost spatial axis (docs/spatial.md; None:
    UCUDNN_SLAB_POLICY, else "undivided", no slabs); `stream` is a cudaStream_t as an int
    (0: the legacy default stream), which `set_stream` changes. Every argument is checked
    before any device work. Arrays' pending work on their own streams is ordered before
    `stream` (DLPack's and __cuda_array_interface__'s stream protocols). The work is enqueued
    on `stream` and nothing here waits for it: keep the arrays alive, and order your own
    stream after it (or synchronise), until it is done. The planning methods (`register`,
    `finalize`, `replan`, `use_plan`, `schedule`, ...) are `HandlePlanning`'s.

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
        slab_policy: PolicyArgument | None = None,
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
            slab_policy=slab_policy, database=database, use_cache=use_cache, stream=stream,
            deterministic=deterministic, check=check, benchmark=benchmark, engines=engines,
            workspace_sharing=workspace_sharing,
        )  # fmt: skip
        self.deterministic = options.deterministic
        self.check = EquivalenceCheck() if options.check else None
        # Asking for the device first turns "no driver" into NoDeviceError, where cudnnCreate
        # would only say NOT_INITIALIZED.
        self.facts = device_facts()
        self.device = _cuda.get_device()
        self.cudnn = _cudnn.Handle()
        self.cudnn.set_stream(options.stream)
        self.cache = BenchmarkCache(options.database) if options.database is not None else None
        engine_setting = engines_setting(options.engines)
        bench_settings = dataclasses.replace(
            options.benchmark, engines=engine_setting.enabled, deterministic_only=self.deterministic
        )
        self.benchmarker = Benchmarker(self.cudnn, self.facts, self.cache, bench_settings)
        self._engine_runs = EngineRuns(engine_setting.how_to_turn_off())
        self._reference = ReferenceRuns(self.cudnn, self._engine_runs, engine_setting.enabled)
        launches = Launches(self.cudnn, self._engine_runs)
        book = PlanBook(
            self.benchmarker, GrowingArena(), mode=options.mode, limit=options.limit,
            policy=options.policy, slab_policy=options.slab_policy,
            deterministic=self.deterministic, on_new_plan=launches.clear,
        )  # fmt: skip
        super().__init__(book, launches, engine_setting)
        self._closed = False

    @property
    def stream(self) -> int:
        """The stream the calls enqueue their work on (a cudaStream_t as an int): the cuDNN
        handle's, which the equivalence check and the benchmark use too."""
        return self.cudnn.stream

    def set_stream(self, stream: SupportsIndex) -> None:
        """Enqueue the calls from now on on `stream` (a cudaStream_t as an int; 0: the legacy
        default stream), so that one Handle serves a framework on whichever stream it runs,
        say PyTorch's current one. Nothing waits: the new stream is ordered after the work
        already enqueued on the old one (the workspace is shared), and setting the stream in
        use costs nothing.

        Raises:
            TypeError: a stream that is not an integer (a bool or a float included).
            ValueError: a negative stream or one over 64 bits; the Handle is closed.
        """
        stream, old = stream_option(stream), self.cudnn.stream
        if stream == old:
            return
        if self._closed:
            raise ValueError("this Handle is closed")
        order_after(old, stream)
        self.cudnn.set_stream(stream)

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

    def run(
        self,
        kernel: str,
        problem: ConvProblem,
        tensors: Sequence[object],
        *,
        bias: object = None,
        alpha: float = 1.0,
        beta: float = 0.0,
        layer: str | None = None,
    ) -> None:
        """Run a kernel named by its name ("forward", "backward_data" or "backward_filter"),
        as its own method does, for callers that choose the kernel at run time. `tensors` are
        in the kernel's argument order; `bias` is forward's.

        Raises:
            ValueError: an unknown kernel, or a bias for a kernel other than forward.
            TypeError, ValueError, InfeasibleError, SolverError, CudaError, CudnnError: as
                `forward` does, for the same reasons (TypeError too for other than three
                tensors).
        """
        check_kernel(kernel)
        self._run(kernel, problem, tensors, alpha, beta, layer, bias)

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
        dy_ptr = device_pointer(dy, problem, "y", "dy", stream=self.stream, device=self.device)
        db_ptr = device_pointer(db, problem, "b", "db", stream=self.stream, device=self.device)
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
        pointers, bias_ptr = self._pointers(kernel, problem, tensors, bias)
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
        whole = Candidate(problem.batch, algo, 0.0, need, problem.math_type)
        workspace = self._workspace.ensure(need).at(0, need)
        executor.execute(
            self.cudnn, descs, kernel, [whole], pointers["x"], pointers["w"], pointers["y"],
            workspace=workspace, workspace_bytes=need, alpha=alpha, beta=beta,
        )  # fmt: skip
        if bias_ptr is not None:
            backend.add_bias(self.cudnn, descs, bias_ptr, pointers["y"])

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
    def descriptors(self, problem: ConvProblem) -> backend.ProblemDescriptors:
        """The cuDNN descriptors of `problem`, made once per handle and reused: those of its
        batch splits, which serve every call of the whole problem too."""
        return self._launches.descriptors(problem, BATCH)

    def _pointers(
        self, kernel: str, problem: ConvProblem, tensors: Sequence[object], bias: object
    ) -> tuple[dict[str, int], int | None]:
        """Device pointers of the kernel's tensors and of the bias, each checked against the
        problem; arrays' pending work is ordered before this handle's stream."""
        self._check_open(problem)
        stream, device = self.cudnn.stream, self.device
        pointers = kernel_pointers(kernel, problem, tensors, stream=stream, device=device)
        if bias is None:
            return pointers, None
        return pointers, bias_pointer(kernel, bias, problem, stream=stream, device=device)

    def _check_open(self, problem: ConvProblem) -> None:
        if self._closed:
            raise ValueError("this Handle is closed")
        check_problem(problem)

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
        pointers, bias_ptr = self._pointers(kernel, problem, tensors, bias)
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
        before = self._reference.output_before(ready, pointers) if self.check else None
        fell_back = ready.launch(
            self.cudnn, pointers["x"], pointers["w"], pointers["y"], workspace, alpha, beta
        )
        if fell_back:
            self._book.replan_without(ready.slot, frozenset(self._engine_runs.failed))
        if self.check is not None and before is not None:
            self._reference.compare(self.check, ready, pointers, before, alpha, beta)
        if bias_ptr is not None:
            backend.add_bias(self.cudnn, ready.launch.descs, bias_ptr, pointers["y"])

    def _prepare(self, kernel: str, problem: ConvProblem, layer: str | None) -> Ready:
        """The kernel's schedule ready to launch: planned if new, its plan's workspace
        allocated again if it was released, and compiled for the calls to come."""
        slot = self._slot(problem, kernel, layer)
        key = (layer, kernel, problem.key())
        return self._launches.compile(key, slot, self._book.plan_to_run(slot))
