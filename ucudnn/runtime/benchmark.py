"""Fill benchmark tables on the device: cuDNN's Find as a pre-filter, then our own timing.

Find's single trial per algorithm is noisy, so every algorithm it reports as runnable is timed
again here: warm-up calls, then the median of several runs measured with CUDA events on the
handle's stream. Results are stored in the SQLite cache, so a problem is measured once per
device and library version.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import re
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Never, cast

from tqdm import tqdm

from ucudnn._native import _cuda, _cudnn
from ucudnn.core import engines
from ucudnn.core.arena import Arena, GrowingArena
from ucudnn.core.checks import integer, shown
from ucudnn.core.device import cudnn_version_string
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudaOutOfMemoryError, CudnnError
from ucudnn.planner.cache import BenchmarkCache, Measurement
from ucudnn.planner.config import byte_count
from ucudnn.planner.errors import NoAlgorithmError
from ucudnn.planner.policies import Policy, sizes_to_measure
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.runtime import backend, graph, steps
from ucudnn.runtime.progress import progress_bar
from ucudnn.runtime.timing import Timer
from ucudnn.runtime.work import Work

logger = logging.getLogger(__name__)

# The benchmark cache keeps each family's measurements of a size apart (its `source`), so a
# changed engine search re-measures only engine sets, and a process that measures only legacy
# algorithms never takes an engine set for its own.
LEGACY = "legacy"
# Every configuration the heuristics' modes (A, then FALLBACK) rank, timed like the legacy
# algorithms; v2: a backward-filter configuration needs the workspace of its beta-1 plan too.
# A change to the search gets a new name, so that it measures anew.
ENGINE_SEARCH = "graph/" + "+".join(graph.HEURISTIC_MODES) + "/v2"
# cuDNN reads this variable itself and leaves out configurations needing more workspace (MiB),
# so what the heuristics offer depends on it: it is part of the search's name.
WORKSPACE_CAP_VARIABLE = "CUDNN_CONV_WSCAP_DBG"
MIN_ENGINES_CUDNN = 90200  # ENGINECFG_WORKSPACE_SIZE: a workspace known before building
# Engine screening: a brief timing of every configuration (one warm-up, two runs), then the
# full count only for those that none needing at most their workspace beats by more than 25 %
# (the brief's noise stays well within that: median 1.02, 95th percentile 1.25 between runs).
SCREEN_WARMUP, SCREEN_REPEATS, SCREEN_MARGIN = 1, 2, 1.25

# Buffers are filled with one repeated byte (memset fills gigabytes faster than a copy). The
# value only has to be harmless: a normal number whose products are normal in the type cuDNN
# computes in, and whose sums of products stay finite in it and in the stored type, since inf,
# NaN or denormals could take paths real data does not. So the fill is keyed on (stored type,
# compute type): the configurations of cuDNN's legacy convolution API (float, double, pseudo
# bfloat16, pseudo and true half). Backward-filter sums the most products, N times the output
# pixels per weight (3.2e6 for a ResNet first layer at N = 256). The longest sums assumed:
# 2**31 terms in a float32 or float64 accumulator (cuDNN's sizes are 32-bit), 2**16 in a
# float16 one (half-precision compute holds no longer sums anyway: 2**16 terms near 1 already
# pass its largest value, 65504).
FILL_BYTES = {
    ("float32", "float32"): 0x3C,  # 0x3C3C3C3C = 0.0115: sums of 2**31 products 2.8e5
    ("bfloat16", "float32"): 0x3C,  # 0x3C3C = 0.0115, as float32 (the same exponent range)
    ("float64", "float64"): 0x3C,  # 1.5e-18: products 2.3e-36, far above float64's smallest normal
    # Pseudo half, float32 products: 0x1818 = 0.0020, whose sums of 2**31 products (8.6e3) the
    # float16 output still holds (0x3C3C would be 1.06: sums of 6e4 products overflow).
    ("float16", "float32"): 0x18,
    # True half: 0x1818's products (4.0e-6) would be subnormal in float16. 0x2C2C = 0.065 has
    # products 4.2e-3 (70 times float16's smallest normal) and sums of 2**16 of them 279.
    ("float16", "float16"): 0x2C,
}


SEARCHES = ("fast", "exhaustive")
BUILD_THREADS_VARIABLE = "UCUDNN_BUILD_THREADS"
# The H200 check built 6,000 plans alike on 1, 4 and 8 threads; 8 were 2.9x faster than one
# with a cold CUDA JIT cache (a machine's first use), 4 were 2.5x.
DEFAULT_BUILD_THREADS = 8


def search_name(value: object) -> str:
    """A search's name as BenchmarkSettings and --search take it."""
    if not isinstance(value, str) or value.strip().lower() not in SEARCHES:
        raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {shown(value)}")
    return value.strip().lower()


def build_threads_from_env(environ: Mapping[str, str] = os.environ) -> int:
    """UCUDNN_BUILD_THREADS (a whole number >= 1), else DEFAULT_BUILD_THREADS."""
    text = environ.get(BUILD_THREADS_VARIABLE, "").strip()
    if not text:
        return DEFAULT_BUILD_THREADS
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{BUILD_THREADS_VARIABLE} must be a whole number >= 1, got {text!r}")
    return int(text)


def fill_byte(dtype: str, compute_dtype: str) -> int:
    """The byte to fill buffers of `dtype` with when cuDNN computes in `compute_dtype`."""
    if (dtype, compute_dtype) not in FILL_BYTES:
        known = ", ".join(f"{d} computed in {c}" for d, c in FILL_BYTES)
        raise ValueError(
            f"cannot benchmark {dtype} data computed in {compute_dtype}; "
            f"cuDNN's legacy convolutions take {known}"
        )
    return FILL_BYTES[(dtype, compute_dtype)]


@dataclasses.dataclass(frozen=True)
class BenchmarkSettings:
    warmup: int = 2
    repeats: int = 5
    # Largest workspace an algorithm may use while benchmarking; bigger ones are recorded as
    # skipped. The planner never needs more than the user's limit, so this caps the search.
    workspace_cap: int | str = 1 << 30  # an int once made
    progress: bool | None = None  # None: show a bar only on a terminal
    # Also measure cuDNN's graph-API engine configurations (cuDNN >= 9.2); None: as
    # UCUDNN_ENGINES says (off by default), decided when a Handle takes the settings.
    engines: bool | None = None
    # How candidates are measured: "fast" screens, prunes and confirms only the frontier
    # (ucudnn.planner.search); "exhaustive" times every candidate at every size in full.
    search: str = "fast"
    # Threads that build engine plans while the device times others; None: UCUDNN_BUILD_THREADS,
    # else DEFAULT_BUILD_THREADS (benchmarks/results/2026-11-27-h200-plan-build-threads.md).
    build_threads: int | None = None

    def __post_init__(self) -> None:
        if self.warmup < 0 or self.repeats < 1:
            raise ValueError(
                f"need warmup >= 0 and repeats >= 1, got {self.warmup}, {self.repeats}"
            )
        # A size like every other: bytes or text such as "256MiB".
        object.__setattr__(self, "workspace_cap", byte_count(self.workspace_cap, "workspace_cap"))
        object.__setattr__(self, "search", search_name(self.search))
        if self.build_threads is not None:
            object.__setattr__(
                self, "build_threads", integer(self.build_threads, "build_threads", minimum=1)
            )

    @property
    def build_thread_count(self) -> int:
        """`build_threads`, else UCUDNN_BUILD_THREADS, else DEFAULT_BUILD_THREADS."""
        if self.build_threads is not None:
            return self.build_threads
        return build_threads_from_env()

    @property
    def workspace_cap_bytes(self) -> int:
        """`workspace_cap` as the int it was made into."""
        return cast(int, self.workspace_cap)


class ProblemBuffers:
    """x, w and y of a problem filled with a harmless constant (see FILL_BYTES); micro-batches
    run on slices of them at `at_sample`."""

    def __init__(self, problem: ConvProblem, stream: int) -> None:
        self.problem = problem
        fill = fill_byte(problem.dtype, problem.compute_dtype)
        self.owned = [_cuda.DeviceBuffer(problem.nbytes(t)) for t in ("x", "w", "y")]
        for buffer in self.owned:
            _cuda.memset(buffer.ptr, fill, buffer.nbytes, stream)
        self.x, self.w, self.y = (b.ptr for b in self.owned)

    @property
    def pointers(self) -> dict[str, int]:
        return self.at_sample(0)

    def at_sample(self, first_sample: int) -> dict[str, int]:
        """Pointers of x, w and y for micro-batches that start at `first_sample`."""
        return {
            "x": self.x + self.problem.sample_offset_bytes("x", first_sample),
            "w": self.w,
            "y": self.y + self.problem.sample_offset_bytes("y", first_sample),
        }

    def release(self) -> None:
        for buffer in self.owned:
            buffer.release()


class Benchmarker:
    """Measures candidates for (problem, kernel, micro-batch) on one device, through a cache.

    One workspace serves all the measurements of a `tables` call: it grows when an algorithm
    needs more (each free waits for the device) and is freed when the call ends, so that a
    Handle keeps no benchmarking memory past planning.
    """

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
        self._seen: dict[tuple[str, str, str], list[Measurement]] = {}  # (problem, kernel, source)
        self.counts = {"measured": 0, "cached": 0}  # problem sizes, for reports
        self._timer = Timer(handle.stream)
        self._workspace = GrowingArena()
        # Engine parts that failed at run time, as (problem key, kernel, tag, micro-batch): a
        # Handle shares its set here, so that the tables it plans from leave them out.
        self.excluded: set[tuple[str, str, str, int]] = set()

    def tables(self, work: Sequence[Work], policy: Policy) -> TimingTables:
        """Tables for each (layer, problem, kernel); each problem at each size is measured once."""
        jobs = [
            (item, sorted(sizes_to_measure(policy, item.problem.batch), reverse=True))
            for item in work
        ]
        tables = TimingTables()
        before, started = dict(self.counts), time.perf_counter()
        try:
            total = sum(len(sizes) for _, sizes in jobs)
            with progress_bar(total, self.settings.progress, "ucudnn benchmark", "size") as bar:
                for item, sizes in jobs:
                    table = KernelTable(
                        layer=item.layer, kernel=item.kernel, batch=item.problem.batch
                    )
                    for candidate in self._kernel_candidates(item, sizes, bar):
                        table.add(candidate)
                    tables.add(table)
        finally:
            self._workspace.release()
        logger.info(
            "benchmark of %d kernels: %d problem sizes measured, %d served from the cache, "
            "in %.1f s",
            len(jobs), self.counts["measured"] - before["measured"],
            self.counts["cached"] - before["cached"], time.perf_counter() - started,
        )  # fmt: skip
        return tables

    def _kernel_candidates(
        self, item: Work, sizes: list[int], bar: tqdm[Never]
    ) -> Iterable[Candidate]:
        """The candidates that ran at each size; NoAlgorithmError when none ran at any."""
        layer, problem, kernel = item
        buffers: list[ProblemBuffers] = []  # made on the first measurement
        ran_any, statuses = False, None  # statuses: of the largest size (the first)
        try:
            for micro_batch in sizes:
                for source in self._sources():
                    measured = self._size(problem, kernel, micro_batch, source, sizes, buffers)
                    ran = [m.candidate for m in measured if self._usable(m, problem, kernel)]
                    ran_any = ran_any or bool(ran)
                    if statuses is None:
                        statuses = _status_counts(measured)
                    yield from ran
                bar.update(1)
            if not ran_any:
                raise self._no_algorithm(layer, problem, kernel, sizes, statuses or {})
        finally:
            for made in buffers:
                made.release()

    def _usable(self, measurement: Measurement, problem: ConvProblem, kernel: str) -> bool:
        """Whether a measurement can serve `problem`'s mini-batch: it ran; if it is a
        backward-filter part of a split, it can add to dW (beta 1); and it has not failed at
        run time."""
        if not measurement.ok:
            return False
        b = measurement.micro_batch
        split = kernel == "backward_filter" and b < problem.batch
        if split and engines.BETA1_UNSUPPORTED in measurement.notes:
            return False
        return not (
            measurement.engine
            and self.excluded
            and (problem.key(), kernel, measurement.engine, b) in self.excluded
        )

    def _sources(self) -> tuple[str, ...]:
        """The candidate families measured: the legacy algorithms, and the engine
        configurations when asked for and cuDNN has them (>= 9.2: workspace before building)."""
        if self.settings.engines and self.facts.cudnn_version >= MIN_ENGINES_CUDNN:
            return (LEGACY, engine_search())
        return (LEGACY,)

    def _size(
        self,
        problem: ConvProblem,
        kernel: str,
        micro_batch: int,
        source: str,
        sizes: list[int],
        buffers: list[ProblemBuffers],
    ) -> list[Measurement]:
        """One family's measurements of one size: known already, or measured now and stored."""
        measured = self._cached(problem, kernel, micro_batch, source)
        self.counts["cached" if measured is not None else "measured"] += 1
        if measured is not None:
            _log_size(problem, kernel, micro_batch, source, measured, None)
            return measured
        if not buffers:
            samples = steps.benchmark_samples(problem, sizes)
            buffers.append(ProblemBuffers(problem.with_batch(samples), self.handle.stream))
        started = time.perf_counter()
        at_size = problem.with_batch(micro_batch)
        if source == LEGACY:
            measured = self._measure(at_size, kernel, buffers[0])
        else:
            measured = self._measure_engines(at_size, kernel, buffers[0])
        _log_size(problem, kernel, micro_batch, source, measured, time.perf_counter() - started)
        self._seen[(at_size.key(), kernel, source)] = measured
        if self.cache is not None:
            self.cache.store(problem, kernel, micro_batch, self.facts, measured, source=source)
        return measured

    def _no_algorithm(
        self,
        layer: str,
        problem: ConvProblem,
        kernel: str,
        sizes: list[int],
        statuses: dict[str, int],
    ) -> NoAlgorithmError:
        counts = ", ".join(f"{count} x {status}" for status, count in statuses.items())
        tried = ", ".join(map(str, sizes))
        return NoAlgorithmError(
            f"{layer}/{kernel}: cuDNN {cudnn_version_string(self.facts.cudnn_version)} runs "
            f"none of its {kernel} algorithms for {problem.describe()} at any micro-batch size "
            f"tried ({tried}); at {sizes[0]}: {counts or 'Find listed none'}",
            kernel=(layer, kernel),
            statuses=statuses,
        )

    def _cached(
        self, problem: ConvProblem, kernel: str, micro_batch: int, source: str
    ) -> list[Measurement] | None:
        key = (problem.with_batch(micro_batch).key(), kernel, source)
        if key not in self._seen and self.cache is not None:
            found = self.cache.lookup(problem, kernel, micro_batch, self.facts, source=source)
            if found is not None:
                self._seen[key] = found
        return self._seen.get(key)

    def _measure(
        self, problem: ConvProblem, kernel: str, buffers: ProblemBuffers
    ) -> list[Measurement]:
        """All algorithms of one kernel at one micro-batch size: timed, or why not. They run
        where a part of this size is least aligned (steps.benchmark_first_sample)."""
        descs = backend.ProblemDescriptors(problem)
        b = problem.batch
        at = buffers.at_sample(steps.benchmark_first_sample(problem, b))
        workspace, find_bytes = self._find_workspace(self._find_workspace_bytes(descs, kernel))
        perfs = backend.find(
            self.handle, descs, kernel, b, at["x"], at["w"], at["y"], workspace.ptr, find_bytes
        )
        results: dict[tuple[int, str], Measurement] = {}  # by algorithm and math type
        for perf in perfs:
            # A caller who turned TF32 off (FMA) must never get a tensor-op variant, nor one
            # who allowed TF32 a float16 conversion.
            math_type = backend.candidate_math_type(problem.math_type, perf.math_type)
            known = results.get((perf.algo, math_type))
            if known is not None and (known.ok or perf.status != 0):
                continue  # a run that worked beats one that failed, and counts once
            if perf.status != 0:
                failed = Measurement.failed(b, perf.algo, math_type, perf.status_name)
                results[(perf.algo, math_type)] = failed
            else:
                results[(perf.algo, math_type)] = self._time(
                    descs, kernel, perf.algo, math_type, perf.deterministic, at
                )
        return list(results.values())

    def _measure_engines(
        self, problem: ConvProblem, kernel: str, buffers: ProblemBuffers
    ) -> list[Measurement]:
        """Every engine configuration cuDNN's heuristics offer for one kernel at one size:
        timed, or why not. Plans are built for the alignment the parts of this size can have
        (where they are timed, as for the legacy algorithms) and alpha 1, beta 0; a
        backward-filter configuration that cannot also be built with beta 1 (what every later
        part of a split needs) is noted BETA1_UNSUPPORTED, and serves only undivided runs.

        Heuristics offer dozens of configurations, so they are screened: each is timed briefly,
        and only those that no configuration needing at most its workspace beats by more than
        SCREEN_MARGIN get the full `repeats` (a slower one can never be chosen)."""
        b = problem.batch
        at = buffers.at_sample(steps.benchmark_first_sample(problem, b))
        alignments = (graph.alignment(at["x"]), graph.alignment(at["w"]), graph.alignment(at["y"]))
        try:
            op_graph = graph.operation_graph(self.handle, problem, kernel, alignments, 1.0, 0.0)
            choices = graph.heuristic_choices(op_graph, graph.HEURISTIC_MODES)
        except CudnnError as exc:
            logger.info(
                "no engine configurations for %s of %s: %s", kernel, problem.describe(), exc
            )
            return []
        beta1_graph: list[_cudnn.BackendDescriptor] = []  # built when first needed
        failed, screened = [], []
        for choice in choices:
            outcome = self._screen_engine(problem, kernel, choice, alignments, at, beta1_graph)
            if isinstance(outcome, Measurement):
                failed.append(outcome)
            else:
                screened.append(outcome)
        for run in screened:
            more = self.settings.repeats - len(run.times)
            if more > 0 and _worth_timing_fully(run, screened):
                try:
                    run.times.extend(self._time_plan(run.plan, at, 0, more))
                except (CudnnError, CudaOutOfMemoryError) as exc:
                    logger.debug("%s: timing stopped: %s", run.plan.tag, exc)
        return failed + [run.measurement(b) for run in screened]

    def _screen_engine(
        self,
        problem: ConvProblem,
        kernel: str,
        choice: graph.EngineChoice,
        alignments: tuple[int, int, int],
        at: dict[str, int],
        beta1_graph: list[_cudnn.BackendDescriptor],
    ) -> Measurement | _EngineRun:
        """One configuration checked, built and briefly timed; a failed Measurement if not."""
        b, config, notes = problem.batch, choice.config, choice.notes
        math_type = engines.math_type_of(problem.dtype, notes)
        if engines.refusal(notes, problem.dtype, problem.math_type, deterministic=False):
            return _engine_failed(b, config, math_type, "REFUSED_BY_NOTES", notes)
        cap = self.settings.workspace_cap_bytes
        if (choice.workspace_bytes or 0) > cap:
            return _engine_failed(b, config, math_type, "WORKSPACE_OVER_CAP", notes)
        try:
            plan = graph.build_plan(self.handle, choice.descriptor, config.tag)
            workspace = plan.workspace_bytes
            if kernel == "backward_filter":
                beta1_workspace = self._beta1_workspace(problem, alignments, config, beta1_graph)
                if beta1_workspace is None:
                    notes = (*notes, engines.BETA1_UNSUPPORTED)
                else:  # on an H100 the beta-1 plan may need more than the beta-0 one
                    workspace = max(workspace, beta1_workspace)
            if workspace > cap:
                return _engine_failed(b, config, math_type, "WORKSPACE_OVER_CAP", notes)
            warmup = min(SCREEN_WARMUP, self.settings.warmup)
            times = self._time_plan(plan, at, warmup, min(SCREEN_REPEATS, self.settings.repeats))
        except (CudnnError, CudaOutOfMemoryError) as exc:
            status = exc.status_name if isinstance(exc, CudnnError) else exc.name
            return _engine_failed(b, config, math_type, status, notes)
        return _EngineRun(plan, workspace, config, math_type, notes, times)

    def _time_plan(
        self, plan: graph.GraphPlan, at: dict[str, int], warmup: int, repeats: int
    ) -> list[float]:
        workspace = self._workspace.ensure(plan.workspace_bytes).ptr
        return self._timer.times_ms(
            lambda: graph.run_plan(self.handle, plan, at["x"], at["w"], at["y"], workspace),
            warmup,
            repeats,
        )

    def _beta1_workspace(
        self,
        problem: ConvProblem,
        alignments: tuple[int, int, int],
        config: engines.EngineConfig,
        made: list[_cudnn.BackendDescriptor],
    ) -> int | None:
        """The workspace of `config`'s backward-filter plan that adds to dW (beta 1), None if
        that plan does not build; the operation graph for beta 1 is made once per size, in
        `made`."""
        try:
            if not made:
                made.append(
                    graph.operation_graph(
                        self.handle, problem, "backward_filter", alignments, 1.0, 1.0
                    )
                )
            plan = graph.build_plan(self.handle, graph.engine_config(made[0], config), config.tag)
        except CudnnError as exc:
            logger.debug("%s does not build with beta 1: %s", config.tag, exc)
            return None
        return plan.workspace_bytes

    def _find_workspace(self, nbytes: int) -> tuple[Arena, int]:
        """Find's workspace: `nbytes`, or, when the device cannot give that much, the most it
        can, halving down to none (Find then reports what needs more as not run, and timing
        leaves it out)."""
        while True:
            try:
                return self._workspace.ensure(nbytes), nbytes
            except CudaOutOfMemoryError:
                if nbytes == 0:
                    raise
                logger.info("no memory for %d bytes of Find workspace; trying half", nbytes)
                nbytes = nbytes // 2 if nbytes > 1024 else 0

    def _find_workspace_bytes(self, descs: backend.ProblemDescriptors, kernel: str) -> int:
        """As much workspace as the hungriest algorithm within the cap needs, under the
        problem's math type (Find runs under it)."""
        need = 0
        # Every enum value of the kernel's algorithms. Not the max count: that sizes Find's
        # result list, which may count an algorithm once per math type, so it can exceed them.
        for algo in range(len(_cudnn.ALGORITHMS[kernel])):
            try:
                size = backend.workspace_size(
                    self.handle, descs, kernel, descs.problem.batch, algo, descs.problem.math_type
                )
            except CudnnError:
                continue  # unsupported here; Find reports it with its status
            if size <= self.settings.workspace_cap_bytes:
                need = max(need, size)
        return need

    def _time(
        self,
        descs: backend.ProblemDescriptors,
        kernel: str,
        algo: int,
        math_type: str,
        deterministic: bool,
        at: dict[str, int],
    ) -> Measurement:
        b = descs.problem.batch
        try:
            need = backend.workspace_size(self.handle, descs, kernel, b, algo, math_type)
            if need > self.settings.workspace_cap_bytes:
                return Measurement.failed(b, algo, math_type, "WORKSPACE_OVER_CAP")
            # A variant Find reported under another math type may need more than Find had.
            workspace = self._workspace.ensure(need).ptr
            # Prepared once, so the timed calls do only what a Handle's planned call does.
            run = backend.prepared_run(descs, kernel, b, algo, math_type)
            times = self._timer.times_ms(
                lambda: run(self.handle, 1.0, 0.0, at["x"], at["w"], at["y"], workspace, need),
                self.settings.warmup,
                self.settings.repeats,
            )
        except CudnnError as exc:
            return Measurement.failed(b, algo, math_type, exc.status_name)
        except CudaOutOfMemoryError as exc:
            return Measurement.failed(b, algo, math_type, exc.name)
        candidate = Candidate(
            micro_batch=b,
            algo=algo,
            time_ms=statistics.median(times),
            workspace_bytes=need,
            math_type=math_type,
            deterministic=deterministic,
        )
        return Measurement.timed(candidate, times)


@dataclasses.dataclass
class _EngineRun:
    """A configuration that built and ran, with its times so far, and the most workspace any
    of its plans for this size needs (the timed one's, or for backward-filter the beta-1
    plan's where that is more)."""

    plan: graph.GraphPlan
    workspace_bytes: int
    config: engines.EngineConfig
    math_type: str
    notes: tuple[str, ...]
    times: list[float]

    def measurement(self, micro_batch: int) -> Measurement:
        candidate = Candidate(
            micro_batch=micro_batch,
            algo=self.config.index,
            time_ms=statistics.median(self.times),
            workspace_bytes=self.workspace_bytes,
            math_type=self.math_type,
            deterministic=engines.deterministic_of(self.notes),
            engine=self.config.tag,
        )
        return Measurement.timed(candidate, self.times, notes=self.notes)


def engine_search(environ: Mapping[str, str] = os.environ) -> str:
    """The name of this process's engine search: ENGINE_SEARCH, with cuDNN's own workspace cap
    when CUDNN_CONV_WSCAP_DBG sets one."""
    cap = environ.get(WORKSPACE_CAP_VARIABLE, "").strip()
    if not cap:
        return ENGINE_SEARCH
    return f"{ENGINE_SEARCH}/wscap={re.sub(r'[^0-9A-Za-z._-]', '_', cap)[:32]}"


def _engine_failed(
    micro_batch: int,
    config: engines.EngineConfig,
    math_type: str,
    status: str,
    notes: tuple[str, ...],
) -> Measurement:
    failed = Measurement.failed(micro_batch, config.index, math_type, status, engine=config.tag)
    return dataclasses.replace(failed, notes=notes)


def _status_counts(measured: Sequence[Measurement]) -> dict[str, int]:
    """How many algorithms (by math type) failed with each status, most frequent first."""
    return dict(collections.Counter(m.status for m in measured).most_common())


def _log_size(
    problem: ConvProblem,
    kernel: str,
    micro_batch: int,
    source: str,
    measured: list[Measurement],
    seconds: float | None,
) -> None:
    """Benchmark progress at DEBUG, one line per problem size: measured now (in `seconds`), or
    known already (None)."""
    if logger.isEnabledFor(logging.DEBUG):  # describe() only for a record that is shown
        ran = sum(m.ok for m in measured)
        how = "served from the cache" if seconds is None else f"measured in {seconds:.2f} s"
        family = "algorithms" if source == LEGACY else f"engine configurations ({source})"
        logger.debug(
            "%s of %s at micro-batch %d: %s; %d %s ran, %d could not",
            kernel, problem.describe(), micro_batch, how, ran, family, len(measured) - ran,
        )  # fmt: skip


def _worth_timing_fully(run: _EngineRun, runs: Sequence[_EngineRun]) -> bool:
    """Whether no configuration that needs at most `run`'s workspace was more than
    SCREEN_MARGIN times faster in the brief timing."""
    quick = statistics.median(run.times)
    return not any(
        other.workspace_bytes <= run.workspace_bytes
        and statistics.median(other.times) * SCREEN_MARGIN < quick
        for other in runs
    )
