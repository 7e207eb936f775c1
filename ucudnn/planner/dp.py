"""The micro-batch dynamic program shared by WR and the desirable sets.

For b = 1..N, T(b) = min(best single candidate at b, min over s <= b/2 of best(s) + T(b - s)),
where best(s) is the fastest candidate offered at micro-batch s. Every split of b has a part of
at most b/2, so the cut loses nothing. Equal times go to the smaller workspace (the largest
part's), so the answer is never dominated; remaining ties go to the undivided run, then to the
split whose first part is smallest, so equal inputs always give equal schedules. The
workspace tie-break stays exact: among the fastest splits with a given first part, the one
whose remainder needs the least workspace needs the least in all, as the maximum is monotone.
"""

from __future__ import annotations

import bisect
import math

from ucudnn.planner.policies import Policy, sizes_for_policy
from ucudnn.planner.tables import Candidate, KernelTable, Schedule


def eligible_candidates(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> list[Candidate]:
    """The candidates a schedule may use: at a policy size, within the limit (None: any)."""
    if limit_bytes is not None and limit_bytes < 0:
        raise ValueError(f"workspace limit must be >= 0 bytes, got {limit_bytes}")
    return [
        c
        for b in sizes_for_policy(policy, table.batch)
        for c in table.candidates.get(b, ())
        if (limit_bytes is None or c.workspace_bytes <= limit_bytes)
        and (c.deterministic or not deterministic_only)
    ]


class SplitDP:
    """T(b) over b = 1..batch, recomputed lazily from the smallest micro-batch whose best
    candidate changed (T(b) depends only on sizes <= b)."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self._best: dict[int, Candidate] = {}
        self._sizes: list[int] = []  # sizes below batch with a best candidate, ascending
        self._time = [0.0] + [math.inf] * batch
        self._workspace = [0] * (batch + 1)  # of the schedule behind _time[b]
        self._split = [0] * (batch + 1)  # b: run b undivided; s < b: run s, then T(b - s)
        self._stale_from = batch + 1

    def offer(self, c: Candidate) -> bool:
        """Make `c` available; True when it becomes the best at its micro-batch."""
        current = self._best.get(c.micro_batch)
        if current is not None and current.speed_key() <= c.speed_key():
            return False
        if current is None and c.micro_batch < self.batch:
            bisect.insort(self._sizes, c.micro_batch)
        self._best[c.micro_batch] = c
        self._stale_from = min(self._stale_from, c.micro_batch)
        return True

    def solve(self) -> Schedule | None:
        """The fastest schedule of the whole batch from what was offered, or None."""
        time, workspace, split, best = self._time, self._workspace, self._split, self._best
        parts = [(s, best[s].time_ms, best[s].workspace_bytes) for s in self._sizes]
        for b in range(self._stale_from, self.batch + 1):
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
        self._stale_from = self.batch + 1
        if math.isinf(time[self.batch]):
            return None
        chosen, b = [], self.batch
        while b:
            chosen.append(best[split[b]])
            b -= split[b]
        # Largest micro-batches first: a canonical order for equal schedules.
        chosen.sort(key=lambda c: -c.micro_batch)
        return Schedule(tuple(chosen))
