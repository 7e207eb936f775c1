"""Pareto fronts of candidates and desirable sets of schedules, against brute force."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from tests.planner_oracles import all_schedules, clip_policy, front_points, kernel_tables, policies
from ucudnn.planner.pareto import DesirableSets, desirable_set, pareto_front, smallest_workspace
from ucudnn.planner.plan import make_plan_wd
from ucudnn.planner.policies import sizes_for_policy
from ucudnn.planner.tables import Candidate, KernelTable, Schedule, TimingTables
from ucudnn.planner.wr import plan_wr

MiB = 1 << 20


def test_front_keeps_the_first_of_equal_points_and_breaks_ties_towards_less() -> None:
    a, b = Candidate(1, 0, 2.0, 10), Candidate(1, 1, 2.0, 10)
    slower_same_size = Candidate(1, 2, 3.0, 10)
    same_time_bigger = Candidate(1, 3, 2.0, 20)
    faster_bigger = Candidate(1, 4, 1.0, 20)
    front = pareto_front([slower_same_size, a, b, same_time_bigger, faster_bigger])
    assert front == [a, faster_bigger]
    assert pareto_front([b, a]) == [b]
    assert pareto_front([]) == []


def test_front_matches_the_definition_on_10000_random_points() -> None:
    # µ-cuDNN's desirableSet test: a point is in the front iff no member is strictly faster
    # with at most its memory (and equal points appear once).
    rng = random.Random(0)
    points = [(rng.randrange(1000), rng.randrange(1000)) for _ in range(10_000)]
    front = pareto_front(points, key=lambda p: p)
    members = set(front)
    assert len(members) == len(front)
    assert [p for p in front] == sorted(front)
    for p in set(points):
        dominated = any(q[0] <= p[0] and q[1] < p[1] for q in front)
        shadowed = any(q[0] < p[0] and q[1] <= p[1] for q in front)
        assert (p in members) == (not dominated and not shadowed)


def test_original_ucudnn_dp_regression() -> None:
    """test/dp.cpp of µ-cuDNN: N=256 powerOfTwo, fast 0.1b+0.01 ms with b MiB, slow
    10b+0.1 ms with b bytes, a row kept only if its memory is below 64 MiB."""
    table = KernelTable("conv", "forward", 256)
    for i in range(9):
        b = 1 << i
        for algo, time_ms, memory in ((1, 0.1 * b + 0.01, b * MiB), (0, 10 * b + 0.1, b)):
            if memory < 64 * MiB:
                table.add(Candidate(b, algo, time_ms, memory))
    front = desirable_set(table, None)
    assert len(front) == 15
    fastest, slowest = front[-1], front[0]
    assert fastest.micro_batches_text() == "8x32" and fastest.algos_text() == "1"
    assert round(fastest.time_ms, 9) == 25.68 and fastest.workspace_bytes == 32 * MiB
    assert slowest.micro_batches_text() == "256x1" and slowest.algos_text() == "0"
    assert round(slowest.time_ms, 9) == 2585.6 and slowest.workspace_bytes == 1
    # Every power of two from 1 B to 256 B with the slow algorithm, then from 1 to 32 MiB.
    assert [s.workspace_bytes for s in front] == [1 << i for i in range(9)] + [
        (1 << i) * MiB for i in range(6)
    ]


@settings(max_examples=150, deadline=None)
@given(kernel_tables(), policies, st.one_of(st.none(), st.integers(0, 64)), st.booleans())
def test_desirable_set_is_the_exact_front_of_all_schedules(
    table: KernelTable, policy, limit: int | None, deterministic: bool
) -> None:
    policy = clip_policy(policy, table.batch)
    front = desirable_set(table, limit, policy, deterministic)
    schedules = all_schedules(table, policy, deterministic)
    oracle = front_points(schedules, limit)
    assert [(s.workspace_bytes, s.time_ms) for s in front] == oracle
    allowed = set(sizes_for_policy(policy, table.batch))
    for s in front:
        assert s.batch == table.batch
        assert all(p.micro_batch in allowed for p in s.parts)
        assert s.deterministic or not deterministic
    if front:  # combining preserves the optimum: WR's answer is the set's fastest member
        wr = plan_wr(table, limit if limit is not None else 2**62, policy, deterministic)
        assert wr == front[-1]
    unlimited = front_points(schedules)
    smallest = unlimited[0][0] if unlimited else None
    assert smallest_workspace(table, policy, deterministic) == smallest


@given(kernel_tables(), policies, st.integers(0, 64), st.booleans())
def test_a_kept_set_within_a_limit_is_the_desirable_set_at_that_limit(
    table: KernelTable, policy, limit: int, deterministic: bool
) -> None:
    policy = clip_policy(policy, table.batch)
    sets = DesirableSets(policy, deterministic)
    assert sets.within(table, limit) == desirable_set(table, limit, policy, deterministic)
    assert sets.front(table) == desirable_set(table, None, policy, deterministic)


def test_kept_sets_are_computed_once_per_table_content() -> None:
    sets = DesirableSets()
    a = KernelTable("a", "forward", 4, [Candidate(4, 0, 1.0, 0), Candidate(2, 1, 0.2, 64)])
    b = KernelTable("b", "forward", 4, list(a))
    assert sets.front(a) is sets.front(b)  # same rows under another name: one front
    assert sets.within(a, 63) == [Schedule((Candidate(4, 0, 1.0, 0),))]


def test_a_plan_refuses_sets_kept_for_another_policy() -> None:
    table = KernelTable("a", "forward", 4, [Candidate(4, 0, 1.0, 0)])
    with pytest.raises(ValueError, match="made for policy undivided, not for this plan's all"):
        make_plan_wd(TimingTables([table]), 0, "all", sets=DesirableSets("undivided"))


def test_a_set_within_a_limit_is_found_no_further_than_the_limit() -> None:
    table = KernelTable(
        "conv", "forward", 64, [Candidate(b, 0, 1 + b / 100, b) for b in range(1, 65)]
    )
    whole = desirable_set(table, None, "all")
    sets = DesirableSets("all")
    within = sets.within(table, 8)
    assert within == [s for s in whole if s.workspace_bytes <= 8]
    kept = sets._fronts[table.content_key()]  # what was found so far: no size beyond 8
    assert kept.known == within and len(within) < len(whole)
    assert sets.front(table) == whole and sets.smallest(table) == whole[0]


def test_a_sum_smaller_by_rounding_alone_adds_no_point() -> None:
    # 36 x 1 sums to 0.07200000000000001 one part at a time, and to 0.072 as 3 x 10 + 6 x 1
    # once size 10 comes (at 64 bytes): the same schedule, which was a second point.
    table = KernelTable(
        "conv",
        "forward",
        36,
        [Candidate(1, 0, 0.002, 0), Candidate(10, 0, 0.02, 64), Candidate(36, 0, 1.0, 0)],
    )
    front = desirable_set(table, None, [1, 10])
    assert [(s.micro_batches_text(), s.workspace_bytes) for s in front] == [("36x1", 0)]
