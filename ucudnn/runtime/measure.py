"""Measure a plan end to end on the device, next to the single-algorithm baseline.

Each kernel runs as a user would run it (through the Handle, all micro-batches back to back,
calls back to back as in a training step: see `Timer`), so the measured time includes every
launch the plan makes; the baseline runs its one algorithm compiled once, as the Handle runs
its plans. The prediction is the sum of the micro-batch times measured while benchmarking.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from ucudnn._native import _cuda
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import executor
from ucudnn.runtime.bench_buffers import ProblemBuffers
from ucudnn.runtime.handle import Handle
from ucudnn.runtime.progress import progress_bar
from ucudnn.runtime.steps import ROLES
from ucudnn.runtime.timing import Timer
from ucudnn.runtime.work import Work


@dataclasses.dataclass(frozen=True)
class KernelTiming:
    layer: str
    kernel: str
    predicted_ms: float
    measured_ms: float
    baseline_predicted_ms: float | None  # None: no single algorithm fits at the full batch
    baseline_measured_ms: float | None

    @property
    def speedup(self) -> float | None:
        """Measured baseline time over measured plan time; None without a baseline, or when
        the plan measured no time (a ratio to zero says nothing)."""
        if self.baseline_measured_ms is None or not self.measured_ms:
            return None
        return self.baseline_measured_ms / self.measured_ms


def measure_plan(
    handle: Handle,
    work: Sequence[Work],
    warmup: int = 3,
    repeats: int = 10,
    progress: bool | None = None,
) -> list[KernelTiming]:
    """Time every kernel of `work` with the handle's plan and with its baseline; `progress`
    shows a bar of the kernels timed (None: when stderr is a terminal)."""
    _plan(handle, work)  # first: its benchmarking shows a bar of its own
    timer = Timer(handle.stream)
    timings = []
    with progress_bar(len(work), progress, "ucudnn timing", "kernel") as bar:
        for item, pointers in _with_buffers(handle, work):
            timings.append(_time_kernel(handle, timer, item, pointers, warmup, repeats))
            bar.update(1)
    return timings


def run_once(handle: Handle, work: Sequence[Work]) -> None:
    """Run every kernel of `work` once through the handle (e.g. to check equivalence)."""
    _plan(handle, work)
    for item, pointers in _with_buffers(handle, work):
        tensors = [pointers[t] for t in ROLES[item.kernel]]
        getattr(handle, item.kernel)(*tensors, item.problem, layer=item.layer)
    _cuda.stream_synchronize(handle.stream)


def _plan(handle: Handle, work: Sequence[Work]) -> None:
    """Plan `work` as one network."""
    for item in work:
        handle.register(item.problem, [item.kernel], layer=item.layer)
    handle.finalize()


def _with_buffers(handle: Handle, work: Sequence[Work]) -> Iterator[tuple[Work, dict[str, int]]]:
    """Each item of `work` with x, w, y buffers of its problem.

    Buffers live for one problem at a time, so a network needs only its largest layer's.
    """
    stream = handle.stream
    for problem in dict.fromkeys(item.problem for item in work):
        buffers = ProblemBuffers(problem, stream)
        try:
            for item in work:
                if item.problem == problem:
                    yield item, buffers.pointers
        finally:
            _cuda.stream_synchronize(stream)
            buffers.release()


def _time_kernel(
    handle: Handle,
    timer: Timer,
    item: Work,
    pointers: dict[str, int],
    warmup: int,
    repeats: int,
) -> KernelTiming:
    assert handle.plan is not None  # _with_buffers planned the work
    kernel_plan = handle.plan[(item.layer, item.kernel)]
    tensors = [pointers[t] for t in ROLES[item.kernel]]
    run = getattr(handle, item.kernel)
    measured = timer.median_ms(
        lambda: run(*tensors, item.problem, layer=item.layer), warmup, repeats
    )
    baseline = kernel_plan.baseline
    baseline_ms = (
        None
        if baseline is None
        else _time_single(handle, timer, item, baseline, pointers, warmup, repeats)
    )
    return KernelTiming(
        item.layer,
        item.kernel,
        kernel_plan.time_ms,
        measured,
        baseline.time_ms if baseline is not None else None,
        baseline_ms,
    )


def _time_single(
    handle: Handle,
    timer: Timer,
    item: Work,
    single: Candidate,
    pointers: dict[str, int],
    warmup: int,
    repeats: int,
) -> float:
    descs = handle.descriptors(item.problem)
    launch = executor.Launch(descs, item.kernel, [single], single.workspace_bytes)
    workspace = _cuda.DeviceBuffer(single.workspace_bytes)
    try:
        return timer.median_ms(
            lambda: launch(handle.cudnn, **pointers, workspace=workspace.ptr), warmup, repeats
        )
    finally:
        workspace.release()
