"""Measure a plan end to end on the device, next to the single-algorithm baseline.

Each kernel runs as a user would run it (through the Handle, all micro-batches back to back),
so the measured time includes every launch the plan makes; the prediction is the sum of the
micro-batch times measured one by one while benchmarking.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ucudnn import _cuda
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import backend, executor
from ucudnn.runtime.handle import Handle
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
        """Measured baseline time over measured plan time."""
        if self.baseline_measured_ms is None:
            return None
        return self.baseline_measured_ms / self.measured_ms


def measure_plan(
    handle: Handle, work: Sequence[Work], warmup: int = 3, repeats: int = 10
) -> list[KernelTiming]:
    """Time every kernel of `work` with the handle's plan and with its baseline."""
    for item in work:
        handle.register(item.problem, [item.kernel], layer=item.layer)
    handle.finalize()
    timer = Timer(handle.cudnn.stream)
    timings = []
    for problem in dict.fromkeys(item.problem for item in work):
        buffers = {t: _cuda.DeviceBuffer(problem.nbytes(t)) for t in ("x", "w", "y")}
        try:
            for t, buffer in buffers.items():
                _cuda.memset(buffer.ptr, 0x3C, buffer.nbytes, handle.cudnn.stream)
            pointers = {t: b.ptr for t, b in buffers.items()}
            for item in work:
                if item.problem == problem:
                    timings.append(_time_kernel(handle, timer, item, pointers, warmup, repeats))
        finally:
            for buffer in buffers.values():
                buffer.release()
    return timings


def _time_kernel(handle, timer, item: Work, pointers, warmup, repeats) -> KernelTiming:
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


def _time_single(handle, timer, item: Work, single: Candidate, pointers, warmup, repeats):
    descs = backend.ProblemDescriptors(item.problem)
    workspace = _cuda.DeviceBuffer(single.workspace_bytes)
    try:
        return timer.median_ms(
            lambda: executor.execute(
                handle.cudnn, descs, item.kernel, [single], **pointers,
                workspace=workspace.ptr, workspace_bytes=single.workspace_bytes,
            ),  # fmt: skip
            warmup,
            repeats,
        )
    finally:
        workspace.release()
