"""Fill benchmark tables on the device, through the SQLite cache, so that a problem is
measured once per device and library version.

Each kernel's sizes are measured largest first by the search the settings name
(`ucudnn.planner.search`): the fast one screens every candidate briefly (cuDNN Find's own trial
for the legacy algorithms, one run after a warm-up for engine configurations), prunes what
cannot win, and times in full (warm-up calls, then the median of several runs measured with
CUDA events on the handle's stream) only what is on or near each size's frontier; the
exhaustive one times everything in full. `ucudnn.runtime.search_device` is the device side.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Never, cast

from tqdm import tqdm

from ucudnn._native import _cuda, _cudnn
from ucudnn.core import engines
from ucudnn.core.arena import GrowingArena
from ucudnn.core.checks import integer, shown
from ucudnn.core.facts import DeviceFacts, cudnn_version_string
from ucudnn.core.problem import ConvProblem
from ucudnn.core.splits import BATCH, Axis
from ucudnn.planner import search
from ucudnn.planner.cache import BenchmarkCache, Measurement
from ucudnn.planner.cache.records import axis_source
from ucudnn.planner.choices import FAST, SEARCHES
from ucudnn.planner.config import byte_count
from ucudnn.planner.errors import NoAlgorithmError
from ucudnn.planner.policies import Policy, sizes_to_measure
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.runtime.engines_at_size import BETA1_UNCHECKED
from ucudnn.runtime.engines_setting import engines_argument
from ucudnn.runtime.families import families_source
from ucudnn.runtime.progress import progress_bar
from ucudnn.runtime.search_device import SizeOnDevice, config_id
from ucudnn.runtime.size_bench import Bench
from ucudnn.runtime.timing import Timer
from ucudnn.runtime.work import Work

logger = logging.getLogger(__name__)

# The cache keeps the sets of each search, version and choice of families apart (their
# `source`): a change to the search gets a new version, so that it measures anew. v1: the
# search of issue 36, sets that serve a split backward filter (timed with beta 1) apart. v2:
# rivals across sizes; a split size's set names the sizes done above it, and only confirmed
# times are planned with.
SEARCH_VERSION = "v2"

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


BUILD_THREADS_VARIABLE = "UCUDNN_BUILD_THREADS"
# The H200 check built 6,000 plans alike on 1, 4 and 8 threads; 8 were 2.9x faster than one
# with a cold CUDA JIT cache (a machine's first use), 4 were 2.5x.
DEFAULT_BUILD_THREADS = 8

# Engine parts, as (problem key, kernel, tag, micro-batch): those that failed at run time are
# left out of the tables a Handle plans from again.
EngineParts = frozenset[tuple[str, str, str, int]]


def search_name(value: object) -> str:
    """A search's name as BenchmarkSettings and --search take it."""
    if not isinstance(value, str) or value.strip().lower() not in SEARCHES:
        searches = ", ".join(SEARCHES)
        raise ValueError(f"search must be one of {searches}, got {shown(value)}")
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
    # Also measure cuDNN's graph-API engine configurations (cuDNN >= 9.2). None: decided by
    # the Handle or open_benchmarker (UCUDNN_ENGINES, else wherever they can run); a
    # Benchmarker given None measures the legacy algorithms only.
    engines: bool | None = None
    # How candidates are measured: "fast" screens, prunes and confirms only the frontier
    # (ucudnn.planner.search); "exhaustive" times every candidate at every size in full.
    search: str = "fast"
    # The plans measured for take deterministic candidates only (a deterministic Handle's): the
    # fast search then measures for them alone, in sets of their own.
    deterministic_only: bool = False
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
        object.__setattr__(self, "engines", engines_argument(self.engines))
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
    """x, w and y of a problem filled with a harmless constant (see FILL_BYTES); parts split
    along `axis` run on slices of them at `at_sample`."""

    def __init__(self, problem: ConvProblem, stream: int, axis: Axis = BATCH) -> None:
        self.problem = problem
        self.axis = axis
        fill = fill_byte(problem.dtype, problem.compute_dtype)
        self.owned = [_cuda.DeviceBuffer(problem.nbytes(t)) for t in ("x", "w", "y")]
        for buffer in self.owned:
            _cuda.memset(buffer.ptr, fill, buffer.nbytes, stream)
        self.x, self.w, self.y = (b.ptr for b in self.owned)

    @property
    def pointers(self) -> dict[str, int]:
        return self.at_sample(0)

    def at_sample(self, first_sample: int) -> dict[str, int]:
        """Pointers of x, w and y for parts that start at `first_sample` along the axis."""
        return {
            "x": self.x + self.axis.offset_bytes(self.problem, "x", first_sample),
            "w": self.w,
            "y": self.y + self.axis.offset_bytes(self.problem, "y", first_sample),
        }

    def release(self) -> None:
        for buffer in self.owned:
            buffer.release()


class Benchmarker:
    """Measures the candidates of (problem, kernel, micro-batch) on one device, through a cache.

    One workspace serves all the measurements of a `tables` call: it grows when a candidate
    needs more (each free waits for the device) and is freed when the call ends, so that a
    Handle keeps no benchmarking memory past planning. So do the build threads.
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
        self._seen: dict[tuple[str, str, str], list[Measurement]] = {}  # by _seen_key
        self.counts = {"measured": 0, "cached": 0}  # problem sizes, for reports
        self.search_counts = search.Counts()  # what the search did, over every call
        self._timer = Timer(handle.stream)
        self._workspace = GrowingArena()

    @property
    def engines_on(self) -> bool:
        """Whether engine configurations are measured: asked for, and cuDNN says their
        workspace before building (>= 9.2)."""
        return bool(self.settings.engines) and self.facts.cudnn_version >= engines.MIN_ENGINES_CUDNN

    def tables(
        self, work: Sequence[Work], policy: Policy, excluded: EngineParts = frozenset()
    ) -> TimingTables:
        """Tables for each (layer, problem, kernel), without the `excluded` engine parts; each
        problem at each size is measured once."""
        jobs = [
            (item, search.size_order(sizes_to_measure(policy, item.axis.extent(item.problem))))
            for item in work
        ]
        tables = TimingTables()
        before, started = dict(self.counts), time.perf_counter()
        counts_before = dataclasses.replace(self.search_counts)
        threads = self.settings.build_thread_count if self.engines_on else 1
        try:
            with _builders(threads) as builders:
                self._timer.stream = self.handle.stream  # the Handle's calls' stream, now
                bench = Bench(
                    self.handle, self._timer, self._workspace,
                    self.settings.workspace_cap_bytes, builders, wave=threads,
                )  # fmt: skip
                total = sum(len(sizes) for _, sizes in jobs)
                with progress_bar(total, self.settings.progress, "ucudnn benchmark", "size") as bar:
                    for item, sizes in jobs:
                        table = KernelTable(
                            item.layer, item.kernel, item.axis.extent(item.problem), axis=item.axis
                        )
                        candidates = self._kernel_candidates(bench, item, sizes, excluded, bar)
                        for candidate in candidates:
                            table.add(candidate)
                        tables.add(table)
        finally:
            self._workspace.release()
        self._log_tables(len(jobs), before, counts_before, time.perf_counter() - started)
        return tables

    def _log_tables(
        self, kernels: int, before: dict[str, int], counts_before: search.Counts, seconds: float
    ) -> None:
        done = self.search_counts
        logger.info(
            "benchmark of %d kernels (%s search): %d problem sizes measured, %d served from the "
            "cache, in %.1f s; candidates: %d screened, %d of them screened out, %d pruned "
            "unbuilt, %d confirmed",
            kernels, self.settings.search, self.counts["measured"] - before["measured"],
            self.counts["cached"] - before["cached"], seconds,
            done.screened - counts_before.screened, done.screened_out - counts_before.screened_out,
            done.pruned - counts_before.pruned, done.confirmed - counts_before.confirmed,
        )  # fmt: skip

    def _kernel_candidates(
        self, bench: Bench, item: Work, sizes: list[int], excluded: EngineParts, bar: tqdm[Never]
    ) -> Iterable[Candidate]:
        """The candidates that ran at each size; NoAlgorithmError when none ran at any."""
        layer, problem, kernel, axis = item
        kernel_search = search.KernelSearch(
            search.Rules.named(self.settings.search),
            kernel,
            axis.extent(problem),
            self.settings.deterministic_only,
        )
        buffers: list[ProblemBuffers] = []  # made on the first measurement
        ran_any, statuses = False, None  # statuses: of the largest size (the first)
        try:
            for micro_batch in sizes:
                measured = self._size(
                    bench, kernel_search, problem, axis, micro_batch, sizes, excluded, buffers
                )
                ran = [
                    m.candidate
                    for m in measured
                    if self.plannable(m, problem, kernel, excluded, axis)
                ]
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
            self.search_counts.add(kernel_search.counts)

    def plannable(
        self,
        measurement: Measurement,
        problem: ConvProblem,
        kernel: str,
        excluded: EngineParts,
        axis: Axis,
    ) -> bool:
        """Whether a plan for the whole of `problem`, split along `axis`, may choose a
        measurement: it ran, its time is not a screen's and it is deterministic where plans
        must be (`search.SizeSearch.plannable`); if it is a backward-filter part of a split, it
        can add to dW (beta 1); and it is not an `excluded` engine part."""
        if not measurement.ok or measurement.confirmed is False:
            return False
        if self.settings.deterministic_only and not measurement.deterministic:
            return False
        b = measurement.micro_batch
        split = kernel == "backward_filter" and b < axis.extent(problem)
        if split and {engines.BETA1_UNSUPPORTED, BETA1_UNCHECKED} & set(measurement.notes):
            return False
        return not (
            measurement.engine
            and excluded
            and (problem.key(), kernel, measurement.engine, b) in excluded
        )

    def source(self, kernel: str, split: bool, above: Sequence[int] = ()) -> str:
        """The cache's name for what this benchmarker measures of `kernel` at a size, after
        the sizes `above`."""
        settings = self.settings
        # The fast search keeps nothing but deterministic candidates for deterministic plans.
        deterministic = settings.deterministic_only and settings.search == FAST
        return measurement_source(
            settings.search, self.engines_on, kernel, split, above, deterministic
        )

    def _size(
        self,
        bench: Bench,
        kernel_search: search.KernelSearch,
        problem: ConvProblem,
        axis: Axis,
        micro_batch: int,
        sizes: list[int],
        excluded: EngineParts,
        buffers: list[ProblemBuffers],
    ) -> list[Measurement]:
        """One size's measurements: known already, or measured now and stored."""
        kernel = kernel_search.kernel
        split = micro_batch < axis.extent(problem)
        source = self.source(kernel, split, kernel_search.above_sizes(micro_batch))
        measured = self._cached(problem, axis, kernel, micro_batch, source)
        self.counts["cached" if measured is not None else "measured"] += 1
        if measured is not None:
            _log_size(problem, kernel, micro_batch, source, measured, None)
            self._remember(kernel_search, problem, axis, micro_batch, measured, excluded)
        else:
            started = time.perf_counter()
            measured = self._measure(
                bench, kernel_search, problem, axis, micro_batch, sizes, buffers
            )
            seconds = time.perf_counter() - started
            _log_size(problem, kernel, micro_batch, source, measured, seconds)
            self._seen[_seen_key(problem, axis, kernel, micro_batch, source)] = measured
            if self.cache is not None:
                self.cache.store(
                    problem, kernel, micro_batch, self.facts, measured, source=source, axis=axis
                )
        return measured

    def _remember(
        self,
        kernel_search: search.KernelSearch,
        problem: ConvProblem,
        axis: Axis,
        micro_batch: int,
        served: list[Measurement],
        excluded: EngineParts,
    ) -> None:
        """What the sizes below need of a size the cache served (a size measured now is
        remembered by its search)."""
        kernel = kernel_search.kernel
        done = []
        for m in served:
            if m.ok:  # it has a time and a workspace
                c = m.candidate
                plannable = self.plannable(m, problem, kernel, excluded, axis)
                done.append(
                    search.Remembered(config_id(m), c.time_ms, c.workspace_bytes, plannable)
                )
        kernel_search.remember(micro_batch, done)

    def _measure(
        self,
        bench: Bench,
        kernel_search: search.KernelSearch,
        problem: ConvProblem,
        axis: Axis,
        micro_batch: int,
        sizes: list[int],
        buffers: list[ProblemBuffers],
    ) -> list[Measurement]:
        if not buffers:
            whole = axis.part(problem, axis.benchmark_extent(problem, sizes))
            buffers.append(ProblemBuffers(whole, self.handle.stream, axis))
        at_size = axis.part(problem, micro_batch)
        at = buffers[0].at_sample(axis.benchmark_first(problem, micro_batch))
        size = kernel_search.at_size(micro_batch)
        kernel = kernel_search.kernel
        on_device = SizeOnDevice(
            bench, at_size, micro_batch, kernel, at, size.split, self.engines_on
        )
        settings = self.settings
        timing = search.Timing(
            settings.warmup, settings.repeats, screen_warmup=min(1, settings.warmup)
        )
        search.search_size(size, on_device.offers(), on_device.device(), timing)
        return on_device.measurements(size)

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
        self, problem: ConvProblem, axis: Axis, kernel: str, micro_batch: int, source: str
    ) -> list[Measurement] | None:
        key = _seen_key(problem, axis, kernel, micro_batch, source)
        if key not in self._seen and self.cache is not None:
            found = self.cache.lookup(
                problem, kernel, micro_batch, self.facts, source=source, axis=axis
            )
            if found is not None:
                self._seen[key] = found
        return self._seen.get(key)


@contextlib.contextmanager
def _builders(threads: int) -> Iterator[concurrent.futures.ThreadPoolExecutor | None]:
    """The threads that build engine plans; None for one (builds on the caller's thread)."""
    if threads <= 1:
        yield None
        return
    with concurrent.futures.ThreadPoolExecutor(threads, "ucudnn-build") as pool:
        yield pool


def measurement_source(
    search_name: str,
    engines_on: bool,
    kernel: str,
    split: bool,
    above: Sequence[int] = (),
    deterministic: bool = False,
    environ: Mapping[str, str] = os.environ,
) -> str:
    """The cache's name for a size's measurements: the search, its version and the families,
    "deterministic" where it kept nothing else, "beta1" for a split of backward filter (timed
    with beta 1, as its later parts run), and the sizes done `above` it where the search's
    choices depend on them."""
    families = families_source(engines_on, environ)
    only = "/deterministic" if deterministic else ""
    beta1 = "/beta1" if kernel == "backward_filter" and split else ""
    after = f"/above={','.join(map(str, above))}" if above else ""
    return f"{search_name}/{SEARCH_VERSION}/{families}{only}{beta1}{after}"


def _seen_key(
    problem: ConvProblem, axis: Axis, kernel: str, micro_batch: int, source: str
) -> tuple[str, str, str]:
    """What a size's measurements are remembered by in one process: its part's problem, the
    kernel and the source, which names the axis as the cache's keys do (`axis_source`)."""
    return (axis.part(problem, micro_batch).key(), kernel, axis_source(source, axis))


def _status_counts(measured: Sequence[Measurement]) -> dict[str, int]:
    """How many candidates failed with each status (or ran: "ok"), most frequent first."""
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
        logger.debug(
            "%s of %s at micro-batch %d: %s (%s); %d candidates ran, %d did not",
            kernel, problem.describe(), micro_batch, how, source, ran, len(measured) - ran,
        )  # fmt: skip
