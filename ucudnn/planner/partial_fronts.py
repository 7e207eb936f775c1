"""WD over desirable sets found only as far as the optimum needs.

Under policy "all" a front takes a solve of the split program per workspace size, hundreds of
them, and under a large budget most of each front lies beyond what any optimal plan gives its
kernel. So each front is found up to a *reach*, and whatever the budget allows beyond it stands
as one option, the stand-in: as fast as the kernel's fastest schedule within the budget, and
one byte larger than the explored part. Every unexplored point is at least as slow and as
large, so the problem with stand-ins is a relaxation: its optimum is no slower than the true
one. An optimum that picks no stand-in is a plan of real schedules, so it is the true optimum
too. Otherwise the fronts whose stand-ins were picked reach further, and it is solved again.

Reaches start at an even share of the budget. The LP relaxation widens them first, as long as
it weighs a stand-in, since it costs a fraction of an integer solve (the integer solves that
follow seldom widen them again), and its price of workspace says how far a front must reach
for a point the LP could still want.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping

from ucudnn.planner.dp import solved_in_closed_form
from ucudnn.planner.pareto import DesirableSets
from ucudnn.planner.tables import (
    Candidate,
    ContentKey,
    KernelId,
    KernelTable,
    Schedule,
    TimingTables,
)
from ucudnn.planner.wd import WDSolution, relaxed_choices

Sets = dict[KernelId, list[Schedule]]
_Fastest = Callable[[KernelTable], Schedule | None]


class _Explored:
    """One table content's front as far as it was found, and its options for the solver."""

    def __init__(self, table: KernelTable, reach: int) -> None:
        self.table = table
        self.reach = reach
        self.edge = reach  # every point up to it is known
        self.stand_in: Schedule | None = None
        self.fastest: Schedule | None = None  # within the budget, once a stand-in needs it
        self.options: list[Schedule] = []  # found again after each widening

    def find(self, sets: DesirableSets, budget_bytes: int, fastest: _Fastest) -> bool:
        """Find the options: the known points within the budget and the stand-in for the
        rest, if any; when none is within, the smallest point (so that the solver names the
        budget needed). False when there is no schedule at all."""
        points, edge = sets.explored(self.table, self.reach)
        self.options = points[: bisect.bisect_right(points, budget_bytes, key=_workspace)]
        self.stand_in = None
        if not self.options:
            self.options = points[:1]
            return bool(points)
        if edge < budget_bytes:
            if self.fastest is None:
                self.fastest = fastest(self.table)
                assert self.fastest is not None  # a point is within the budget
            if self.options[-1].time_ms > self.fastest.time_ms:
                self.edge = int(edge)
                self.stand_in = Schedule.of_parts(
                    (Candidate(self.table.batch, 0, self.fastest.time_ms, self.edge + 1),)
                )
                self.options.append(self.stand_in)
        return True

    def widen(self, budget_bytes: int, price: float) -> None:
        """Reach as far as a point could lie that the LP would still buy at `price` ms per
        byte over the last one known (none is faster than the stand-in), but at least twice
        and at most four times as far: the price of fronts cut short flatters them, and a
        front found too far costs more than another round."""
        last, stand_in = self.options[-2:]
        saved = last.time_ms - stand_in.time_ms
        wanted = math.inf if price <= 0 else last.workspace_bytes + saved / price
        reach = max(2 * self.edge + 1, min(wanted, 4 * self.edge))
        self.reach = int(min(reach, budget_bytes))
        self.options = []


def plan_on_partial_fronts(
    tables: TimingTables,
    sets: DesirableSets,
    budget_bytes: int,
    alignment: int,
    solve: Callable[[Sets], WDSolution],
    fastest: _Fastest,
    infeasible: Callable[[KernelTable], Exception],
) -> WDSolution:
    """`solve`'s optimum over the desirable sets of `tables` within `budget_bytes`, found
    only as far as it needs; `alignment` is the solver's, `fastest` gives a table's fastest
    schedule within the budget, and `infeasible` the error for a table with no schedule at
    all."""
    share = budget_bytes // len(tables)
    explored: dict[KernelId, _Explored] = {}
    by_content: dict[ContentKey, _Explored] = {}
    for kernel_id, table in tables.items():
        key = table.content_key()
        if key not in by_content:
            # Fronts solved in closed form cost little: they are found within the budget.
            cheap = solved_in_closed_form(sets.policy, table.batch)
            reach = budget_bytes if cheap else share
            by_content[key] = _Explored(table, reach)
        explored[kernel_id] = by_content[key]
    price = 0.0
    while True:
        for e in by_content.values():
            if not e.options and not e.find(sets, budget_bytes, fastest):
                raise infeasible(e.table)
        # One list per content: the solver groups the kernels that share one.
        options = {k: e.options for k, e in explored.items()}
        if any(e.stand_in for e in by_content.values()):
            relaxed, price = relaxed_choices(options, budget_bytes, alignment)
            if _widen(explored, relaxed, budget_bytes, price):
                continue
        solution = solve(options)
        if not _widen(explored, solution.choices, budget_bytes, price):
            return solution


def _widen(
    explored: dict[KernelId, _Explored],
    choices: Mapping[KernelId, Schedule],
    budget_bytes: int,
    price: float,
) -> bool:
    """Widen the fronts whose stand-ins are chosen; whether there was one."""
    short = {id(e): e for k, e in explored.items() if choices[k] is e.stand_in}
    for e in short.values():
        e.widen(budget_bytes, price)
    return bool(short)


def _workspace(schedule: Schedule) -> int:
    return schedule.workspace_bytes
