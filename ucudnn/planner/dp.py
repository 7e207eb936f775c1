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
  It costs O(N * sizes), so it is refused beyond MAX_DP_STEPS with an error saying why; the
  desirable sets solve it again at each workspace size, so a `StepBudget` bounds all their solves
  together (those of a plan, of an explanation, or of a tune over many batches). Among
  the fastest splits with a given first part, the one whose remainder needs the least workspace
  needs the least in all, as the maximum is monotone: the workspace tie-break stays exact.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

from ucudnn.core.checks import integer
from ucudnn.core.problem import MAX_DIM
from ucudnn.planner.config import byte_count
from ucudnn.planner.policies import Policy, sizes_for_policy
from ucudnn.planner.tables import Candidate, KernelTable, Schedule

# The general program's inner loop runs at most this often per budget (a few seconds).
MAX_DP_STEPS = 20_000_000


class StepBudget:
    """The steps of the general program left to one computation: one solve, or every solve
    behind some desirable sets, which solve again at each workspace size (thousands of them
    under policy "all") and would otherwise run for hours."""

    def __init__(self, steps: int = MAX_DP_STEPS) -> None:
        self.limit = self.left = steps

    def spend(self, batch: int, small_sizes: list[int], first: int) -> None:
        """Charge a solve of T(first), ..., T(batch) with `small_sizes` (those <= batch / 2),
        or refuse it, before it runs."""
        # The inner loop runs over the sizes s <= b / 2: size s from b = max(first, 2s) on.
        steps = sum(batch + 1 - max(first, 2 * s) for s in small_sizes)
        if steps <= self.left:
            self.left -= steps
            return
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


def eligible_candidates(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> list[Candidate]:
    """The candidates a schedule may use: at a policy size, within the limit (None: any)."""
    if limit_bytes is not None:
        limit_bytes = byte_count(limit_bytes, "limit_bytes")
    allowed = sizes_for_policy(policy, table.batch)
    return [
        c
        for b in table.micro_batches()
        if b in allowed
        for c in table.candidates[b]
        if (limit_bytes is None or c.workspace_bytes <= limit_bytes)
        and (c.deterministic or not deterministic_only)
    ]


class _Way(NamedTuple):
    """A way to make some number of samples: its time and workspace, its number of parts, and
    how many parts of each size it runs."""

    time_ms: float
    workspace_bytes: int
    parts: int
    counts: dict[int, int]


def _is_divisor_chain(sizes: list[int]) -> bool:
    return all(larger % smaller == 0 for smaller, larger in itertools.pairwise(sizes))


class SplitDP:
    """The fastest schedule of `batch` samples from the candidates offered so far; the general
    program's solves are charged to `budget` (by default, one of its own)."""

    def __init__(self, batch: int, budget: StepBudget | None = None) -> None:
        self.batch = integer(batch, "batch", minimum=1, maximum=MAX_DIM)
        self._budget = StepBudget() if budget is None else budget
        self._best: dict[int, Candidate] = {}
        self._general: _GeneralDP | None = None  # made on first need: it holds O(batch) lists

    def offer(self, c: Candidate) -> bool:
        """Make `c` available; True when it becomes the best at its micro-batch."""
        current = self._best.get(c.micro_batch)
        # Most offers are slower: their time alone says so (tables of engines offer hundreds).
        if current is not None and (
            current.time_ms < c.time_ms or current.speed_key() <= c.speed_key()
        ):
            return False
        self._best[c.micro_batch] = c
        if self._general is not None:
            self._general.changed(c.micro_batch)
        return True

    def solve(self) -> Schedule | None:
        """The fastest schedule of the whole batch from what was offered, or None."""
        way = self.fastest()
        return None if way is None else self.schedule(way)

    def fastest(self) -> _Way | None:
        """The fastest way to make the batch, as numbers: cheaper than a Schedule when the
        caller may not keep it. Turn it into one with `schedule` before offering more."""
        small = sorted(s for s in self._best if 2 * s <= self.batch)
        if _is_divisor_chain(small):
            return self._solve_chain(small)
        if self._general is None:
            self._general = _GeneralDP(self.batch)
        self._budget.spend(self.batch, small, self._general.stale_from)
        return self._general.solve(self._best)

    def _solve_chain(self, chain: list[int]) -> _Way | None:
        # blocks[j]: (time, workspace, parts) of the best way to make exactly chain[j], and
        # whether that is its own candidate (else chain[j] // chain[j - 1] of blocks[j - 1]).
        blocks: list[tuple[float, int, int, bool]] = []
        for j, size in enumerate(chain):
            c = self._best[size]
            block = (c.time_ms, c.workspace_bytes, 1, True)
            if j:
                factor = size // chain[j - 1]
                time, workspace, parts, _ = blocks[-1]
                composite = (time * factor, workspace, parts * factor, False)
                if composite < block:  # on equal time, workspace and parts the last field decides
                    block = composite
            blocks.append(block)

        def fill(n: int) -> tuple[float, int, int, list[tuple[int, int]]] | None:
            """(time, workspace, parts, [(block, count)]) of the best way to make n."""
            time, workspace, parts, uses = 0.0, 0, 0, []
            for j in range(len(chain) - 1, -1, -1):
                count, n = divmod(n, chain[j])
                if count:
                    block_time, block_workspace, block_parts, _ = blocks[j]
                    time += count * block_time
                    workspace = max(workspace, block_workspace)
                    parts += count * block_parts
                    uses.append((j, count))
            return None if n else (time, workspace, parts, uses)

        # (time, workspace, parts, the part above N/2 or 0, uses of the chain for the rest);
        # the undivided run first, so that it wins every tie, then each part above N/2 once.
        ways = []
        for size in sorted((s for s in self._best if 2 * s > self.batch), reverse=True):
            if (rest := fill(self.batch - size)) is not None:
                c, (time, workspace, parts, uses) = self._best[size], rest
                ways.append(
                    (c.time_ms + time, max(c.workspace_bytes, workspace), parts + 1, size, uses)
                )
        if (whole := fill(self.batch)) is not None:
            ways.append((*whole[:3], 0, whole[3]))
        if not ways:
            return None
        time, workspace, parts, size, uses = min(ways, key=lambda way: way[:3])
        counts = {size: 1} if size else {}
        for j, count in uses:
            while not blocks[j][3]:  # a composite block: count its smaller blocks
                count *= chain[j] // chain[j - 1]
                j -= 1
            counts[chain[j]] = counts.get(chain[j], 0) + count
        return _Way(time, workspace, parts, counts)

    def schedule(self, way: _Way) -> Schedule:
        # Largest micro-batches first: a canonical order for equal schedules.
        sizes = sorted(way.counts, reverse=True)
        return Schedule(tuple(self._best[s] for s in sizes for _ in range(way.counts[s])))


class _GeneralDP:
    """T(b) over b = 1..batch for sizes that are not a divisor chain, recomputed lazily from the
    smallest micro-batch whose best candidate changed (T(b) depends only on sizes <= b)."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self._time = [0.0] + [math.inf] * batch
        self._workspace = [0] * (batch + 1)  # of the schedule behind _time[b]
        self._split = [0] * (batch + 1)  # b: run b undivided; s < b: run s, then T(b - s)
        self.stale_from = 1

    def changed(self, micro_batch: int) -> None:
        self.stale_from = min(self.stale_from, micro_batch)

    def solve(self, best: dict[int, Candidate]) -> _Way | None:
        time, workspace, split = self._time, self._workspace, self._split
        parts = [(s, best[s].time_ms, best[s].workspace_bytes) for s in sorted(best)]
        for b in range(self.stale_from, self.batch + 1):
            single = best.get(b)
            t, w, choice = (
                (single.time_ms, single.workspace_bytes, b) if single else (math.inf, 0, 0)
            )
            half = b >> 1
            for s, ts, ws in parts:  # the hot loop of planning: keep it plain
                if s > half:
                    break
                ts += time[b - s]
                if ts < t:
                    rest = workspace[b - s]
                    t, w, choice = ts, (ws if ws > rest else rest), s
                elif ts == t and choice:  # equal time: keep the smaller workspace
                    rest = workspace[b - s]
                    if ws < w and rest < w:
                        w, choice = (ws if ws > rest else rest), s
            time[b], workspace[b], split[b] = t, w, choice
        self.stale_from = self.batch + 1
        if math.isinf(time[self.batch]):
            return None
        counts: dict[int, int] = {}
        b = self.batch
        while b:
            counts[split[b]] = counts.get(split[b], 0) + 1
            b -= split[b]
        return _Way(time[self.batch], workspace[self.batch], sum(counts.values()), counts)
