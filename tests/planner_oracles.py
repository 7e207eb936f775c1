"""Brute-force oracles and hypothesis strategies shared by the planner tests.

Times are multiples of 1/8 ms so that sums are exact in floating point, whatever the order:
the planner's answers can then be compared with the oracles' for equality.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from ucudnn.planner.policies import sizes_for_policy
from ucudnn.planner.tables import Candidate, KernelTable, Schedule

KERNELS = ("forward", "backward_data", "backward_filter")


@st.composite
def candidates_at(draw: st.DrawFn, micro_batch: int) -> list[Candidate]:
    algos = draw(st.lists(st.integers(0, 7), max_size=3, unique=True))
    return [
        Candidate(
            micro_batch=micro_batch,
            algo=algo,
            time_ms=draw(st.integers(0, 400)) / 8,
            workspace_bytes=draw(st.integers(0, 64)),
            deterministic=draw(st.booleans()),
        )
        for algo in algos
    ]


@st.composite
def kernel_tables(draw: st.DrawFn, max_batch: int = 10, layer: str = "conv") -> KernelTable:
    """Random tables with rows at some sizes between 1 and the batch (maybe not all)."""
    batch = draw(st.integers(1, max_batch))
    table = KernelTable(layer, draw(st.sampled_from(KERNELS)), batch)
    for b in range(1, batch + 1):
        for c in draw(candidates_at(b)):
            table.add(c)
    return table


policies = st.one_of(
    st.sampled_from(["undivided", "powerOfTwo", "all"]),
    st.lists(st.integers(1, 10), min_size=1, max_size=4),
)


def clip_policy(policy: str | list[int], batch: int) -> str | list[int]:
    return policy if isinstance(policy, str) else [min(s, batch) for s in policy]


def all_schedules(
    table: KernelTable, policy: str | list[int], deterministic_only: bool = False
) -> list[Schedule]:
    """Every multiset of policy-size candidates whose micro-batches add up to the batch."""
    items = [
        c
        for b in sizes_for_policy(policy, table.batch)
        for c in table.candidates.get(b, ())
        if c.deterministic or not deterministic_only
    ]
    found: list[Schedule] = []

    def extend(start: int, left: int, parts: list[Candidate]) -> None:
        if left == 0:
            found.append(Schedule(tuple(parts)))
            return
        for i in range(start, len(items)):
            if items[i].micro_batch <= left:
                extend(i, left - items[i].micro_batch, [*parts, items[i]])

    extend(0, table.batch, [])
    return found


def front_points(schedules: list[Schedule], limit: int | None = None) -> list[tuple[int, float]]:
    """The non-dominated (workspace, time) points, by the definition, workspace ascending."""
    fastest: dict[int, float] = {}
    for s in schedules:
        if limit is None or s.workspace_bytes <= limit:
            fastest[s.workspace_bytes] = min(s.time_ms, fastest.get(s.workspace_bytes, math.inf))
    points = set(fastest.items())
    return sorted(
        p for p in points if not any(q != p and q[0] <= p[0] and q[1] <= p[1] for q in points)
    )


def repeated_kernels(lists: list[tuple[list, int]]) -> dict:
    """WD's sets of kernels "l{i}.{j}": for each (schedules, n) of `lists`, n kernels that
    share those schedules."""
    return {(f"l{i}.{j}", "forward"): s for i, (s, n) in enumerate(lists) for j in range(n)}


def best_wd(sets: dict, budget: int, alignment: int) -> float | None:
    """Minimum total time over every combination whose aligned workspaces fit, or None. Kernel
    by kernel, the least time of each total of aligned units used so far: every combination
    is one path, and of two with the same total only the faster can lead to the minimum. (A
    loop over the combinations themselves takes hours for 16 kernels of 4 options.)"""
    least = {0: 0.0}  # aligned bytes used by the kernels so far: their least time
    for schedules in sets.values():
        after: dict[int, float] = {}
        for used, time in least.items():
            for s in schedules:
                size = used + -(-s.workspace_bytes // alignment) * alignment
                if size <= budget and time + s.time_ms < after.get(size, math.inf):
                    after[size] = time + s.time_ms
        least = after
    return min(least.values(), default=None)


def reference_schedule(
    candidates: list[Candidate], batch: int, limit: int | None = None
) -> tuple[float, Schedule] | None:
    """The general program's schedule, from scratch and without leaving anything out: each
    b's least option by (time, workspace, order), order 0 for the best candidate at b run
    undivided and s for that at s (at most b / 2) followed by b - s. With its time as the
    program adds it up, which may differ from the schedule's own sum in the last digit."""
    best: dict[int, Candidate] = {}
    for c in candidates:
        if (limit is None or c.workspace_bytes <= limit) and (
            c.micro_batch not in best or c.speed_key() < best[c.micro_batch].speed_key()
        ):
            best[c.micro_batch] = c
    entries: list[tuple[float, int, int]] = [(0.0, 0, 0)]
    for b in range(1, batch + 1):
        least = (best[b].time_ms, best[b].workspace_bytes, 0) if b in best else (math.inf, 0, -1)
        for s in sorted(best):
            if 2 * s <= b and not math.isinf(entries[b - s][0]):
                rest = entries[b - s]
                option = (best[s].time_ms + rest[0], max(best[s].workspace_bytes, rest[1]), s)
                least = min(least, option)
        entries.append(least)
    if math.isinf(entries[batch][0]):
        return None
    parts, b = [], batch
    while b:
        part = entries[b][2] or b
        parts.append(best[part])
        b -= part
    return entries[batch][0], Schedule(
        tuple(sorted(parts, key=lambda c: c.micro_batch, reverse=True))
    )


def reference_front(candidates: list[Candidate], batch: int) -> list[Schedule]:
    """The desirable set by its definition: at each candidate workspace, ascending, the
    reference schedule within it, kept when strictly faster than the last one kept (by the
    program's sums, and by its own: rounding makes no point)."""
    front: list[Schedule] = []
    last = math.inf
    for limit in sorted({c.workspace_bytes for c in candidates}):
        found = reference_schedule(candidates, batch, limit)
        if found is not None and found[0] < last:
            last = found[0]
            if not front or found[1].time_ms < front[-1].time_ms:
                front.append(found[1])
    return front
