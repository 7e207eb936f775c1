"""The fastest mini-batch size, and its plan, that fit a GPU's memory in training.

A table measured (or modelled) at mini-batch N gives the cost of every micro-batch up to N, so
the table of any batch B <= N follows from it (`KernelTable.at_batch`): the same rows, at sizes
up to B. For each candidate B, the memory model (`ucudnn.planner.memory`) says what the
weights, activations, gradients and headroom (DEFAULT_OVERHEAD unless given) leave of the
memory; the best WD plan whose arena fits in that is the step's convolution time; B over that
time is the speed in samples per second. The chosen B is the fastest per sample, which need not
be the largest that fits: a large batch leaves little room for workspace, and so may have to
run slower algorithms.

Nothing is extrapolated: a B above the tables' N is refused, and a B that the tables do not
hold undivided is planned from their micro-batches that add up to it (so its undivided run,
which may be faster, is not among its choices), and says so.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from typing import SupportsIndex

from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.argtypes import PolicyArgument, Size
from ucudnn.core.checks import integer
from ucudnn.planner.candidate import ROW_WORKSPACE
from ucudnn.planner.choices import DEFAULT_TIME_LIMIT_S
from ucudnn.planner.collector import collector_paused
from ucudnn.planner.config import byte_count, micro_batch_policy
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.kernel_table import ContentKey, KernelId, KernelTable
from ucudnn.planner.memory import (
    DEFAULT_OVERHEAD,
    FrameworkOverhead,
    StepMemory,
    TrainingMemory,
    parse_overhead,
    training_memory,
)
from ucudnn.planner.pareto import DesirableSets
from ucudnn.planner.plan import make_plan_wd
from ucudnn.planner.plan_types import Plan
from ucudnn.planner.policies import DEFAULT_POLICY, Policy, allowed_sizes
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.textable import render_table
from ucudnn.planner.units import bytes_text, format_size
from ucudnn.planner.values import check_batch
from ucudnn.planner.wd import aligned

# Each batch size tried is a WD plan of the whole network: a tune plans at most this many.
MAX_TUNE_BATCHES = 128
# The default batch sizes' multiples of a step: at most this many (with the powers of two and
# the tables' batch, at most 96 batch sizes in all).
_GRID = 64


@dataclasses.dataclass(frozen=True)
class TunePoint:
    """One candidate mini-batch: its plan and memory when it fits, else why not."""

    batch: int
    measured: bool  # whether the timings hold every kernel undivided at this batch
    minimum: StepMemory  # with the smallest workspace arena any plan needs
    status: str = "fits"  # or "over_memory", or "unplannable" (no schedule makes it up)
    plan: Plan | None = None  # the best WD plan in the memory left, when it fits
    step: StepMemory | None = None  # with the plan's arena

    @property
    def fits(self) -> bool:
        return self.plan is not None

    @property
    def time_ms(self) -> float | None:
        """The step's predicted convolution time (all kernels of all layers once)."""
        return None if self.plan is None else self.plan.time_ms

    @property
    def samples_per_s(self) -> float | None:
        if self.plan is None or self.plan.time_ms == 0:
            return None
        return self.batch / (self.plan.time_ms / 1e3)


@dataclasses.dataclass(frozen=True)
class TuneResult:
    memory_bytes: int
    table_batch: int  # the N the tables were measured (or modelled) at
    model: TrainingMemory
    points: tuple[TunePoint, ...]  # batch ascending; at least one fits

    @property
    def timings_source(self) -> str:
        """Where the timings came from, as the plans name it ("" when not given)."""
        assert self.best.plan is not None  # the best point fits
        return self.best.plan.timings_source

    @property
    def best(self) -> TunePoint:
        """The point with the most samples per second (the larger batch on a tie)."""
        fitting = [p for p in self.points if p.fits]
        return max(fitting, key=lambda p: (p.samples_per_s or 0.0, p.batch))

    def report(self) -> str:
        """The memory model, the curve as a table, and the choice."""
        m, best = self.model, self.best
        lines = [
            f"memory {format_size(self.memory_bytes)}: weights {format_size(m.weights_bytes)} "
            f"and as much for their gradients; per sample, activations "
            f"{format_size(m.activations_per_sample)} and gradients in flight "
            f"{format_size(m.gradients_per_sample)}",
            _headroom_text(m.overhead),
            _timings_text(self.timings_source, self.table_batch),
        ]
        header = ["batch", "fits", "step ms", "samples/s", "memory", "workspace", "note"]
        lines += render_table(
            header, [_row(p, p is best, self.memory_bytes) for p in self.points], 0, None, {1, 6}
        )
        if any(not p.measured for p in self.points):
            lines.append(
                "composed: the timings have no undivided run at this batch, so it is planned "
                "only from the smaller micro-batches that add up to it (its undivided run "
                "might be faster)"
            )
        assert best.step is not None and best.time_ms is not None
        lines.append(
            f"best: batch {best.batch}, {best.samples_per_s or 0:.0f} samples/s "
            f"({best.time_ms:.3f} ms of convolutions per step), "
            f"{format_size(best.step.total_bytes)} of {format_size(self.memory_bytes)} "
            f"with {format_size(best.step.arena_bytes)} of workspace"
        )
        return "\n".join(lines)


def _headroom_text(overhead: FrameworkOverhead) -> str:
    default = " (the default)" if overhead == DEFAULT_OVERHEAD else ""
    return (
        f"headroom {overhead.text()}{default} for what the model does not see: the CUDA "
        "context, library handles, allocator slack"
    )


def _timings_text(source: str, table_batch: int) -> str:
    """Where the timings come from, as a plan names it (measurements or the MODEL), and N."""
    return (
        f"timings: {source}, at batch {table_batch}"
        if source
        else f"timings at batch {table_batch}"
    )


def _row(point: TunePoint, best: bool, memory_bytes: int) -> list[str]:
    notes = [] if point.measured else ["composed"]
    notes += ["best"] if best else []
    if point.step is None or point.time_ms is None:
        fits = "no" if point.status == "over_memory" else "—"
        needs = format_size(point.minimum.total_bytes)
        if needs == format_size(memory_bytes):  # more than the memory, if only just
            needs = f"> {needs}"
        return [str(point.batch), fits, "", "", f"needs {needs}" if fits == "no" else "", "",
                ", ".join(notes)]  # fmt: skip
    return [
        str(point.batch), "yes", f"{point.time_ms:.3f}", f"{point.samples_per_s or 0:.0f}",
        format_size(point.step.total_bytes), format_size(point.step.arena_bytes),
        ", ".join(notes),
    ]  # fmt: skip


def default_batches(table_batch: int) -> list[int]:
    """Powers of two and multiples of a step up to `table_batch`, and `table_batch` itself: the
    step is 8, doubled until it leaves at most _GRID multiples (for a `table_batch` of 520
    or more), so that there are at most 96 batch sizes, whatever the batch."""
    step = 8
    while table_batch // step > _GRID:
        step *= 2
    powers = {1 << i for i in range(table_batch.bit_length())}
    return sorted({*powers, *range(step, table_batch + 1, step), table_batch})


def tables_batch(graph: LayerGraph, tables: TimingTables) -> int:
    """The one mini-batch N at which `tables` measured every kernel of `graph`."""
    wanted = graph.kernel_ids()
    missing = [k for k in wanted if k not in tables]
    if missing:
        raise ValueError(
            f"the timings have no rows for {len(missing)} of the network's {len(wanted)} "
            f"kernels, such as {_names(missing)}; measure the network itself (ucudnn bench "
            "NETWORK --export FILE.csv) or plan it from --model"
        )
    known = set(wanted)
    extra = [k for k in tables if k not in known]
    if extra:
        raise ValueError(
            f"the timings have rows for {len(extra)} kernels that are not in the network, "
            f"such as {_names(extra)}: they are timings of another network"
        )
    batches = sorted({tables[k].batch for k in wanted})
    if len(batches) > 1:
        raise ValueError(
            f"the timings hold the network's layers at different batches "
            f"({_numbers(batches)}); tuning needs one mini-batch for the whole network: measure "
            "(or model) it at one --batch"
        )
    return batches[0]


def _names(kernels: Sequence[KernelId]) -> str:
    return ", ".join(f"{layer}/{kernel}" for layer, kernel in kernels[:3])


def _numbers(values: Iterable[int]) -> str:
    return ", ".join(map(str, values))


def check_batches(batches: Iterable[SupportsIndex], table_batch: int) -> list[int]:
    """`batches`, checked and sorted: none above `table_batch`, which is never extrapolated,
    and at most MAX_TUNE_BATCHES of them (read no further, so a huge range costs nothing)."""
    distinct: set[int] = set()
    for b in batches:
        distinct.add(check_batch(b))
        if len(distinct) > MAX_TUNE_BATCHES:
            raise ValueError(
                f"more than {MAX_TUNE_BATCHES} batch sizes to tune over: each is planned for the "
                f"whole network, so at most {MAX_TUNE_BATCHES} are tried; give fewer"
            )
    checked = sorted(distinct)
    if not checked:
        raise ValueError("no batch sizes to tune over")
    beyond = [b for b in checked if b > table_batch]
    if beyond:
        which = f"batch {beyond[0]} is" if len(beyond) == 1 else f"batches {_numbers(beyond)} are"
        raise ValueError(
            f"{which} beyond the batch {table_batch} of the timings, and timings are never "
            f"extrapolated; they must be measured (or modelled) at batch "
            f"{beyond[-1]} or more"
        )
    return checked


@collector_paused()
def tune(
    graph: LayerGraph,
    tables: TimingTables,
    memory_bytes: Size,
    *,
    batches: Iterable[SupportsIndex] | None = None,
    overhead: FrameworkOverhead | str = DEFAULT_OVERHEAD,
    policy: PolicyArgument = DEFAULT_POLICY,
    deterministic_only: bool = False,
    solver: str = "highs",
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    alignment: SupportsIndex = CUDNN_ALIGNMENT,
    timings_source: str = "",
) -> TuneResult:
    """Plan `graph`'s training step at each batch size in `batches` (default: powers of two and
    multiples of 8, or of a larger step from N = 520 on, up to the tables' N: see
    `default_batches`; at most MAX_TUNE_BATCHES) within `memory_bytes` of device memory in all
    (bytes, or text such as "16GiB"), `overhead` ("1GiB+30%") being what the memory model does
    not see: by default DEFAULT_OVERHEAD, a headroom for the CUDA context, library handles and
    allocator slack (NO_OVERHEAD, or "0", for none).

    `tables` must hold every kernel of `graph`, measured at one mini-batch N. Each batch size's
    WD solve gets up to `time_limit_s`. Raises ValueError for a batch above N or too many
    batches, or when the desirable sets of every batch take more than their `StepBudget`, and
    InfeasibleError, naming the memory the smallest batch needs, when no batch fits.
    """
    memory_bytes = byte_count(memory_bytes, "memory_bytes")
    if isinstance(overhead, str):
        overhead = parse_overhead(overhead, "overhead")
    alignment = integer(alignment, "alignment", minimum=1)
    table_batch = tables_batch(graph, tables)
    sizes = default_batches(table_batch) if batches is None else check_batches(batches, table_batch)
    model = training_memory(graph, overhead)
    policy = micro_batch_policy(policy, "policy")
    sets = DesirableSets(policy, deterministic_only)
    least = {k: _LeastWorkspace(t, deterministic_only) for k, t in _per_content(graph, tables)}
    points = []
    for batch in sizes:
        at_batch = _at_batch(graph, tables, batch)
        smallest = _smallest_arena(graph, tables, batch, at_batch, least, sets, alignment)
        point = TunePoint(
            batch=batch,
            measured=all(batch in t.rows() for _, t in at_batch.items()),
            minimum=model.step(batch, smallest or 0),
        )
        room = model.arena_room(batch, memory_bytes)
        if smallest is None:
            point = dataclasses.replace(point, status="unplannable")
        elif room < smallest:
            point = dataclasses.replace(point, status="over_memory")
        else:
            plan = make_plan_wd(
                at_batch, room, policy, deterministic_only, solver, alignment,
                timings_source=timings_source, time_limit_s=time_limit_s, sets=sets,
            )  # fmt: skip
            step = model.step(batch, plan.workspace_bytes)
            point = dataclasses.replace(point, plan=plan, step=step)
        points.append(point)
    result = TuneResult(memory_bytes, table_batch, model, tuple(points))
    if not any(p.fits for p in points):
        raise _nothing_fits(result)
    return result


def _per_content(graph: LayerGraph, tables: TimingTables) -> list[tuple[ContentKey, KernelTable]]:
    """One table of `graph`'s kernels per content."""
    return list({tables[k].content_key(): tables[k] for k in graph.kernel_ids()}.items())


def _at_batch(graph: LayerGraph, tables: TimingTables, batch: int) -> TimingTables:
    """The tables of `graph`'s kernels at `batch`, made once per kernel and content and
    renamed for the layers that repeat it, so that they share their content key: each batch
    works it out once per content, not once per kernel."""
    made: dict[tuple[str, ContentKey], KernelTable] = {}
    at_batch = TimingTables()
    for kernel_id in graph.kernel_ids():
        table = tables[kernel_id]
        key = (table.kernel, table.content_key())
        if (first := made.get(key)) is None:
            made[key] = first = table.at_batch(batch)
            at_batch.add(first)
        else:
            at_batch.add(first.renamed(table.layer))
    return at_batch


class _LeastWorkspace:
    """The least workspace of a table's schedules at each batch size, where the undivided run
    has a candidate of the least workspace of all the sizes it may use (the rule of
    `DesirableSets.least_workspace`, which is asked where it has none): from the table at the
    tables' batch, each size's least workspace and their running least, once for a tune."""

    def __init__(self, table: KernelTable, deterministic_only: bool) -> None:
        records = ((b, table.records(b, deterministic_only)) for b in table.micro_batches())
        self._least = {b: rows[0][ROW_WORKSPACE] for b, rows in records if rows}
        self._sizes = list(self._least)  # ascending
        self._running = list(itertools.accumulate(self._least.values(), min))

    def at(self, batch: int, policy: Policy) -> int | None:
        """The least workspace at `batch`, or None where the undivided run has none of it."""
        allowed = allowed_sizes(policy, batch)
        if isinstance(allowed, range) and allowed.step == 1 and allowed.start <= 1:
            count = bisect.bisect_right(self._sizes, allowed.stop - 1)
            least = self._running[count - 1] if count else None
        else:
            least = min((self._least[b] for b in allowed if b in self._least), default=None)
        return least if least is not None and self._least.get(batch) == least else None


def _smallest_arena(
    graph: LayerGraph,
    tables: TimingTables,
    batch: int,
    at_batch: TimingTables,
    least: dict[ContentKey, _LeastWorkspace],
    sets: DesirableSets,
    alignment: int,
) -> int | None:
    """The smallest WD arena of `at_batch`, `graph`'s tables at `batch`, or None when a
    kernel has no schedule at all."""
    at_once = {key: found.at(batch, sets.policy) for key, found in least.items()}
    total = 0
    for kernel_id in graph.kernel_ids():
        smallest = at_once[tables[kernel_id].content_key()]
        if smallest is None:  # no front: the batch may be over memory
            smallest = sets.least_workspace(at_batch[kernel_id])
        if smallest is None:
            return None
        total += aligned(smallest, alignment)
    return total


def _nothing_fits(result: TuneResult) -> InfeasibleError:
    plannable = [p for p in result.points if p.status != "unplannable"]
    if not plannable:
        return InfeasibleError(
            "no batch size can be planned: the timings' micro-batch sizes make up none of "
            f"{_numbers(p.batch for p in result.points)}"
        )
    smallest = plannable[0]
    return InfeasibleError(
        f"the smallest batch size tried, {smallest.batch}, needs "
        f"{bytes_text(smallest.minimum.total_bytes)} ({_parts_text(smallest.minimum)}), more "
        f"than the {bytes_text(result.memory_bytes)} given",
        required_bytes=smallest.minimum.total_bytes,
    )


def _parts_text(step: StepMemory) -> str:
    return (
        f"weights and their gradients {format_size(2 * step.weights_bytes)}, activations "
        f"{format_size(step.activations_bytes)}, gradients {format_size(step.gradients_bytes)}, "
        f"overhead {format_size(step.overhead_bytes)}, workspace {format_size(step.arena_bytes)}"
    )
