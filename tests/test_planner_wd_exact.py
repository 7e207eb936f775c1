"""WD's exact search (the dynamic programme between the bounds and the ILP) against exhaustive
search: small instances with ties, groups of identical kernels, tight and loose budgets."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from tests.planner_oracles import best_wd, repeated_kernels
from ucudnn.planner import wd
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.tables import Candidate, Schedule
from ucudnn.planner.wd import aligned, plan_wd, search
from ucudnn.planner.wd.groups import Group, group_kernels


def single(time_ms: float, workspace: int) -> Schedule:
    return Schedule((Candidate(1, 0, time_ms, workspace),))


# Times on a coarse grid and sizes of a few units, so that totals tie often.
tied_lists = st.lists(
    st.builds(single, st.integers(0, 12).map(float), st.integers(0, 6).map(lambda u: u * 256)),
    min_size=1,
    max_size=4,
)


@pytest.fixture(autouse=True)
def no_ilp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reaching the ILP fails the test: instances this small are the exact search's."""

    def refuse(*args: object) -> tuple[str, str]:
        raise AssertionError("the ILP solver was reached")

    monkeypatch.setattr(wd, "settle_by_ilp", refuse)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(tied_lists, st.integers(1, 4)), min_size=1, max_size=4),
    st.integers(0, 40),
)
def test_the_exact_search_finds_the_optimum(lists, budget_units: int) -> None:
    sets = repeated_kernels(lists)
    budget = budget_units * 256
    best = best_wd(sets, budget, 256)
    if best is None:
        with pytest.raises(InfeasibleError):
            plan_wd(sets, budget)
        return
    solution = plan_wd(sets, budget)
    assert solution.status == "optimal" and solution.solver in ("none", "dp")
    assert solution.time_ms == best  # times on a grid of whole ms add up exactly
    assert all(solution.choices[k] in sets[k] for k in sets)
    assert sum(aligned(s.workspace_bytes, 256) for s in solution.choices.values()) <= budget


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(
            st.builds(single, st.floats(0, 50, allow_nan=False), st.integers(0, 3000)),
            min_size=2,
            max_size=5,
        ),
        min_size=2,
        max_size=5,
    ),
    st.floats(0.0, 1.0),
)
def test_the_exact_search_is_exact_with_real_times(lists, share: float) -> None:
    """Budgets between the smallest and the fastest choices, where trading is needed."""
    sets = {(f"l{i}", "forward"): s for i, s in enumerate(lists)}
    low = sum(min(aligned(s.workspace_bytes, 256) for s in v) for v in lists)
    high = sum(max(aligned(s.workspace_bytes, 256) for s in v) for v in lists)
    budget = low + math.floor(share * (high - low))
    best = best_wd(sets, budget, 256)
    assert best is not None
    solution = plan_wd(sets, budget)
    assert solution.solver in ("none", "dp")
    assert solution.time_ms == pytest.approx(best, rel=1e-12, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(tied_lists, st.integers(1, 3)), min_size=1, max_size=3),
    st.floats(0.0, 0.05),
    st.one_of(st.just(math.inf), st.floats(0.0, 30.0)),
    st.sampled_from([1, 2, search._MOST_PIECES]),
)
def test_what_the_later_groups_add_is_never_overstated(
    lists, multiplier: float, slack: float, pieces: int
) -> None:
    """_RestBound.least(c) <= the least that the groups after each point add to a partial's
    reduced cost, with the unused units priced, over every way they fit in c units; where the
    bound is known only up to a slack, it is infinite only where that least exceeds the slack.
    So it is with fewer pieces kept than the groups have steps."""
    sets = repeated_kernels(lists)
    groups = group_kernels(sets, 256)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search, "_MOST_PIECES", pieces)
        bounds = search._rest_bounds(groups, multiplier, slack)
    assert len(bounds) == len(groups) + 1

    def least_added(rest: list[Group], room: int) -> float:
        """The least reduced cost plus priced unused units over the kernels of `rest`: kernel
        by kernel, the least reduced cost of each total of units (every choice is a path)."""
        least = {0: 0.0}
        for g in [group for group in rest for _ in group.kernels]:
            lowest = min(t + multiplier * u for t, u in zip(g.times, g.units, strict=True))
            after: dict[int, float] = {}
            for used, reduced in least.items():
                for t, u in zip(g.times, g.units, strict=True):
                    more = reduced + t + multiplier * u - lowest
                    after[used + u] = min(more, after.get(used + u, math.inf))
            least = after
        fits = [
            reduced + multiplier * (room - used) for used, reduced in least.items() if used <= room
        ]
        return min(fits, default=math.inf)

    for k, bound in enumerate(bounds):
        for room in range(0, 3 * 6 * 3 + 1):
            least = least_added(groups[k:], room)
            assert bound.least(room) <= least + 1e-9 or least > slack


def test_what_the_later_groups_add_grows_with_the_units_off_the_lp_path() -> None:
    # One kernel: 10 ms in no workspace, or 2 ms in 4 units. At a unit price of 1 ms the LP
    # takes the step (it saves 2 ms a unit): 4 units, priced 6 ms.
    bound = search._rest_bounds(
        group_kernels({("c", "forward"): [single(10, 0), single(2, 1024)]}, 256), 1, math.inf
    )
    assert (bound[0].low, bound[0].high) == (4, 4)
    assert bound[0].least(4) == 0
    assert bound[0].least(0) == 4  # 10 ms where the best priced choice is 6 ms
    assert bound[0].least(10) == 6  # the 6 units left unused, at 1 ms each
    assert bound[1].least(3) == 3  # no groups after the last: only the unused units


def test_what_the_later_groups_add_gives_back_the_cheapest_units_first() -> None:
    # At 1 ms a unit the LP takes both steps, 6 units: kernel a's saves 1.5 ms a unit over 4
    # units, b's 3 ms a unit over 2. Units given back cost 0.5 ms each along a's step, then
    # 2 ms each along b's (a bound linear in the units given back would say 0.5 ms for all).
    sets = {
        ("a", "forward"): [single(10, 0), single(4, 4 * 256)],
        ("b", "forward"): [single(10, 0), single(4, 2 * 256)],
    }
    bound = search._rest_bounds(group_kernels(sets, 256), 1, math.inf)[0]
    assert [bound.least(room) for room in (6, 5, 2, 1, 0)] == [0, 0.5, 2, 4, 6]
    # Known up to a slack of 3 ms: the step that crosses it is kept, and then none.
    cut = search._rest_bounds(group_kernels(sets, 256), 1, 3.0)[0]
    assert [cut.least(room) for room in (2, 1, 0)] == [2, 4, 6]
    assert bound.least(-1) == cut.least(-1) == math.inf  # less than nothing: no solution


def test_a_bound_cut_to_fewer_pieces_goes_on_at_the_rate_of_what_it_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The two steps of the test above, with one piece kept: giving back units costs 0.5 ms
    # each along a's step, then 2 ms each, the rate of b's step, which is dropped; as far as
    # the bound knows, it goes on at 2 ms a unit, where no more units are there to give back.
    monkeypatch.setattr(search, "_MOST_PIECES", 1)
    sets = {
        ("a", "forward"): [single(10, 0), single(4, 4 * 256)],
        ("b", "forward"): [single(10, 0), single(4, 2 * 256)],
    }
    bound = search._rest_bounds(group_kernels(sets, 256), 1, math.inf)[0]
    assert [bound.least(room) for room in (6, 2, 0, -4)] == [0, 2, 6, 14]
