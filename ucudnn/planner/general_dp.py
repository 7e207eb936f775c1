"""The micro-batch program for sizes that are no divisor chain (`GeneralDP`): T(b) over
b = 1..N, kept between solves and updated where the candidates changed; the budget of its steps
(`StepBudget`), and the answer both of the programs give (`Way`). docs/design/micro-batch-dp.md
says how it stays exact."""

from __future__ import annotations

import bisect
import math
from typing import NamedTuple

from ucudnn.planner.candidate import ROW_TIME, ROW_WORKSPACE, Row

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


# The order of an entry with no way at all: below every option, so that none replaces it
# unless it has a time (an option of infinite time is no way either).
_NO_WAY = -1


class Way(NamedTuple):
    """A way to make some number of samples: its time and workspace, its number of parts, and
    how many parts of each size it runs (None: the general program counts them, when asked)."""

    time_ms: float
    workspace_bytes: int
    parts: int
    counts: dict[int, int] | None


# A candidate or a split is left out only when its bound exceeds the time to beat by more than
# this fraction: the bound and the program add the same times in other orders, so their sums
# may differ by rounding (at most MAX_PARTS * 2**-53 of a total, about 1e-11); keeping a few
# more is exact.
ROUNDING = 1e-9
_PAST_ROUNDING = 1 + ROUNDING


class GeneralDP:
    """T(b) over b = 1..batch for sizes that are not a divisor chain, kept between solves and
    updated where the candidates looked at changed.

    Each entry is the least of its options by (time, workspace, order), order 0 for the run
    of b undivided and s for a split of s (at most b / 2) then T(b - s): the tie-breaks of
    `ucudnn.planner.dp`. An option changes only when its candidate does or T(b - s) does, so
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

    def solve(self, changes: dict[int, Row | None], budget: StepBudget) -> Way | None:
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
        return Way(self._time[self.batch], self._workspace[self.batch], 0, None)

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
