"""What a Handle call costs the host, beside running its plan directly (printed, not a test).

Times, per call, on the host (time.perf_counter_ns over many calls; the device is not waited
for): the plan's compiled launch called directly (`executor.Launch`, the least a call can do),
`executor.execute` (which compiles the schedule on every call), and `Handle.forward` given raw
pointers and given DeviceArrays; then the same forward by cuDNN graph-API engine configurations
(a compiled launch, and a Handle running an engine plan), where the device offers them. Each is
timed twice: with the device's convolution calls, and with cuDNN's launches replaced by no-ops
after planning, so that only ucudnn's own host work is left (for an engine part, its plan
lookup and alignment, without `execute_plan`'s variant pack). The Handle's share is its time
minus the direct launch's. Runs on the simulated device unless UCUDNN_DEVICE says otherwise; on
the simulator the "device calls" column is the simulator's Python, not a GPU's; on a GPU it is
the host's time to enqueue, cuDNN's included.

    python benchmarks/handle_overhead.py [--calls 5000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("UCUDNN_DEVICE", "sim")

# Imported after choosing the device.
from ucudnn._native import _cuda, _cudnn
from ucudnn.core.array import DeviceArray
from ucudnn.core.device import device_facts
from ucudnn.core.problem import ConvProblem
from ucudnn.planner.plan import make_plan_wr
from ucudnn.planner.tables import KernelTable, Schedule, TimingTables
from ucudnn.runtime import executor, graph
from ucudnn.runtime.engine_calls import EngineRuns
from ucudnn.runtime.handle import Handle
from ucudnn.runtime.work import Work

# Small, so that the simulator's own work does not drown the host time being measured.
PROBLEM = ConvProblem.create(4, 8, 8, (6, 6), 3, padding=1, math_type="fma")


def _no_launch(*args: object) -> None:
    """Stands in for a cuDNN convolution call."""


@contextlib.contextmanager
def launches_stubbed() -> Iterator[None]:
    """cuDNN's convolution calls do nothing while inside (calls compiled inside keep that)."""
    saved = _cudnn.convolution  # the one call every legacy launch takes when it is prepared
    saved_run_plan = graph.run_plan  # and every engine part's, looked up at each call
    _cudnn.convolution = _no_launch
    graph.run_plan = _no_launch
    try:
        yield
    finally:
        _cudnn.convolution = saved
        graph.run_plan = saved_run_plan


def engine_schedule(handle: Handle) -> Schedule | None:
    """The fastest schedule of PROBLEM's forward made of engine configurations only, from the
    handle's measurements (engines on), or None where cuDNN offers none."""
    work = Work("overhead", PROBLEM, "forward")
    handle.register(PROBLEM, "forward", layer=work.layer)
    measured = handle.benchmarker.tables([work], handle.policy)[(work.layer, work.kernel)]
    rows = [c for c in measured if c.engine]
    if not any(c.micro_batch == PROBLEM.batch for c in rows):
        return None
    table = KernelTable(work.layer, work.kernel, PROBLEM.batch, rows)
    plan = make_plan_wr(TimingTables([table]), handle.limit, policy=handle.policy)
    handle.use_plan(plan)
    return plan.kernels[0].schedule


def per_call_us(calls: dict[str, Callable[[], None]], count: int, rounds: int) -> dict[str, float]:
    """Median over `rounds` of each call's mean time over `count` calls, rounds interleaved so
    that a busy moment of the machine touches every call alike."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter_ns()
            for _ in range(count):
                call()
            times[name].append((time.perf_counter_ns() - start) / count / 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def measure(
    handle: Handle, engine_handle: Handle | None, count: int, rounds: int
) -> dict[str, float]:
    arrays = [DeviceArray.empty(s, "float32") for s in (PROBLEM.x_shape, PROBLEM.w_shape,
                                                          PROBLEM.y_shape)]  # fmt: skip
    x, w, y = (array.ptr for array in arrays)
    handle.release_workspace()  # the next call compiles its launch anew (stubbed or not)
    handle.forward(x, w, y, PROBLEM)
    schedule = handle.schedule(PROBLEM, "forward")
    descs = handle.descriptors(PROBLEM)
    nbytes = max(schedule.workspace_bytes, engine_bytes(engine_handle))
    buffer = _cuda.DeviceBuffer(nbytes)
    launch = executor.Launch(descs, "forward", schedule.parts, nbytes)
    calls = {
        "direct launch (compiled once)": lambda: launch(handle.cudnn, x, w, y, buffer.ptr),
        "executor.execute (compiles per call)": lambda: executor.execute(
            handle.cudnn, descs, "forward", schedule.parts, x, w, y, buffer.ptr, nbytes
        ),
        "Handle.forward, raw pointers": lambda: handle.forward(x, w, y, PROBLEM),
        "Handle.forward, DeviceArrays": lambda: handle.forward(*arrays, PROBLEM),
    }
    if engine_handle is not None:
        engine_handle.release_workspace()
        engine_handle.forward(x, w, y, PROBLEM, layer="overhead")
        parts = engine_handle.schedule(PROBLEM, "forward", "overhead").parts
        engine_launch = executor.Launch(descs, "forward", parts, nbytes, EngineRuns())
        calls["engine launch (compiled once)"] = lambda: engine_launch(
            handle.cudnn, x, w, y, buffer.ptr
        )
        calls["Handle.forward, engine plan, raw pointers"] = lambda: engine_handle.forward(
            x, w, y, PROBLEM, layer="overhead"
        )
    try:
        return per_call_us(calls, count, rounds)
    finally:
        _cuda.stream_synchronize(handle.stream)
        buffer.release()


def engine_bytes(engine_handle: Handle | None) -> int:
    if engine_handle is None:
        return 0
    return engine_handle.schedule(PROBLEM, "forward", "overhead").workspace_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    facts = device_facts()
    print(f"device: {facts.device_name}; problem: {PROBLEM.describe()} forward")
    with (
        tempfile.TemporaryDirectory() as folder,
        Handle(workspace_limit="64MiB", database=Path(folder) / "cache.sqlite") as handle,
        Handle(
            workspace_limit="64MiB", database=Path(folder) / "cache.sqlite", engines=True
        ) as with_engines,
    ):
        handle.schedule(PROBLEM, "forward")  # plan with the real calls
        engines = engine_schedule(with_engines)
        engine_handle = None if engines is None else with_engines
        with_device = measure(handle, engine_handle, args.calls, args.rounds)
        with launches_stubbed():
            host_only = measure(handle, engine_handle, args.calls, args.rounds)
        parts = handle.schedule(PROBLEM, "forward").micro_batches_text()
    print(f"schedule: micro-batches {parts}; µs per call, median of {args.rounds} rounds")
    if engines is None:
        print("engines: none offered here (cuDNN before 9.2, or no configuration ran)")
    else:
        print(f"engine schedule: {engines.micro_batches_text()} by {engines.algos_text()}")
    print(f"{'':40} {'device calls':>12} {'host only':>10} {'over direct':>12}")
    direct = host_only["direct launch (compiled once)"]
    for name in with_device:
        extra = host_only[name] - direct
        print(f"{name:40} {with_device[name]:12.2f} {host_only[name]:10.2f} {extra:+12.2f}")


if __name__ == "__main__":
    main()
