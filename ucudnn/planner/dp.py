"""The micro-batch dynamic program shared by WR and the desirable sets (`SplitDP`).

A schedule of a batch N is a multiset of micro-batch sizes adding up to N, each part run with the
fastest candidate offered at its size. Its time is the sum of the parts' times; equal times go
to the smaller workspace (the largest part's), so the answer is never dominated; remaining ties
go to the undivided run, then to a fixed choice (fewer parts, in the closed form), so equal
inputs always give equal schedules. The policy keeps parts at least batch / MAX_PARTS samples
(see `ucudnn.planner.policies`), so a schedule never makes more than MAX_PARTS cuDNN calls.

Two exact solvers find it, chosen by the sizes offered alone: a closed form when the sizes of
at most N/2 make a divisor chain (each divides the next), and the general program
(`ucudnn.planner.general_dp`) otherwise. docs/design/micro-batch-dp.md says why each is exact.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence

from ucudnn.core.checks import integer
from ucudnn.core.problem import MAX_DIM
from ucudnn.planner.candidate import (
    ROW_SIZE,
    ROW_TIME,
    ROW_WORKSPACE,
    Candidate,
    Row,
    row_speed_key,
)
from ucudnn.planner.general_dp import ROUNDING, GeneralDP, StepBudget, Way
from ucudnn.planner.policies import Policy, allowed_sizes
from ucudnn.planner.schedule import Schedule


def _is_divisor_chain(sizes: Sequence[int]) -> bool:
    return all(larger % smaller == 0 for smaller, larger in itertools.pairwise(sizes))


def solved_in_closed_form(policy: Policy, batch: int) -> bool:
    """Whether every solve for `batch` under `policy` takes the closed form, whatever the
    candidates: the sizes of at most half the batch make a divisor chain."""
    sizes = allowed_sizes(policy, batch)
    return _is_divisor_chain(sizes[: bisect.bisect_right(sizes, batch // 2)])


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

    Leaving the others out changes no schedule it finds (docs/design/micro-batch-dp.md says
    why).
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
        self._general: GeneralDP | None = None  # made on first need: it holds O(batch) lists
        self._used: dict[int, Row] = {}  # the candidates the general program looks at
        self._look_again = True  # whether the rate or F moved since _used was chosen
        self._changes: dict[int, Row | None] = {}  # to _used since the last solve
        self._way: Way | None = None  # the general program's last answer

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
        rate, batch, limit = self._rate, self.batch, below * (1 + ROUNDING)
        return any(row[ROW_TIME] + rate * (batch - row[ROW_SIZE]) <= limit for row in rows)

    def solve(self) -> Schedule | None:
        """The fastest schedule of the whole batch from what was offered, or None."""
        way = self.fastest()
        return None if way is None else self.schedule(way)

    def fastest(self, below: float = math.inf) -> Way | None:
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
            self._general = GeneralDP(self.batch)
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
        rate, batch, below = self._rate, self.batch, self._below * (1 + ROUNDING)
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

    def _solve_chain(self, chain: list[int]) -> Way | None:
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
        return Way(*best_way, counts)

    def schedule(self, way: Way) -> Schedule:
        # Largest micro-batches first: a canonical order for equal schedules.
        counts = way.counts
        if counts is None:
            assert self._general is not None  # it made the way
            counts = self._general.counts()
        runs = [(counts[s], self._candidate(self._best[s])) for s in sorted(counts, reverse=True)]
        return Schedule.of_runs(runs)
