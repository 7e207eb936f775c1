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

from ucudnn._native import _cudnn
from ucudnn.core import engines, slabs
from ucudnn.core.arena import GrowingArena
from ucudnn.core.checks import integer, shown
from ucudnn.core.facts import DeviceFacts, cudnn_version_string
from ucudnn.core.problem import ConvProblem
from ucudnn.core.splits import BATCH, Axis
from ucudnn.planner import search
from ucudnn.planner.cache import BenchmarkCache, Measurement
from ucudnn.planner.cache.records import axis_source
from ucudnn.planner.choices import EXHAUSTIVE, FAST, SEARCHES
from ucudnn.planner.config import byte_count
from ucudnn.planner.errors import NoAlgorithmError
from ucudnn.planner.policies import UNDIVIDED, Policy, sizes_to_measure, slab_extents
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.runtime import slab_bench
from ucudnn.runtime.bench_buffers import ProblemBuffers, SampleBuffers
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
        self,
        work: Sequence[Work],
        policy: Policy,
        excluded: EngineParts = frozenset(),
        slab_policy: Policy = UNDIVIDED,
    ) -> TimingTables:
        """Tables for each (layer, problem, kernel), without the `excluded` engine parts; each
        problem at each size is measured once. At every size, each kernel is also measured cut
        into slabs of each extent of `slab_policy` (`slab_bench`)."""
        jobs = [
            (
                item,
                search.size_order(sizes_to_measure(policy, item.axis.extent(item.problem))),
                _slab_extents(slab_policy, item),
            )
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
                total = sum(len(sizes) * (1 + len(extents)) for _, sizes, extents in jobs)
                with progress_bar(total, self.settings.progress, "ucudnn benchmark", "size") as bar:
                    for item, sizes, extents in jobs:
                        table = KernelTable(
                            item.layer, item.kernel, item.axis.extent(item.problem), axis=item.axis
                        )
                        candidates = self._kernel_candidates(
                            bench, item, sizes, extents, excluded, bar
                        )
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
        self,
        bench: Bench,
        item: Work,
        sizes: list[int],
        extents: list[int],
        excluded: EngineParts,
        bar: tqdm[Never],
    ) -> Iterable[Candidate]:
        """The candidates that ran at each size, whole and cut into slabs of each of
        `extents`; NoAlgorithmError when none ran whole at any size."""
        layer, problem, kernel, axis = item
        kernel_search = search.KernelSearch(
            search.Rules.named(self.settings.search),
            kernel,
            axis.extent(problem),
            self.settings.deterministic_only,
        )
        buffers: list[SampleBuffers] = []  # made on the first measurement
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
            for extent in extents:
                for micro_batch in sizes:
                    yield from self._slab_candidates(
                        bench, item, micro_batch, extent, sizes, excluded, buffers
                    )
                    bar.update(1)
        finally:
            for made in buffers:
                made.release()
            self.search_counts.add(kernel_search.counts)

    def _slab_candidates(
        self,
        bench: Bench,
        item: Work,
        micro_batch: int,
        extent: int,
        sizes: list[int],
        excluded: EngineParts,
        buffers: list[SampleBuffers],
    ) -> list[Candidate]:
        """The candidates at `micro_batch` cut into slabs of `extent` planes, each distinct
        slab measured at its first slab's place in the whole problem's buffers (made when a
        slab is first measured, not served by the cache), every candidate timed in full (the
        exhaustive search: a slab's screen says little of the others') and, for backward
        filter, as adding into dW (beta 1)."""
        _, problem, kernel, axis = item

        def whole_at(first_sample: int) -> dict[str, int]:
            if not buffers:
                buffers.append(self._buffers(problem, axis, sizes))
            return buffers[0].at_sample(first_sample)

        measured = []
        for shape in slab_bench.slab_shapes(problem, kernel, extent):
            shape_search = search.KernelSearch(
                search.Rules.named(EXHAUSTIVE), kernel, micro_batch,
                self.settings.deterministic_only, accumulates=True,
            )  # fmt: skip
            view = slab_bench.ShapeBuffers(whole_at, problem, shape)
            at_shape = self._size(
                bench, shape_search, shape.problem, BATCH, micro_batch, [micro_batch], excluded,
                [view],
            )  # fmt: skip
            measured.append((shape, at_shape))

        def plannable(shape_problem: ConvProblem, m: Measurement) -> bool:
            # Backward filter's slabs add to dW: each must run with beta 1.
            return self.plannable(m, shape_problem, kernel, excluded, BATCH, accumulates=True)

        return slab_bench.composed(micro_batch, extent, measured, plannable)

    def plannable(
        self,
        measurement: Measurement,
        problem: ConvProblem,
        kernel: str,
        excluded: EngineParts,
        axis: Axis,
        accumulates: bool = False,
    ) -> bool:
        """Whether a plan for the whole of `problem`, split along `axis`, may choose a
        measurement: it ran, its time is not a screen's and it is deterministic where plans
        must be (`search.SizeSearch.plannable`); if it is a backward-filter part of a split
        (or of a kernel whose parts all add to dW: `accumulates`), it can add to dW (beta 1);
        and it is not an `excluded` engine part."""
        if not measurement.ok or measurement.confirmed is False:
            return False
        if self.settings.deterministic_only and not measurement.deterministic:
            return False
        b = measurement.micro_batch
        split = kernel == "backward_filter" and (accumulates or b < axis.extent(problem))
        if split and {engines.BETA1_UNSUPPORTED, BETA1_UNCHECKED} & set(measurement.notes):
            return False
        return not (
            measurement.engine
            and excluded
            and (problem.key(), kernel, measurement.engine, b) in excluded
        )

    def source(
        self, kernel: str, split: bool, above: Sequence[int] = (), search_name: str = ""
    ) -> str:
        """The cache's name for what this benchmarker measures of `kernel` at a size, after
        the sizes `above`, by the search `search_name` (default: the settings')."""
        settings = self.settings
        search_name = search_name or settings.search
        # The fast search keeps nothing but deterministic candidates for deterministic plans.
        deterministic = settings.deterministic_only and search_name == FAST
        return measurement_source(search_name, self.engines_on, kernel, split, above, deterministic)

    def _size(
        self,
        bench: Bench,
        kernel_search: search.KernelSearch,
        problem: ConvProblem,
        axis: Axis,
        micro_batch: int,
        sizes: list[int],
        excluded: EngineParts,
        buffers: list[SampleBuffers],
    ) -> list[Measurement]:
        """One size's measurements: known already, or measured now and stored."""
        kernel = kernel_search.kernel
        above = kernel_search.above_sizes(micro_batch)
        source = self.source(
            kernel, kernel_search.splits(micro_batch), above, kernel_search.rules.name
        )
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
        buffers: list[SampleBuffers],
    ) -> list[Measurement]:
        if not buffers:
            buffers.append(self._buffers(problem, axis, sizes))
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

    def _buffers(self, problem: ConvProblem, axis: Axis, sizes: list[int]) -> ProblemBuffers:
        """Buffers in which every size of `problem` runs at its benchmark place."""
        whole = axis.part(problem, axis.benchmark_extent(problem, sizes))
        return ProblemBuffers(whole, self.handle.stream, axis)

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


def _slab_extents(slab_policy: Policy, item: Work) -> list[int]:
    """The slab extents to measure `item` at: none for a problem that cannot be cut."""
    if slabs.unsplittable(item.problem) is not None:
        return []
    return slab_extents(slab_policy, slabs.planes(item.problem, item.kernel))


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
