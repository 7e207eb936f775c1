"""WD over desirable sets found only as far as the optimum needs.

Under policy "all" a front has a point at some of hundreds of workspace sizes, and a walk along
it solves the split program at each. Most of them lie where no optimal plan takes its kernel.
So a front is known only at some sizes: the fastest schedule within a size (`plan_wr`'s) is
the front's point with the largest workspace up to that size, so two sizes whose fastest
schedules are the same point hold no point between them, and two whose points differ leave a
*gap*. A gap stands as one option for the solver, the stand-in: as fast as the point above it,
and as large as the first size in it. Every point in the gap is at least as slow and as large,
so the problem with stand-ins is a relaxation: its optimum is no slower than the true one. An
optimum that picks no stand-in is a plan of real schedules, so it is the true optimum too.
Otherwise each gap whose stand-in was picked is cut in two at its middle size, by one more
fastest schedule, and it is solved again.

A front starts known at its least workspace and at the budget. The LP relaxation cuts gaps
first, as long as it weighs a stand-in, since it costs a fraction of an integer solve; then
so do the gaps that the LP bound does not rule out against a known integer solution, so that
the integer solve seldom picks a stand-in. Fronts whose sizes make a divisor chain are walked
whole within the budget instead: each size costs a closed-form solve.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence

from ucudnn.planner.candidate import (
    ROW_SIZE,
    ROW_TIME,
    ROW_WORKSPACE,
    Candidate,
    Row,
    row_workspace_speed_key,
)
from ucudnn.planner.dp import SplitDP, solved_in_closed_form
from ucudnn.planner.eligible import records_by_size
from ucudnn.planner.kernel_table import ContentKey, KernelId, KernelTable
from ucudnn.planner.pareto import DesirableSets
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.wd import WDSolution
from ucudnn.planner.wd.bounds import possible_options, relaxed_choices

Sets = dict[KernelId, list[Schedule]]


@dataclasses.dataclass(slots=True)
class _Known:
    """A point of the front, the fastest schedule within each size from `first` to `last`
    (indices into the sizes)."""

    first: int
    last: int
    point: Schedule


class _Front:
    """One table content's front within the budget, known at some workspace sizes (or, walked
    whole, only its options: every point)."""

    def __init__(self, table: KernelTable, sets: DesirableSets) -> None:
        self.table = table
        self._sets = sets  # the fastest schedules are solved in their budget
        # Those below are know_ends's; a front walked whole leaves them empty (as tuples, no
        # objects of its own: a plan may hold thousands of fronts).
        self.sizes: Sequence[int] = ()  # the workspace sizes of the candidates within the budget
        # The records of every micro-batch size within the budget, in (workspace, speed) order,
        # their workspaces and their sizes: of those within a workspace size, the last of each
        # micro-batch size is the fastest there, which `plan_wr` runs.
        self._records: Sequence[Row] = ()
        self._workspaces: Sequence[int] = ()
        self._micro_batches: Sequence[int] = ()
        self._rates: Sequence[float] = ()  # [i]: the least time per sample of the first i records
        self.known: list[_Known] = []
        self.stand_ins: dict[int, _Known] = {}  # id of a gap's stand-in: the point below it
        # Each gap's stand-in, made once, by the gap's first size and the time of the point above.
        self._stand_in_of_gap: dict[tuple[int, float], Schedule] = {}
        self.options: list[Schedule] = []

    def know_ends(self, records: dict[int, tuple[Row, ...]], top: Schedule | None) -> None:
        """Know the points at the least workspace size and at the budget, from the records
        (`records_by_size`) within the budget and `top`, `plan_wr`'s schedule within it (None:
        there is none, and no point is known)."""
        rows = sorted(itertools.chain(*records.values()), key=row_workspace_speed_key)
        self._records = rows
        self._workspaces = [r[ROW_WORKSPACE] for r in rows]
        self._micro_batches = [r[ROW_SIZE] for r in rows]
        per_sample = (r[ROW_TIME] / r[ROW_SIZE] for r in rows)
        self._rates = [math.inf, *itertools.accumulate(per_sample, min)]
        self.sizes = sorted(set(self._workspaces))
        if top is None:
            return
        end = len(self.sizes) - 1
        start, bottom = 0, self._fastest_within(0)
        if bottom is None:  # no schedule within the least size: the first one that has one
            start = self._first_feasible()
            bottom = self._fastest_within(start)
            assert bottom is not None
        if _same(bottom, top):
            self.known = [self._known(end, top)]
        else:
            self.known = [self._known(start, bottom), self._known(end, top)]

    def make_options(self) -> None:
        """The known points, each gap's stand-in above the point below it."""
        self.options, self.stand_ins = [], {}
        for below, above in itertools.pairwise(self.known):
            self.options.append(below.point)
            if below.last + 1 < above.first:
                gap = (below.last + 1, above.point.time_ms)
                if (stand_in := self._stand_in_of_gap.get(gap)) is None:
                    # A row's fields: the figures are a point's and a size's, checked already.
                    fields = (
                        self.table.batch,
                        0,
                        gap[1],
                        self.sizes[gap[0]],
                        "default",
                        False,
                        "",
                        0,
                    )
                    stand_in = Schedule.of_parts((Candidate.of_row(fields),))
                    self._stand_in_of_gap[gap] = stand_in
                self.stand_ins[id(stand_in)] = below
                self.options.append(stand_in)
        self.options.append(self.known[-1].point)

    def cut(self, stand_in: Schedule) -> None:
        """Cut the gap of `stand_in` in two at its middle size."""
        below = self.stand_ins[id(stand_in)]
        at = next(i for i, k in enumerate(self.known) if k is below)
        above = self.known[at + 1]
        middle = (below.last + 1 + above.first - 1) // 2
        # A point other than the one below is faster than it: the program need look no further.
        found = self._fastest_within(middle, below.point.time_ms)
        if found is None or _same(found, below.point):
            below.last = middle
        else:
            self.known.insert(at + 1, self._known(middle, found))

    def _known(self, index: int, point: Schedule) -> _Known:
        """`point`, the fastest within size `index`, known from its own size to there."""
        return _Known(self._index(point.workspace_bytes), index, point)

    def _index(self, workspace: int) -> int:
        return bisect.bisect_left(self.sizes, workspace)

    def _fastest_within(self, index: int, below_ms: float = math.inf) -> Schedule | None:
        """`plan_wr`'s schedule within size `index`: the fastest there, of least workspace, if
        it is faster than `below_ms`; else None."""
        within = bisect.bisect_right(self._workspaces, self.sizes[index])
        # Each micro-batch size's last record within: a dict keeps the last value of a key.
        fastest = dict(zip(self._micro_batches[:within], self._records[:within], strict=True))
        dp = SplitDP(self.table.batch, self._sets.budget, self._sets.candidate)
        dp.offer_fastest(fastest, self._rates[within])
        way = dp.fastest(below_ms)
        return None if way is None or way.time_ms >= below_ms else dp.schedule(way)

    def _first_feasible(self) -> int:
        """The least size within which some schedule makes up the batch (one is within the
        last): a bisection, as a size larger than one that has a schedule has one too."""
        low, high = 0, len(self.sizes) - 1
        while low < high:
            middle = (low + high) // 2
            if self._fastest_within(middle) is None:
                low = middle + 1
            else:
                high = middle
        return low


def _same(a: Schedule, b: Schedule) -> bool:
    return (a.time_ms, a.workspace_bytes) == (b.time_ms, b.workspace_bytes)


def plan_on_partial_fronts(
    tables: TimingTables,
    sets: DesirableSets,
    budget_bytes: int,
    alignment: int,
    solve: Callable[[Sets], WDSolution],
    infeasible: Callable[[KernelTable], Exception],
    fastest: Mapping[ContentKey, Schedule | None],
) -> WDSolution:
    """`solve`'s optimum over the desirable sets of `tables` within `budget_bytes`, found
    only as far as it needs; `alignment` is the solver's, `infeasible` gives the error for a
    table with no schedule at all, and `fastest` holds each content's schedule of `plan_wr`
    within the budget (None: it has none), but where its front is walked whole."""
    fronts: dict[KernelId, _Front] = {}
    by_content: dict[ContentKey, _Front] = {}
    for kernel_id, table in tables.items():
        key = table.content_key()
        if key not in by_content:
            by_content[key] = _start(table, sets, budget_bytes, infeasible, fastest)
        fronts[kernel_id] = by_content[key]
    while True:
        # One list per content: the solver groups the kernels that share one.
        options = {k: f.options for k, f in fronts.items()}
        if any(f.stand_ins for f in by_content.values()):
            relaxed = relaxed_choices(options, budget_bytes, alignment)
            if _cut(fronts, {k: [s] for k, s in relaxed.items()}):
                continue
            # The LP's optimum is real: cut the gaps that an integer optimum may still pick,
            # by the LP bound, before a solve (which costs more than many cuts).
            if _cut(fronts, possible_options(options, budget_bytes, alignment)):
                continue
        solution = solve(options)
        if not _cut(fronts, {k: [s] for k, s in solution.choices.items()}):
            return solution


def _start(
    table: KernelTable,
    sets: DesirableSets,
    budget_bytes: int,
    infeasible: Callable[[KernelTable], Exception],
    fastest: Mapping[ContentKey, Schedule | None],
) -> _Front:
    front = _Front(table, sets)
    if solved_in_closed_form(sets.policy, table.batch):
        # Walked whole within the budget: its points are the options, with no gap to cut.
        front.options = sets.within(table, budget_bytes)
        if front.options:
            return front
    else:
        records = records_by_size(table, budget_bytes, sets.policy, sets.deterministic_only)
        front.know_ends(records, fastest[table.content_key()])
        if front.known:
            front.make_options()
            return front
    # Nothing within the budget: the smallest point, so that the solver names the budget
    # needed, if there is a schedule at all.
    smallest = sets.smallest(table)
    if smallest is None:
        raise infeasible(table)
    front.options = [smallest]
    return front


def _cut(fronts: dict[KernelId, _Front], choices: Mapping[KernelId, list[Schedule]]) -> bool:
    """Cut the gaps whose stand-ins are among `choices`; whether there was one."""
    chosen = {id(s): (f, s) for k, f in fronts.items() for s in choices[k]}
    cut = [(f, s) for f, s in chosen.values() if id(s) in f.stand_ins]
    for front, stand_in in cut:
        front.cut(stand_in)
    for front in {id(f): f for f, _ in cut}.values():
        front.make_options()
    return bool(cut)
