"""WD finds the desirable sets only as far as its optimum needs: the same optimum as from the
whole sets, with fronts left unexplored beyond what the budget lets a kernel use."""

from __future__ import annotations

import math

from hypothesis import given, settings, strategies as st

from tests.planner_oracles import best_wd, clip_policy, kernel_tables, policies
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import DesirableSets, desirable_set
from ucudnn.planner.plan import make_plan_wd
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.planner.wd import plan_wd

MiB = 1 << 20


@settings(max_examples=150, deadline=None)
@given(
    st.lists(kernel_tables(max_batch=8), min_size=1, max_size=4),
    policies,
    st.integers(0, 200),
    st.sampled_from([1, 8, 256]),
)
def test_wd_is_optimal_over_the_whole_desirable_sets(
    drawn: list[KernelTable], policy: str | list[int], budget: int, alignment: int
) -> None:
    tables = TimingTables(
        KernelTable(f"l{i}", t.kernel, t.batch, list(t)) for i, t in enumerate(drawn)
    )
    policy = clip_policy(policy, min(t.batch for t in drawn))
    whole = {k: desirable_set(t, None, policy) for k, t in tables.items()}
    best = best_wd(whole, budget, alignment) if all(whole.values()) else None
    if best is None:
        return  # infeasible: the errors are tested with the solver
    plan = make_plan_wd(tables, budget, policy, alignment=alignment)
    assert plan.time_ms == best  # times are multiples of 1/8: the sums are exact


def test_a_stand_in_the_solver_picks_makes_its_front_reach_further() -> None:
    # Within 1000 B, "a" runs in 1 ms at 600 B: beyond its first reach, an even share (500 B)
    # of the budget, so only the stand-in for what lies beyond tells the solver it is there.
    tables = TimingTables([
        KernelTable("a", "forward", 1, [Candidate(1, 0, 10.0, 0), Candidate(1, 1, 1.0, 600)]),
        KernelTable("b", "forward", 1, [Candidate(1, 0, 5.0, 0)]),
    ])  # fmt: skip
    plan = make_plan_wd(tables, 1000, "all", alignment=1)
    assert [k.workspace_bytes for k in plan.kernels] == [600, 0] and plan.time_ms == 6.0


def test_fronts_are_found_only_as_far_as_the_optimum_needs() -> None:
    graph = builtin_network("alexnet", batch=64)
    tables = model_tables(((n, graph.problem(n), graph.kernels(n)) for n in graph), "all")
    budget = 64 * MiB
    sets = DesirableSets("all")
    plan = make_plan_wd(tables, budget, "all", sets=sets)
    whole = {k: desirable_set(t, budget, "all") for k, t in tables.items()}
    assert math.isclose(plan.time_ms, plan_wd(whole, budget).time_ms, rel_tol=1e-12)
    found = {k: sets._fronts[t.content_key()] for k, t in tables.items()}
    assert all(f.known[-1].workspace_bytes <= budget for f in found.values())
    assert all(f.known == whole[k][: len(f.known)] for k, f in found.items())
    # Some fronts were not looked into as far as the budget: conv3's forward front has ten
    # points within it.
    assert len(found["conv3", "forward"].known) < len(whole["conv3", "forward"]) == 10
