"""Brute-force oracles and hypothesis strategies shared by the planner tests.

Times are multiples of 1/8 ms so that sums are exact in floating point, whatever the order:
the planner's answers can then be compared with the oracles' for equality.
"""

from __future__ import annotations

import itertools
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


def best_wd(sets: dict, budget: int, alignment: int) -> float | None:
    """Minimum total time over every combination whose aligned workspaces fit, or None."""
    best = None
    for combo in itertools.product(*sets.values()):
        size = sum(-(-s.workspace_bytes // alignment) * alignment for s in combo)
        if size <= budget:
            time = math.fsum(s.time_ms for s in combo)
            best = time if best is None else min(best, time)
    return best
