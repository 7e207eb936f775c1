"""The Timer times each call of a back-to-back run, the host waiting once at the end."""

from __future__ import annotations

import pytest

from ucudnn.core.problem import ConvProblem

pytestmark = pytest.mark.gpu


def test_each_time_is_one_call_of_a_back_to_back_run() -> None:
    from ucudnn._native import _cuda, _cudnn
    from ucudnn.runtime import backend
    from ucudnn.runtime.bench_buffers import ProblemBuffers
    from ucudnn.runtime.timing import Timer

    problem = ConvProblem.create(32, 64, 64, (28, 28), 3, padding=1, math_type="fma")
    handle, stream = _cudnn.Handle(), _cuda.Stream()
    handle.set_stream(stream.handle)
    buffers = ProblemBuffers(problem, stream.handle)
    descs = backend.ProblemDescriptors(problem)
    workspace = _cuda.DeviceBuffer(64 << 20)
    found = backend.find(
        handle, descs, "forward", problem.batch, buffers.x, buffers.w, buffers.y,
        workspace.ptr, workspace.nbytes,
    )  # fmt: skip
    runs = next(perf for perf in found if perf.status == 0)  # any algorithm that runs
    run = backend.prepared_run(descs, "forward", problem.batch, runs.algo, "fma")
    need = backend.workspace_size(handle, descs, "forward", problem.batch, runs.algo, "fma")

    def calls(count: int) -> None:
        for _ in range(count):
            run(handle, 1.0, 0.0, buffers.x, buffers.w, buffers.y, workspace.ptr, need)

    try:
        timer = Timer(stream.handle)
        once = timer.times_ms(lambda: calls(1), warmup=2, repeats=6)
        twice = timer.times_ms(lambda: calls(2), warmup=2, repeats=6)
    finally:
        stream.synchronize()
        buffers.release()
        workspace.release()
        stream.destroy()
    assert len(once) == len(twice) == 6 and min(once) > 0
    ratio = sorted(twice)[3] / sorted(once)[3]
    assert 1.6 <= ratio <= 2.4, ratio  # each time covers its own call's work, no more
