"""Desirable sets: the exact Pareto fronts over (workspace, time) of candidates and schedules.

A point is kept unless another is at most as large and at most as slow, and better in one;
of points equal in both, the first given is kept. Fronts are sorted by workspace ascending,
so time strictly decreases along them.

The desirable set of a kernel is the front of all its schedules (time adds, workspace is the
largest part's), restricted to the policy's micro-batch sizes and to a workspace limit. It is
computed exactly as the front of the fastest schedules under each distinct candidate
workspace w: any schedule whose workspace is w is at most as fast as the fastest one that only
uses candidates of workspace <= w, so no front point is missed, and each of those is a real
schedule. This equals µ-cuDNN's combining recursion D(b) = Pareto{K_b ∪ (K_s ⊕ D(b - s))}
while running one scalar dynamic program per distinct workspace instead of merging sets.
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from ucudnn.planner.candidate import ROW_SIZE, ROW_WORKSPACE, Candidate, Row
from ucudnn.planner.config import micro_batch_policy
from ucudnn.planner.dp import SplitDP
from ucudnn.planner.eligible import least_workspace_by_size, size_records
from ucudnn.planner.general_dp import StepBudget
from ucudnn.planner.kernel_table import ContentKey, KernelTable
from ucudnn.planner.policies import DEFAULT_POLICY, Policy, policy_text
from ucudnn.planner.schedule import Schedule

T = TypeVar("T")


def _workspace_time(item: object) -> tuple[int, float]:
    return (item.workspace_bytes, item.time_ms)  # type: ignore[attr-defined]


def pareto_front(
    items: Iterable[T], key: Callable[[T], tuple[int, float]] = _workspace_time
) -> list[T]:
    """The non-dominated items by `key` = (workspace, time), workspace ascending."""
    front: list[T] = []
    best_time = float("inf")
    for item in sorted(items, key=key):  # stable: the first of equal points wins
        time = key(item)[1]
        if time < best_time:
            front.append(item)
            best_time = time
    return front


def desirable_set(
    table: KernelTable,
    limit_bytes: int | None,
    policy: Policy = DEFAULT_POLICY,
    deterministic_only: bool = False,
    budget: StepBudget | None = None,
) -> list[Schedule]:
    """The Pareto front of `table`'s schedules within `limit_bytes` (None: no limit). Sizes
    that are no divisor chain are solved at each workspace size, within `budget` (by default,
    one of its own: see `StepBudget`)."""
    records = size_records(table, limit_bytes, policy, deterministic_only)
    if all(r[ROW_SIZE] == table.batch for r in records):
        # The batch undivided only: each record is the fastest run within its workspace (they
        # come faster as they grow), so each is a point, as the walk would find it.
        return [Schedule.of_parts((Candidate.of_row(r),)) for r in records]
    return list(FrontWalk(table.batch, records, StepBudget() if budget is None else budget))


_WORKSPACE = operator.attrgetter("workspace_bytes")
_ROW_WORKSPACE = operator.itemgetter(ROW_WORKSPACE)


class FrontWalk:
    """A desirable set's points found one candidate workspace size at a time, ascending; a
    point is found at the size where its schedule first becomes the fastest. Iterating gives
    the points; `step` takes one size, so that a caller can stop before a size it needs not
    look at. `records` are the candidates' rows in (workspace, speed) order, as
    `size_records` gives them; `candidate` makes a point's parts of them."""

    def __init__(
        self,
        batch: int,
        records: list[Row],
        budget: StepBudget,
        candidate: Callable[[Row], Candidate] = Candidate.of_row,
    ) -> None:
        self._dp = SplitDP(batch, budget, candidate)
        self._records = records
        self._next = 0  # the first record of the workspace size `step` takes
        self._front_ms = math.inf  # the program's sum for the last schedule it found faster
        self._last: Schedule | None = None

    @property
    def next_workspace(self) -> int | None:
        """The workspace size `step` looks at next (every point below it is found), or None
        when the whole set is."""
        if self._next == len(self._records):
            return None
        return self._records[self._next][ROW_WORKSPACE]

    def step(self) -> Schedule | None:
        """The point found at the next workspace size, if any."""
        dp, records, start = self._dp, self._records, self._next
        workspace = records[start][ROW_WORKSPACE]
        self._next = bisect.bisect_right(records, workspace, start, key=_ROW_WORKSPACE)
        # Every one offered (no short-circuit), and only then asked whether it may beat the
        # last point: an offer may lower the program's bound on the rest for the others.
        offered = [r for r in records[start : self._next] if dp.offer(r)]
        # A faster schedule must use a new candidate, whose workspace is larger than any
        # before, so the front grows in order: a point joins when it is strictly faster (so
        # the program may leave out what cannot beat the last point, and need not solve at
        # all when no new candidate can).
        if (
            dp.may_beat(offered, self._front_ms)
            and (way := dp.fastest(self._front_ms)) is not None
            and way.time_ms < self._front_ms
        ):
            self._front_ms = way.time_ms
            schedule = dp.schedule(way)
            # The program adds the parts in its own order: a sum smaller by rounding alone
            # (the same schedule, or one just as fast) is no point of the front.
            if self._last is None or schedule.time_ms < self._last.time_ms:
                self._last = schedule
                return schedule
        return None

    def __iter__(self) -> Iterator[Schedule]:
        while self.next_workspace is not None:
            if (point := self.step()) is not None:
                yield point


def desirable_points(
    table: KernelTable,
    policy: Policy,
    deterministic_only: bool,
    budget: StepBudget,
    candidate: Callable[[Row], Candidate] = Candidate.of_row,
) -> FrontWalk:
    """The points of `table`'s unlimited desirable set, found one workspace size at a time
    (see `FrontWalk`): a caller that needs only those within some limit stops there."""
    records = size_records(table, None, policy, deterministic_only)
    return FrontWalk(table.batch, records, budget, candidate)


class _KeptFront:
    """A desirable set found as far as asked: its first points, and what finds the rest."""

    def __init__(self, walk: FrontWalk) -> None:
        self.known: list[Schedule] = []
        self._walk = walk

    def up_to(self, limit_bytes: int | None) -> list[Schedule]:
        """The points known once every point within `limit_bytes` (None: all) is, with at
        least one point (when there is one): the first beyond the limit when none is within,
        and otherwise none beyond it (no workspace size beyond it is looked at)."""
        walk = self._walk
        while (size := walk.next_workspace) is not None and (
            limit_bytes is None or not self.known or size <= limit_bytes
        ):
            if (point := walk.step()) is not None:
                self.known.append(point)
        return self.known


def smallest_workspace(
    table: KernelTable, policy: Policy = DEFAULT_POLICY, deterministic_only: bool = False
) -> int | None:
    """The smallest limit under which `table` has a schedule, or None if it has none."""
    least = _least_at_once(table, policy, deterministic_only)
    if least is not None:
        return least
    front = desirable_set(table, None, policy, deterministic_only)
    return front[0].workspace_bytes if front else None


def _least_at_once(table: KernelTable, policy: Policy, deterministic_only: bool) -> int | None:
    """The least workspace of any schedule, where the undivided run has a candidate of the
    least workspace of all (no schedule needs less than its parts' least); else None: the
    front's first point must tell."""
    least_by_size = least_workspace_by_size(table, policy, deterministic_only)
    least = min(least_by_size.values(), default=None)
    return least if least_by_size.get(table.batch) == least else None


class _Candidates(dict[Row, Candidate]):
    """The Candidate of each row, made once for all the plans some desirable sets serve: a
    tune plans every batch size from the same rows (`KernelTable.at_batch`)."""

    def __missing__(self, row: Row) -> Candidate:
        found = self[row] = Candidate.of_row(row)
        return found


class DesirableSets:
    """Desirable sets under a fixed policy, each computed once per table content and kept.

    The set under any limit is a prefix of the unlimited one (a schedule within the limit
    that an unlimited point dominates is dominated by one no larger, so also within the
    limit), so one front per table answers every limit: planning a network again at another
    budget, or at several batch sizes (`ucudnn.planner.tune`), reuses what was computed. A
    front is found only as far as a limit asks (its points come workspace ascending). All of
    them together are solved within one `StepBudget`.
    """

    def __init__(self, policy: Policy = DEFAULT_POLICY, deterministic_only: bool = False) -> None:
        self.policy = micro_batch_policy(policy, "policy")
        self.deterministic_only = bool(deterministic_only)
        self.budget = StepBudget()
        self._fronts: dict[ContentKey, _KeptFront] = {}
        self._least: dict[ContentKey, int | None] = {}  # see least_workspace
        # Its lookup, not a method of these sets, is what the fronts hold: no cycle through
        # them, so sets that a plan made and dropped are freed at once, not by the collector.
        self._candidates = _Candidates()
        self.candidate: Callable[[Row], Candidate] = self._candidates.__getitem__

    def check_made_for(self, policy: Policy, deterministic_only: bool) -> None:
        """Refuse to serve a plan of another policy or determinism."""
        policy = micro_batch_policy(policy, "policy")
        if (self.policy, self.deterministic_only) == (policy, deterministic_only):
            return
        only = ", deterministic only"
        raise ValueError(
            f"the desirable sets were made for policy {policy_text(self.policy)}"
            f"{only if self.deterministic_only else ''}, not for this plan's "
            f"{policy_text(policy)}{only if deterministic_only else ''}"
        )

    def front(self, table: KernelTable) -> list[Schedule]:
        """The unlimited desirable set of `table`, workspace ascending."""
        return self._up_to(table, None)

    def smallest(self, table: KernelTable) -> Schedule | None:
        """The front's first point (None: no schedule at all), found without the rest of the
        front: all a batch that is over memory needs."""
        return next(iter(self._up_to(table, -1)), None)

    def least_workspace(self, table: KernelTable) -> int | None:
        """`smallest_workspace` of `table`, kept per content; where the front must tell, its
        first point is kept too. A batch over memory needs no more."""
        key = table.content_key()
        if key not in self._least:
            least = _least_at_once(table, self.policy, self.deterministic_only)
            if least is None:
                smallest = self.smallest(table)
                least = None if smallest is None else smallest.workspace_bytes
            self._least[key] = least
        return self._least[key]

    def within(self, table: KernelTable, limit_bytes: int) -> list[Schedule]:
        """The desirable set of `table` within `limit_bytes`: equal to `desirable_set`'s,
        found no further than the limit (a plan at a small budget needs none of the rest)."""
        front = self._up_to(table, limit_bytes)
        return front[: bisect.bisect_right(front, limit_bytes, key=_WORKSPACE)]

    def _up_to(self, table: KernelTable, limit_bytes: int | None) -> list[Schedule]:
        key = table.content_key()
        kept = self._fronts.get(key)
        if kept is None:
            points = desirable_points(
                table, self.policy, self.deterministic_only, self.budget, self.candidate
            )
            kept = self._fronts[key] = _KeptFront(points)
        try:
            return kept.up_to(limit_bytes)
        except ValueError:  # over the budget: the points cannot be found any further
            del self._fronts[key]
            raise
