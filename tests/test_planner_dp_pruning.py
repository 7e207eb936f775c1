"""The general program leaves out candidates and updates only what changed: its schedules
must stay those of a solve from scratch, tie-breaks included (tests/planner_oracles.py)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from tests.planner_oracles import reference_front, reference_schedule
from ucudnn.planner.eligible import eligible_rows
from ucudnn.planner.general_dp import MAX_DP_STEPS, StepBudget
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import DesirableSets, desirable_set
from ucudnn.planner.plan import make_plan_wd
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, KernelTable
from ucudnn.planner.wr import plan_wr

NO_CHAIN = st.one_of(
    st.just("all"),
    # Lists that are no divisor chains (2 does not divide 3), with sizes left out.
    st.lists(st.integers(1, 24), min_size=2, max_size=6).map(lambda sizes: [2, 3, *sizes]),
)


@st.composite
def tied_tables(draw: st.DrawFn) -> KernelTable:
    """Tables where ties are the rule: few distinct times per sample and few workspaces, so
    that many schedules take exactly as long (times are multiples of 1/8, summed exactly)."""
    batch = draw(st.integers(6, 24))
    # Sizes 2 and 3 from the smallest workspace on: the general program from the start (a
    # divisor chain has a closed form of its own, tested elsewhere).
    table = KernelTable(
        "conv", "forward", batch, [Candidate(2, 7, 1.0, 0), Candidate(3, 7, 1.5, 0)]
    )
    for b in range(1, batch + 1):
        for algo in range(draw(st.integers(0 if b < batch else 1, 3))):  # algo 7 is taken
            per_sample = draw(st.sampled_from([1, 2, 3]))
            extra = draw(st.sampled_from([0, 0, 1, 4]))
            table.add(
                Candidate(
                    b, algo, (per_sample * b + extra) / 8, draw(st.sampled_from([0, 8, 64, 8 * b]))
                )
            )
    return table


def policy_candidates(table: KernelTable, policy: str | list[int]) -> list[Candidate]:
    return list(map(Candidate.of_row, eligible_rows(table, None, policy, deterministic_only=False)))


@settings(max_examples=300, deadline=None)
@given(tied_tables(), NO_CHAIN)
def test_fronts_are_those_of_solves_from_scratch(
    table: KernelTable, policy: str | list[int]
) -> None:
    candidates = policy_candidates(table, policy)
    assert desirable_set(table, None, policy) == reference_front(candidates, table.batch)


@settings(max_examples=300, deadline=None)
@given(tied_tables(), NO_CHAIN, st.sampled_from([0, 8, 64, 1 << 20]))
def test_wr_is_the_solve_from_scratch(
    table: KernelTable, policy: str | list[int], limit: int
) -> None:
    expected = reference_schedule(policy_candidates(table, policy), table.batch, limit)
    if expected is None:
        return  # no schedule: plan_wr's error is tested elsewhere
    assert plan_wr(table, limit, policy) == expected[1]


def test_a_front_whose_sizes_cannot_all_beat_it_takes_a_fraction_of_the_steps() -> None:
    # Each part pays a launch of 1 ms: only sizes near the largest allowed are ever worth it.
    batch = 300
    table = KernelTable(
        "conv", "forward", batch, [Candidate(b, 0, 1 + b / 100, b) for b in range(1, batch + 1)]
    )
    budget = StepBudget()
    assert desirable_set(table, None, "all", budget=budget) == reference_front(list(table), batch)
    # Solving from scratch at workspace w (sizes 1..w) from b = w on, for every w.
    from_scratch = sum(min(w, b // 2) for w in range(1, batch + 1) for b in range(w, batch + 1))
    assert budget.limit - budget.left < from_scratch / 10


def test_hostile_tables_are_still_refused() -> None:
    # Each larger size runs a sample faster: every size may be in the fastest schedule.
    batch = 300
    table = KernelTable(
        "conv",
        "forward",
        batch,
        [Candidate(b, 0, b - b * b / (4 * batch), b) for b in range(1, batch + 1)],
    )
    with pytest.raises(ValueError, match="more than the 1000000 allowed"):
        desirable_set(table, None, "all", budget=StepBudget(1_000_000))


def test_resnet50_plans_under_policy_all_within_the_step_budget() -> None:
    graph = builtin_network("resnet50")  # its default batch, 256
    tables = model_tables(((n, graph.problem(n), graph.kernels(n)) for n in graph), "all")
    sets = DesirableSets("all")
    plan = make_plan_wd(tables, 8 << 20, "all", sets=sets)
    assert plan.workspace_bytes <= 8 << 20 and plan.solver_status == "optimal"
    assert 0 < sets.budget.limit - sets.budget.left < MAX_DP_STEPS


@settings(max_examples=200, deadline=None)
@given(tied_tables(), st.one_of(NO_CHAIN, st.just("powerOfTwo")), st.booleans())
def test_the_least_workspace_is_that_of_the_fronts_first_point(
    table: KernelTable, policy: str | list[int], undivided_smallest: bool
) -> None:
    if not undivided_smallest:  # the undivided run needs more than the others: a front decides
        undivided = table.batch
        table = KernelTable("conv", "forward", undivided, [
            dataclasses.replace(c, workspace_bytes=c.workspace_bytes + (c.micro_batch == undivided))
            for c in table
        ])  # fmt: skip
    first = DesirableSets(policy).smallest(table)
    assert DesirableSets(policy).least_workspace(table) == (first and first.workspace_bytes)


def test_the_least_workspace_of_a_size_that_makes_up_no_schedule_is_not_taken() -> None:
    # 3 samples run in no workspace, but no schedule of 4 uses them: two parts of 2 need least.
    table = KernelTable("conv", "forward", 4, [
        Candidate(4, 0, 1.0, 100), Candidate(3, 0, 1.0, 0), Candidate(2, 0, 1.0, 50),
    ])  # fmt: skip
    assert DesirableSets("all").least_workspace(table) == 50
    assert DesirableSets("undivided").least_workspace(table) == 100
    assert DesirableSets([3]).least_workspace(table) == 100  # a list keeps the undivided run
