"""WD finds the desirable sets only as far as its optimum needs: the same optimum as from the
whole sets, with fronts left unexplored beyond what the budget lets a kernel use."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from tests.planner_oracles import best_wd, clip_policy, kernel_tables, policies
from ucudnn.planner import partial_fronts
from ucudnn.planner.dp import SplitDP
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.general_dp import Way
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
    st.booleans(),
    st.integers(0, 200),
    st.sampled_from([1, 8, 256]),
)
def test_wd_is_optimal_over_the_whole_desirable_sets(
    drawn: list[KernelTable],
    policy: str | list[int],
    deterministic: bool,
    budget: int,
    alignment: int,
) -> None:
    tables = TimingTables(
        KernelTable(f"l{i}", t.kernel, t.batch, list(t)) for i, t in enumerate(drawn)
    )
    policy = clip_policy(policy, min(t.batch for t in drawn))
    whole = {k: desirable_set(t, None, policy, deterministic) for k, t in tables.items()}
    best = best_wd(whole, budget, alignment) if all(whole.values()) else None
    if best is None:
        with pytest.raises(InfeasibleError):
            make_plan_wd(tables, budget, policy, deterministic, alignment=alignment)
        return
    plan = make_plan_wd(tables, budget, policy, deterministic, alignment=alignment)
    assert plan.time_ms == best  # times are multiples of 1/8: the sums are exact
    assert all(k.schedule.deterministic for k in plan.kernels) or not deterministic


def test_a_gap_whose_stand_in_is_picked_is_cut_until_the_optimum_is_real() -> None:
    # Within 1000 B, "a" runs in 10 ms in none, 2 ms in 500 B or 1 ms in 900 B, and "b" in
    # 5 ms in none or 1 ms in 200 B. Known at first are a's ends, 0 and 900 B: its stand-in
    # for the gap, 1 ms in 500 B beside b's 200 B, beats every real plan (6 ms at best), so
    # the gap is cut, and a's 2 ms in 500 B found. (Batch 6 under policy "all": no divisor
    # chain, so no walk.)
    def table(layer: str, options: list[tuple[float, int]]) -> KernelTable:
        return KernelTable(layer, "forward", 6, [
            Candidate(6, algo, time_ms, workspace)
            for algo, (time_ms, workspace) in enumerate(options)
        ])  # fmt: skip

    tables = TimingTables([
        table("a", [(10.0, 0), (2.0, 500), (1.0, 900)]), table("b", [(5.0, 0), (1.0, 200)])
    ])  # fmt: skip
    plan = make_plan_wd(tables, 1000, "all", alignment=1)
    assert [k.workspace_bytes for k in plan.kernels] == [500, 200] and plan.time_ms == 3.0


class CountedDP(SplitDP):
    solves = 0

    def fastest(self, below: float = math.inf) -> Way | None:
        CountedDP.solves += 1
        return super().fastest(below)


def test_fronts_are_found_only_as_far_as_the_optimum_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    graph = builtin_network("alexnet", batch=64)
    tables = model_tables(((n, graph.problem(n), graph.kernels(n)) for n in graph), "all")
    budget = 64 * MiB
    monkeypatch.setattr(partial_fronts, "SplitDP", CountedDP)
    sets = DesirableSets("all")
    plan = make_plan_wd(tables, budget, "all", sets=sets)
    whole = {k: desirable_set(t, budget, "all") for k, t in tables.items()}
    assert math.isclose(plan.time_ms, plan_wd(whole, budget).time_ms, rel_tol=1e-12)
    assert not sets._fronts  # no front was walked
    # A walk solves at each workspace size of the candidates within the budget.
    sizes = {(t.content_key(), c.workspace_bytes) for _, t in tables.items() for c in t}
    walked = sum(1 for _, w in sizes if w <= budget)
    assert 0 < CountedDP.solves < walked / 4
