"""The micro-batch dynamic program shared by WR and the desirable sets.

A schedule of a batch N is a multiset of micro-batch sizes adding up to N, each part run with the
fastest candidate offered at its size. Its time is the sum of the parts' times; equal times go
to the smaller workspace (the largest part's), so the answer is never dominated; remaining ties
go to the undivided run, then to a fixed choice (fewer parts, in the closed form), so equal
inputs always give equal schedules. The policy keeps parts at least batch / MAX_PARTS samples
(see `ucudnn.planner.policies`), so a schedule never makes more than MAX_PARTS cuDNN calls.

Two exact solvers find it; which one runs depends only on the sizes offered:

- **Divisor chains** (the default powerOfTwo policy, undivided, lists such as 1,4,32): when each
  size of at most N/2 divides the next, a closed form costs O(sizes), whatever N. Let c_1 < ... <
  c_m be those sizes and h_j the best way to make exactly c_j from them: h_1 = best(c_1),
  h_j = min(best(c_j), (c_j / c_(j-1)) * h_(j-1)). Then the best way to make any n is
  floor(n / c_m) * h_m plus the best way to make n mod c_m from the smaller sizes. (Sort any
  schedule's parts largest first and pour them into bins of c_m: as every part divides every
  larger one, no bin overflows, so floor(n / c_m) bins fill exactly and cost at least h_m each,
  and what is left is under c_m.) A size above N/2 fits at most once, so each is tried as one
  part beside the chain's best for the rest.
- **Any other sizes**: T(b) = min(best single candidate at b, min over s <= b/2 of best(s) +
  T(b - s)) for b = 1..N; every split of b has a part of at most b/2, so the cut loses nothing.
  Among the fastest splits with a given first part, the one whose remainder needs the least
  workspace needs the least in all, as the maximum is monotone: the workspace tie-break stays
  exact. A solve from scratch costs O(N * sizes) at worst; it tries the splits of b in order
  of t(s) - r * s, r the least time per sample of any part, and stops where that plus r * b
  (a bound on the split, as the rest takes at least r a sample) exceeds the best so far, so
  that most entries try a few. The entries are kept, and a new candidate updates only those
  whose options changed (see `_GeneralDP`), and candidates that cannot be part of a schedule
  faster than the one to beat are left out (see `SplitDP`): both give the very entries a
  solve from scratch would. The worst case is still charged before each solve
  and refused beyond MAX_DP_STEPS with an error saying why, and what a solve did not take is
  given back; the desirable sets solve again at each workspace size, so a `StepBudget` bounds
  all their solves together (those of a plan, of an explanation, or of a tune over many
  batches).
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from ucudnn.core.checks import integer
from ucudnn.core.problem import MAX_DIM
from ucudnn.planner.candidate import (
    ROW_DETERMINISTIC,
    ROW_SIZE,
    ROW_TIME,
    ROW_WORKSPACE,
    Candidate,
    Row,
    row_speed_key,
    row_workspace_speed_key,
)
from ucudnn.planner.config import byte_count
from ucudnn.planner.kernel_table import KernelTable
from ucudnn.planner.policies import Policy, allowed_sizes
from ucudnn.planner.schedule import Schedule

# The general program's inner loop runs at most this often per budget (a few seconds).
MAX_DP_STEPS = 20_000_000


class StepBudget:
    """The steps of the general program left to one computation: one solve, or every solve
    behind some desirable sets, which solve again at each workspace size (thousands of them
    under policy "all") and would otherwise run for hours."""

    def __init__(self, steps: int = MAX_DP_STEPS) -> None:
        self.limit = self.left = steps

    def spend(self, batch: int, small_sizes: list[int], first: int) -> int:
        """Reserve the worst case of a solve of T(first), ..., T(batch) with `small_sizes`
        (those <= batch / 2), or refuse it, before it runs; `refund` gives back what the
        solve did not take."""
        # Most solves are far within: a quick bound first, the exact worst case if need be.
        steps = len(small_sizes) * (batch + 1 - first)
        if steps > self.left:
            # The options tried at b are the sizes s <= b / 2: size s from b = max(first, 2s).
            steps = sum(batch + 1 - max(first, 2 * s) for s in small_sizes)
        if steps <= self.left:
            self.left -= steps
            return steps
        spent = self.limit - self.left
        again = (
            f" beyond the {spent} already spent (desirable sets solve again at each workspace size)"
            if spent
            else ""
        )
        # Thousands of sizes under policy "all": the first few say enough.
        sizes = ", ".join(map(str, small_sizes[:8]))
        if len(small_sizes) > 8:
            sizes += f", ..., {small_sizes[-1]} ({len(small_sizes)} sizes)"
        raise ValueError(
            f"micro-batch sizes {sizes} do not each divide the next, so "
            f"planning batch {batch} with them takes {steps} steps{again}, more than the "
            f"{self.limit} allowed; use sizes that divide each other (such as powers of two) "
            "or a smaller batch"
        )

    def refund(self, steps: int) -> None:
        """Give back reserved steps that a solve did not take."""
        self.left += steps


_ROW_TIME = operator.itemgetter(ROW_TIME)
_ROW_WORKSPACE = operator.itemgetter(ROW_WORKSPACE)


def _eligible_by_size(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> Iterator[tuple[int, Sequence[Row]]]:
    """Each policy size's rows of the candidates a schedule may use: within the limit (None:
    any), deterministic when asked; sizes ascending, those with none left out."""
    limit = _limit(limit_bytes)
    for b, rows in _policy_sizes(table, policy):
        if limit_bytes is None and not deterministic_only:
            yield b, rows  # a table's sizes all have rows
        elif eligible := _eligible(rows, limit, deterministic_only):
            yield b, eligible


def _limit(limit_bytes: int | None) -> float:
    return math.inf if limit_bytes is None else byte_count(limit_bytes, "limit_bytes")


def _policy_sizes(table: KernelTable, policy: Policy) -> Iterator[tuple[int, Sequence[Row]]]:
    """The rows of each size of the policy that `table` has, sizes ascending."""
    allowed, by_size = allowed_sizes(policy, table.batch), table.rows()
    if len(allowed) < len(by_size):  # the policy's few sizes (as "undivided"'s one) are looked up
        return ((b, by_size[b]) for b in allowed if b in by_size)
    return ((b, rows) for b, rows in sorted(by_size.items()) if b in allowed)


def _eligible(rows: Sequence[Row], limit: float, deterministic_only: bool) -> list[Row]:
    return [
        r
        for r in rows
        if r[ROW_WORKSPACE] <= limit and (r[ROW_DETERMINISTIC] or not deterministic_only)
    ]


def eligible_rows(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> list[Row]:
    """The rows of the candidates a schedule may use (see `_eligible_by_size`)."""
    by_size = _eligible_by_size(table, limit_bytes, policy, deterministic_only)
    return [r for _, rows in by_size for r in rows]


def least_workspace_by_size(
    table: KernelTable, policy: Policy, deterministic_only: bool
) -> dict[int, int]:
    """The least workspace of the eligible candidates (`eligible_rows`, with no limit) at each
    size that has one."""
    by_size = ((b, table.records(b, deterministic_only)) for b, _ in _policy_sizes(table, policy))
    return {b: records[0][ROW_WORKSPACE] for b, records in by_size if records}


def fastest_by_size(
    table: KernelTable,
    limit_bytes: int | None,
    policy: Policy,
    deterministic_only: bool,
) -> dict[int, Row]:
    """The row of the fastest of the eligible candidates (`eligible_rows`) at each size that
    has one (the least speed_key), sizes ascending: all that the fastest schedule under one
    limit can use, as it runs each part with the fastest candidate at its size.

    The fastest of all a size's rows is found first: where it is eligible, as it mostly is
    (93% of the sizes of ResNet-50's engine tables at 64 MiB), it is the fastest eligible one,
    and no row is looked at again."""
    limit = _limit(limit_bytes)
    fastest = {}
    for b, rows in _policy_sizes(table, policy):
        row = _fastest_row(rows)
        if row[ROW_WORKSPACE] > limit or not (row[ROW_DETERMINISTIC] or not deterministic_only):
            if not (eligible := _eligible(rows, limit, deterministic_only)):
                continue
            row = _fastest_row(eligible)
        fastest[b] = row
    return fastest


def _fastest_row(rows: Sequence[Row]) -> Row:
    """min(rows, key=row_speed_key), in a fraction of the time: by the times alone, in loops
    in C, but where they tie."""
    times = list(map(_ROW_TIME, rows))
    least = min(times)
    if times.count(least) == 1:
        return rows[times.index(least)]
    return min((r for r in rows if r[ROW_TIME] == least), key=row_speed_key)


def records_by_size(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> dict[int, tuple[Row, ...]]:
    """Each size's eligible rows (`eligible_rows`) that are faster than every eligible one of
    their size that needs less workspace, or as much and comes first in speed order, in
    (workspace, speed) order; sizes ascending, those with none left out. Offered in that
    order, these are the ones that become the best at their size (`SplitDP.offer`), and no
    other changes what the program finds. Tables of engines hold hundreds per size, few of
    them these. They are the table's (`KernelTable.records`), or their prefixes."""
    limit = _limit(limit_bytes)
    by_size: dict[int, tuple[Row, ...]] = {}
    for b, _ in _policy_sizes(table, policy):
        records = table.records(b, deterministic_only)
        if records and records[-1][ROW_WORKSPACE] <= limit:  # as most are: no copy
            by_size[b] = records
        elif within := bisect.bisect_right(records, limit, key=_ROW_WORKSPACE):
            by_size[b] = records[:within]
    return by_size


def size_records(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> list[Row]:
    """All sizes' `records_by_size` in (workspace, speed) order, as the desirable sets offer
    them."""
    by_size = records_by_size(table, limit_bytes, policy, deterministic_only)
    records = [row for rows in by_size.values() for row in rows]
    records.sort(key=row_workspace_speed_key)  # stable: sizes ascending on a full tie
    return records


# The order of an entry with no way at all: below every option, so that none replaces it
# unless it has a time (an option of infinite time is no way either).
_NO_WAY = -1


class _Way(NamedTuple):
    """A way to make some number of samples: its time and workspace, its number of parts, and
    how many parts of each size it runs (None: the general program counts them, when asked)."""

    time_ms: float
    workspace_bytes: int
    parts: int
    counts: dict[int, int] | None


def _is_divisor_chain(sizes: Sequence[int]) -> bool:
    return all(larger % smaller == 0 for smaller, larger in itertools.pairwise(sizes))


def solved_in_closed_form(policy: Policy, batch: int) -> bool:
    """Whether every solve for `batch` under `policy` takes the closed form, whatever the
    candidates: the sizes of at most half the batch make a divisor chain."""
    sizes = allowed_sizes(policy, batch)
    return _is_divisor_chain(sizes[: bisect.bisect_right(sizes, batch // 2)])


# A candidate is pruned only when its bound exceeds the threshold by more than this fraction:
# the bound and the program add the same times in other orders, so their sums may differ by
# rounding (at most MAX_PARTS * 2**-53 of a total, about 1e-11); keeping a few more is exact.
_ROUNDING = 1e-9
_PAST_ROUNDING = 1 + _ROUNDING
# The bound's time per sample moves down in steps of this factor, so that offers that run a
# sample a little faster each do not make the program look at every size again.
_RATE_STEP = 2 ** (1 / 8)


def _rate_at_most(rate: float) -> float:
    """A value of at most `rate`, from a coarse ladder (see _RATE_STEP)."""
    if rate <= 0:
        return 0.0
    return min(rate, _RATE_STEP ** math.floor(math.log(rate, _RATE_STEP)))


class SplitDP:
    """The fastest schedule of `batch` samples from the candidates offered so far, as table
    rows (`KernelTable.rows`); the general program's solves are charged to `budget` (by
    default, one of its own). Only a schedule's parts are made Candidates, by `candidate`:
    a program is offered many more than its schedules use.

    The general program only looks at candidates that may be part of a schedule faster than
    a threshold F: the time `fastest` is asked to beat, or that of a schedule already known. A
    candidate of size s and time t may when t + rate * (batch - s) <= F, where rate is at most
    the least time per sample of any candidate offered (a bound on the rest of the schedule).

    Why this gives the very same schedules: call the offered candidates S, and b *needed* when
    T_S(b) + P(b) < F, where P(b) is the least time of any schedule of batch - b. By induction
    on b, the entry of every needed b is S's own (time, workspace and split): the fastest
    options at b make schedules of the batch faster than F, so none of their candidates is
    left out, and the remainders b - s they leave are needed too (P(b - s) <= time(s) + P(b));
    every other option, left out or not, is a real schedule, so no faster; the tie-breaks see
    the same fastest options in the same order. The batch is needed whenever the answer is
    faster than F. An entry computed earlier, with other candidates left out, stays exact as
    long as no size at most its own has since come in or changed its best (F and the rate
    only decrease, and candidates are only added, so what was real stays real): those entries
    are computed again.
    """

    def __init__(
        self,
        batch: int,
        budget: StepBudget | None = None,
        candidate: Callable[[Row], Candidate] = Candidate.of_row,
    ) -> None:
        self.batch = integer(batch, "batch", minimum=1, maximum=MAX_DIM)
        self._budget = StepBudget() if budget is None else budget
        self._candidate = candidate
        self._best: dict[int, Row] = {}
        # The sizes of _best, kept sorted as they come, those up to half the batch apart from
        # the larger (a walk along a front solves once per workspace size).
        self._small: list[int] = []
        self._large: list[int] = []
        self._rate = math.inf  # see the class docstring
        self._below = math.inf  # F: only schedules faster than this are looked for
        self._chain = True  # whether the small sizes are a divisor chain (once not, never again)
        self._general: _GeneralDP | None = None  # made on first need: it holds O(batch) lists
        self._used: dict[int, Row] = {}  # the candidates the general program looks at
        self._look_again = True  # whether the rate or F moved since _used was chosen
        self._changes: dict[int, Row | None] = {}  # to _used since the last solve
        self._way: _Way | None = None  # the general program's last answer

    def offer_fastest(self, fastest: dict[int, Row], rate: float | None = None) -> None:
        """Make available the fastest candidate of some sizes, `fastest[size]`, on a program
        offered none yet: what offering them one by one does, at once (the program keeps the
        dict). `rate`, if known, is their least time per sample."""
        assert not self._best, "offer_fastest starts a program"
        self._best = fastest
        sizes = sorted(fastest)
        half = bisect.bisect_right(sizes, self.batch // 2)
        self._small, self._large = sizes[:half], sizes[half:]
        self._chain = _is_divisor_chain(self._small)
        if rate is None:
            rate = min((r[ROW_TIME] / s for s, r in fastest.items()), default=math.inf)
        self._rate = rate

    def offer(self, row: Row) -> bool:
        """Make the candidate of `row` available; True when it becomes the best at its
        micro-batch."""
        size, time = row[ROW_SIZE], row[ROW_TIME]
        current = self._best.get(size)
        # Most offers are slower: their time alone says so (tables of engines offer hundreds).
        if current is not None and (
            current[ROW_TIME] < time or row_speed_key(current) <= row_speed_key(row)
        ):
            return False
        if current is None:
            if 2 * size <= self.batch:
                self._add_small(size)
            else:
                bisect.insort(self._large, size)
        self._best[size] = row
        if time < self._rate * size:
            rate = time / size
            # Exact until the general program first solves (WR offers all before that);
            # from then on each new rate makes it look at every size again: coarse steps.
            self._rate = rate if self._general is None else _rate_at_most(rate)
            self._look_again = True
        elif not self._look_again and self.may_beat((row,), self._below):
            self._used[size] = self._changes[size] = row
        return True

    def _add_small(self, size: int) -> None:
        """Insert `size` among the small sizes. They stay a chain if it divides the next and the
        one before divides it, as the one before divided the next."""
        small = self._small
        at = bisect.bisect(small, size)
        small.insert(at, size)
        self._chain = (
            self._chain
            and (at == 0 or size % small[at - 1] == 0)
            and (at + 1 == len(small) or small[at + 1] % size == 0)
        )

    def may_beat(self, rows: Sequence[Row], below: float) -> bool:
        """Whether the candidate of one of the offered `rows` may be part of a schedule faster
        than `below` ms: one with it takes at least its time and the rate's bound on the rest."""
        rate, batch, limit = self._rate, self.batch, below * (1 + _ROUNDING)
        return any(row[ROW_TIME] + rate * (batch - row[ROW_SIZE]) <= limit for row in rows)

    def solve(self) -> Schedule | None:
        """The fastest schedule of the whole batch from what was offered, or None."""
        way = self.fastest()
        return None if way is None else self.schedule(way)

    def fastest(self, below: float = math.inf) -> _Way | None:
        """The fastest way to make the batch, as numbers: cheaper than a Schedule when the
        caller may not keep it. Turn it into one with `schedule` before offering more.

        Exact when it takes less than `below` ms (the least of every `below` given so far);
        otherwise it is some schedule no faster than that, or None (as it is when there is
        none at all)."""
        if below < self._below:
            self._below, self._look_again = below, True
        if self._chain:
            return self._solve_chain(self._small)
        if self._general is None:
            self._general = _GeneralDP(self.batch)
        if self._look_again:
            # A known schedule to beat: the candidates offered since may make it much faster.
            self._below = min(self._below, self._known_time())
            self._look_at_again()
        if self._changes:
            self._way = self._general.solve(self._changes, self._budget)
            self._changes = {}
        return self._way

    def _look_at_again(self) -> None:
        """Choose the candidates that may beat F again, as the rate or F moved."""
        rate, batch, below = self._rate, self.batch, self._below * (1 + _ROUNDING)
        used = {s: r for s, r in self._best.items() if r[ROW_TIME] + rate * (batch - s) <= below}
        self._changes.update((s, None) for s in self._used.keys() - used.keys())
        self._changes.update((s, r) for s, r in used.items() if self._used.get(s) is not r)
        self._used, self._look_again = used, False

    def _known_time(self) -> float:
        """The time of some schedule of the batch, or infinity if none is found: the undivided
        run, or parts that are powers of two, each made the fastest way from the smaller ones
        (a divisor chain: see the closed form above). Cheaper than `_solve_chain`, as it does
        not try each size above half the batch."""
        known = self._best[self.batch][ROW_TIME] if self.batch in self._best else math.inf
        blocks: list[tuple[int, float]] = []  # (power of two, least time to make it)
        size = 1
        while 2 * size <= self.batch:
            if (row := self._best.get(size)) is not None:
                block = row[ROW_TIME]
                if blocks:
                    block = min(block, size // blocks[-1][0] * blocks[-1][1])
                blocks.append((size, block))
            size *= 2
        left, total = self.batch, 0.0
        for size, block in reversed(blocks):
            count, left = divmod(left, size)
            total += count * block
        return known if left else min(known, total)

    def _solve_chain(self, chain: list[int]) -> _Way | None:
        best = self._best
        # Block j, the best way to make exactly chain[j]: (time, workspace, parts), and the
        # size whose candidate it runs, chain[j] itself or that of block j - 1 repeated.
        blocks: list[tuple[float, int, int]] = []
        bases: list[int] = []
        for j, size in enumerate(chain):
            row = best[size]
            block = (row[ROW_TIME], row[ROW_WORKSPACE], 1)
            base = size
            if j:
                factor = size // chain[j - 1]
                time, workspace, parts = blocks[-1]
                composite = (time * factor, workspace, parts * factor)
                if composite < block:  # never equal: it has at least two parts
                    block, base = composite, bases[-1]
            blocks.append(block)
            bases.append(base)
        # The fastest way (time, workspace, parts), the undivided run first, so that it wins
        # every tie, then each part above N/2 once beside the chain's way to make the rest,
        # then the chain's alone (part 0); its part, and the rest's [(block, count)].
        best_way: tuple[float, int, int] | None = None
        chosen: tuple[int, list[tuple[int, int]]] = (0, [])
        for size in (*reversed(self._large), 0):
            # The rest from the largest block down: time, workspace and parts add up in turn.
            n, j = self.batch - size, len(chain) - 1
            time, workspace, parts, uses = 0.0, 0, 0, []
            while n and j >= 0:
                count, n = divmod(n, chain[j])
                if count:
                    block_time, block_workspace, block_parts = blocks[j]
                    time += count * block_time
                    workspace = max(workspace, block_workspace)
                    parts += count * block_parts
                    uses.append((j, count))
                j -= 1
            if n:  # the chain cannot make the rest
                continue
            if size:
                row = best[size]
                way = (row[ROW_TIME] + time, max(row[ROW_WORKSPACE], workspace), parts + 1)
            else:
                way = (time, workspace, parts)
            if best_way is None or way < best_way:
                best_way, chosen = way, (size, uses)
        if best_way is None:
            return None
        size, uses = chosen
        counts = {size: 1} if size else {}
        for j, count in uses:
            base = bases[j]
            counts[base] = counts.get(base, 0) + count * (chain[j] // base)
        return _Way(*best_way, counts)

    def schedule(self, way: _Way) -> Schedule:
        # Largest micro-batches first: a canonical order for equal schedules.
        counts = way.counts
        if counts is None:
            assert self._general is not None  # it made the way
            counts = self._general.counts()
        runs = [(counts[s], self._candidate(self._best[s])) for s in sorted(counts, reverse=True)]
        return Schedule.of_runs(runs)


class _GeneralDP:
    """T(b) over b = 1..batch for sizes that are not a divisor chain, kept between solves and
    updated where the candidates looked at changed.

    Each entry is the least of its options by (time, workspace, order), order 0 for the run
    of b undivided and s for a split of s (at most b / 2) then T(b - s): the tie-breaks of
    the module docstring. An option changes only when its candidate does or T(b - s) does, so
    a solve visits b from the smallest size that changed up: where the entry's own option
    changed (or went), it tries every option again; elsewhere the other options were no
    better than the entry before, so the entry is the least of itself and the options that
    changed. The entries come out as a solve from scratch would make them, bit for bit."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self._time = [0.0] + [math.inf] * batch
        self._workspace = [0] * (batch + 1)  # of the schedule behind _time[b]
        self._order = [_NO_WAY] * (batch + 1)  # 0: run b undivided; s: run s, then T(b - s)
        self._parts: dict[int, tuple[float, int]] = {}  # size: (time, workspace) looked at
        self._small: list[int] = []  # the sizes of _parts up to half the batch, ascending

    def solve(self, changes: dict[int, Row | None], budget: StepBudget) -> _Way | None:
        """Update the entries to the candidates looked at, given as `changes` since the last
        solve (size: its new best, or None for a size no longer looked at), within `budget`;
        the fastest way to make the batch, or None."""
        changed, gone = set(), set()
        for s, row in changes.items():
            part = None if row is None else (row[ROW_TIME], row[ROW_WORKSPACE])
            if part == self._parts.get(s):
                continue
            if part is None:
                del self._parts[s]
                gone.add(s)
                if 2 * s <= self.batch:
                    self._small.remove(s)
            else:
                if s not in self._parts and 2 * s <= self.batch:
                    bisect.insort(self._small, s)
                self._parts[s] = part
                changed.add(s)
        if changed or gone:
            start = min(changed | gone)
            reserved = budget.spend(self.batch, self._small, start)
            budget.refund(reserved - self._update(start, self._small, changed, gone))
        if math.isinf(self._time[self.batch]):
            return None
        # The parts are counted only for a schedule that is kept (see `counts`).
        return _Way(self._time[self.batch], self._workspace[self.batch], 0, None)

    def _update(self, start: int, small: list[int], changed: set[int], gone: set[int]) -> int:
        """Entries from `start` on; how many options were tried (at most a solve from scratch
        tries, as the options of b that changed are tried only while fewer than all)."""
        time, workspace, order, batch = self._time, self._workspace, self._order, self.batch
        # (size, time, workspace) of each split, ascending: read once per solve, not per entry.
        options = [(s, *self._parts[s]) for s in small]
        if 2 * len(changed) >= len(small):  # as good as new: solve from scratch
            return self._from_scratch(start, small, options)
        touched = self._touched(start, changed, gone)  # [b]: the splits whose option changed
        split_times = [(s, t) for s, t, _ in options]
        tried = 0
        for b in range(start, batch + 1):
            splits = touched[b]
            if splits is None:  # no option at b changed
                continue
            half = b >> 1
            fewer = bisect.bisect_right(small, half)  # the options a solve from scratch tries
            own = order[b]
            single = b in changed
            if (
                (own == 0 and (single or b in gone))
                or (own > 0 and own in splits)
                or (len(splits) >= fewer)
            ):
                t, w, o = self._all_options(b, options, fewer)
                tried += fewer
            else:
                t, w, o = self._least_of(b, splits, (time[b], workspace[b], own), single)
                tried += len(splits)
            if t != time[b] or w != workspace[b] or o != own:
                time[b], workspace[b], order[b] = t, w, o
                # b is the rest of a split s at b + s when s <= b: that option changed. Its
                # entry is tried again where the option is its own, or may now win: an entry
                # not tried again in full only gets faster.
                for s, ts in split_times[: bisect.bisect_right(small, min(b, batch - b))]:
                    later = b + s
                    if ts + t <= time[later] or order[later] == s:
                        if (found := touched[later]) is None:
                            touched[later] = [s]
                        else:
                            found.append(s)
        return tried

    def _from_scratch(
        self, start: int, small: list[int], options: list[tuple[int, float, int]]
    ) -> int:
        """Every entry from `start` on, trying every option that may tie the best; how many
        were tried. (`_all_options`, inlined and cut short: the planner's innermost loop.)"""
        time, workspace, order = self._time, self._workspace, self._order
        parts_get = self._parts.get
        # A split s of b takes at least t(s) + rate * (b - s), rate the least time per sample
        # of any part: the splits are tried by t(s) - rate * s, until that bound says that
        # none left can tie the best.
        rate = min((ts / s for s, (ts, _) in self._parts.items()), default=0.0)
        fewer = bisect.bisect_right(small, start >> 1)
        splits = sorted((ts - rate * s, s, ts, ws) for s, ts, ws in options[:fewer])
        tried = 0
        for b in range(start, self.batch + 1):
            # b / 2 grows by at most one: at most one more size is a split.
            if fewer < len(small) and small[fewer] <= b >> 1:
                s, ts, ws = options[fewer]
                bisect.insort(splits, (ts - rate * s, s, ts, ws))
                fewer += 1
            if (part := parts_get(b)) is None:
                best_time, best_workspace, best_order = math.inf, 0, _NO_WAY
            else:
                (best_time, best_workspace), best_order = part, 0
            floor = rate * b
            beyond = best_time * _PAST_ROUNDING - floor  # a split whose key is more cannot tie
            for key, s, ts, ws in splits:
                if key > beyond:
                    break
                tried += 1
                ts += time[b - s]
                if ts <= best_time:
                    rest = workspace[b - s]
                    if rest > ws:
                        ws = rest
                    if ts < best_time or (ws, s) < (best_workspace, best_order):
                        best_time, best_workspace, best_order = ts, ws, s
                        beyond = ts * _PAST_ROUNDING - floor
            time[b], workspace[b], order[b] = best_time, best_workspace, best_order
        return tried

    def _touched(self, start: int, changed: set[int], gone: set[int]) -> list[list[int] | None]:
        """The entries whose options changed with the candidates, before any entry does: [b]:
        the splits s at b whose candidate changed (or went) and that may now win or were its
        own (None: none). The undivided run of b changed where b is in `changed` or `gone`."""
        time, order, parts = self._time, self._order, self._parts
        touched: list[list[int] | None] = [None] * (self.batch + 1)
        for b in changed | gone:
            touched[b] = []
        for s in changed:
            ts = parts[s][0]
            for b in range(max(2 * s, start), self.batch + 1):
                if ts + time[b - s] <= time[b] or order[b] == s:
                    if (found := touched[b]) is None:
                        touched[b] = [s]
                    else:
                        found.append(s)
        if gone:
            for b in range(start, self.batch + 1):
                if order[b] in gone:
                    if (found := touched[b]) is None:
                        touched[b] = [order[b]]
                    else:
                        found.append(order[b])
        return touched

    def _least_of(
        self, b: int, splits: list[int], best: tuple[float, int, int], single: bool
    ) -> tuple[float, int, int]:
        """The least of `best` and the options at b that changed: `splits`, and the run of b
        undivided if `single`."""
        time, workspace, parts = self._time, self._workspace, self._parts
        if single:
            best = min(best, (*parts[b], 0))
        for s in splits:
            ts, ws = parts[s]
            ts += time[b - s]
            if ts <= best[0]:
                rest = workspace[b - s]
                option = (ts, ws if ws > rest else rest, s)
                if option < best:
                    best = option
        return best

    def _all_options(
        self, b: int, options: list[tuple[int, float, int]], fewer: int
    ) -> tuple[float, int, int]:
        """The least option at b, (time, workspace, order), of the run of b undivided and the
        first `fewer` of `options`: the splits of at most b / 2."""
        time, workspace = self._time, self._workspace
        part = self._parts.get(b)
        best_time, best_workspace, best_order = (
            (math.inf, 0, _NO_WAY) if part is None else (*part, 0)
        )
        # Ascending sizes, so a split ties the best so far only on a larger order: it wins on
        # time, then on workspace, as (time, workspace, order) compares.
        for s, ts, ws in options[:fewer]:
            ts += time[b - s]
            if ts <= best_time:
                rest = workspace[b - s]
                if rest > ws:
                    ws = rest
                if ts < best_time or ws < best_workspace:
                    best_time, best_workspace, best_order = ts, ws, s
        return best_time, best_workspace, best_order

    def counts(self) -> dict[int, int]:
        """How many parts of each size the fastest way to make the batch runs."""
        counts: dict[int, int] = {}
        b = self.batch
        while b:
            part = self._order[b] or b
            counts[part] = counts.get(part, 0) + 1
            b -= part
        return counts
