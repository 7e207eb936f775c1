"""Fill benchmark tables on the device: cuDNN's Find as a pre-filter, then our own timing.

Find's single trial per algorithm is noisy, so every algorithm it reports as runnable is timed
again here: warm-up calls, then the median of several runs measured with CUDA events on the
handle's stream. Results are stored in the SQLite cache, so a problem is measured once per
device and library version.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from collections.abc import Iterable, Sequence

from tqdm import tqdm

from ucudnn import _cuda, _cudnn
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudaOutOfMemoryError, CudnnError
from ucudnn.planner.cache import BenchmarkCache, Measurement
from ucudnn.planner.policies import Policy, sizes_for_policy
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.runtime import backend
from ucudnn.runtime.timing import Timer
from ucudnn.runtime.work import Work

# Any normal value works for timing; 0x3C in every byte is a small normal number in every
# floating type cuDNN takes, and memset fills gigabytes faster than copying random data.
FILL_BYTE = 0x3C


@dataclasses.dataclass(frozen=True)
class BenchmarkSettings:
    warmup: int = 2
    repeats: int = 5
    # Largest workspace an algorithm may use while benchmarking; bigger ones are recorded as
    # skipped. The planner never needs more than the user's limit, so this caps the search.
    workspace_cap: int = 1 << 30
    progress: bool | None = None  # None: show a bar only on a terminal

    def __post_init__(self) -> None:
        if self.warmup < 0 or self.repeats < 1:
            raise ValueError(
                f"need warmup >= 0 and repeats >= 1, got {self.warmup}, {self.repeats}"
            )
        if self.workspace_cap < 0:
            raise ValueError(f"workspace_cap must be >= 0, got {self.workspace_cap}")


class ProblemBuffers:
    """x, w and y of a problem filled with a constant; a smaller batch uses their prefix."""

    def __init__(self, problem: ConvProblem, stream: int) -> None:
        self.owned = [_cuda.DeviceBuffer(problem.nbytes(t)) for t in ("x", "w", "y")]
        for buffer in self.owned:
            _cuda.memset(buffer.ptr, FILL_BYTE, buffer.nbytes, stream)
        self.x, self.w, self.y = (b.ptr for b in self.owned)

    @property
    def pointers(self) -> dict[str, int]:
        return {"x": self.x, "w": self.w, "y": self.y}

    def release(self) -> None:
        for buffer in self.owned:
            buffer.release()


class Benchmarker:
    """Measures candidates for (problem, kernel, micro-batch) on one device, through a cache."""

    def __init__(
        self,
        handle: _cudnn.Handle,
        facts: DeviceFacts,
        cache: BenchmarkCache | None = None,
        settings: BenchmarkSettings | None = None,
    ) -> None:
        self.handle = handle
        self.facts = facts
        self.cache = cache
        self.settings = settings or BenchmarkSettings()
        # Measurements already read or made by this process, so re-planning costs no queries.
        self._seen: dict[tuple[str, str], list[Measurement]] = {}
        self.counts = {"measured": 0, "cached": 0}  # problem sizes, for reports
        self._timer = Timer(handle.stream)

    def tables(self, work: Sequence[Work], policy: Policy) -> TimingTables:
        """Tables for each (layer, problem, kernel); each problem at each size is measured once."""
        jobs = [
            (item, sorted(sizes_for_policy(policy, item.problem.batch), reverse=True))
            for item in work
        ]
        tables = TimingTables()
        with _progress(sum(len(sizes) for _, sizes in jobs), self.settings.progress) as bar:
            for item, sizes in jobs:
                table = KernelTable(layer=item.layer, kernel=item.kernel, batch=item.problem.batch)
                for candidate in self._kernel_candidates(item.problem, item.kernel, sizes, bar):
                    table.add(candidate)
                tables.add(table)
        return tables

    def _kernel_candidates(
        self, problem: ConvProblem, kernel: str, sizes: list[int], bar: tqdm
    ) -> Iterable[Candidate]:
        buffers = None
        try:
            for micro_batch in sizes:  # descending: the first size sizes the buffers
                measured = self._cached(problem, kernel, micro_batch)
                self.counts["cached" if measured is not None else "measured"] += 1
                if measured is None:
                    if buffers is None:
                        buffers = ProblemBuffers(problem.with_batch(sizes[0]), self.handle.stream)
                    measured = self._measure(problem.with_batch(micro_batch), kernel, buffers)
                    self._seen[(problem.with_batch(micro_batch).key(), kernel)] = measured
                    if self.cache is not None:
                        self.cache.store(problem, kernel, micro_batch, self.facts, measured)
                bar.update(1)
                yield from (m.candidate for m in measured if m.ok)
        finally:
            if buffers is not None:
                buffers.release()

    def _cached(
        self, problem: ConvProblem, kernel: str, micro_batch: int
    ) -> list[Measurement] | None:
        key = (problem.with_batch(micro_batch).key(), kernel)
        if key not in self._seen and self.cache is not None:
            found = self.cache.lookup(problem, kernel, micro_batch, self.facts)
            if found is not None:
                self._seen[key] = found
        return self._seen.get(key)

    def _measure(
        self, problem: ConvProblem, kernel: str, buffers: ProblemBuffers
    ) -> list[Measurement]:
        """All algorithms of one kernel at one micro-batch size: timed, or why not."""
        descs = backend.ProblemDescriptors(problem)
        handle, b = self.handle, problem.batch
        workspace = self._find_workspace(descs, kernel)
        try:
            perfs = backend.find(
                handle, descs, kernel, b, buffers.x, buffers.w, buffers.y,
                workspace.ptr, workspace.nbytes,
            )  # fmt: skip
            results = {}
            for perf in perfs:
                # Find may report a tensor-op variant even when asked for FMA math; a caller
                # who turned TF32 off must never get it, so FMA requests stay FMA.
                math_type = "fma" if problem.math_type == "fma" else perf.math_type
                known = results.get((perf.algo, math_type))
                if known is not None and (known.ok or perf.status != 0):
                    continue  # a run that worked beats one that failed, and counts once
                if perf.status != 0:
                    failed = Measurement.failed(b, perf.algo, math_type, perf.status_name)
                    results[(perf.algo, math_type)] = failed
                else:
                    results[(perf.algo, math_type)] = self._time(
                        descs, kernel, perf.algo, math_type, perf.deterministic, buffers, workspace
                    )
            return list(results.values())
        finally:
            workspace.release()

    def _find_workspace(self, descs: backend.ProblemDescriptors, kernel: str) -> _cuda.DeviceBuffer:
        """A workspace as large as the hungriest algorithm that respects the cap needs."""
        need = 0
        # Every enum value of the kernel's algorithms. Not the max count: that sizes Find's
        # result list, which may count an algorithm once per math type, so it can exceed them.
        for algo in range(len(_cudnn.ALGORITHMS[kernel])):
            try:
                size = backend.workspace_size(self.handle, descs, kernel, descs.problem.batch, algo)
            except CudnnError:
                continue  # unsupported here; Find reports it with its status
            if size <= self.settings.workspace_cap:
                need = max(need, size)
        return _cuda.DeviceBuffer(need)

    def _time(
        self,
        descs: backend.ProblemDescriptors,
        kernel: str,
        algo: int,
        math_type: str,
        deterministic: bool,
        buffers: ProblemBuffers,
        workspace: _cuda.DeviceBuffer,
    ) -> Measurement:
        b = descs.problem.batch
        descs.conv.set_math_type(math_type)
        try:
            need = backend.workspace_size(self.handle, descs, kernel, b, algo)
            if need > workspace.nbytes:
                return Measurement.failed(b, algo, math_type, "WORKSPACE_OVER_CAP")
            times = self._timer.times_ms(
                lambda: backend.run(
                    self.handle, descs, kernel, b, algo, math_type, 1.0, 0.0,
                    buffers.x, buffers.w, buffers.y, workspace.ptr, need,
                ),
                self.settings.warmup,
                self.settings.repeats,
            )  # fmt: skip
        except (CudnnError, CudaOutOfMemoryError) as exc:
            return Measurement.failed(b, algo, math_type, type(exc).__name__)
        candidate = Candidate(
            micro_batch=b,
            algo=algo,
            time_ms=statistics.median(times),
            workspace_bytes=need,
            math_type=math_type,
            deterministic=deterministic,
        )
        return Measurement.timed(candidate, times)


def _progress(total: int, show: bool | None) -> tqdm:
    """A progress bar when asked, or by default when stderr is a terminal; silent otherwise."""
    if show is None:
        show = sys.stderr.isatty()
    return tqdm(total=total, desc="ucudnn benchmark", unit="size", leave=False, disable=not show)
