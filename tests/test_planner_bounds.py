"""Bounded work for every input the validation accepts: batch sizes a tune tries, the dynamic
program's steps behind desirable sets, and naming many layers that share a label."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from ucudnn.core.problem import ConvProblem
from ucudnn.planner import pareto, tune as tune_module
from ucudnn.planner.explain import explain_plan
from ucudnn.planner.general_dp import StepBudget
from ucudnn.planner.graph import FreeNames, LayerGraph
from ucudnn.planner.pareto import DesirableSets, desirable_set
from ucudnn.planner.plan import make_plan_wd
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, KernelTable, Schedule
from ucudnn.planner.tune import MAX_TUNE_BATCHES, check_batches, default_batches, tune
from ucudnn.runtime.slots import Slots

T = TypeVar("T")

PROBLEM = ConvProblem.create(8, 16, 16, (14, 14), 3, padding=1)


def counted(calls: list[object], real: Callable[..., T]) -> Callable[..., T]:
    """`real`, recording the first argument of each call in `calls`."""

    def call(*args: Any, **kwargs: Any) -> T:
        calls.append(args[0])
        return real(*args, **kwargs)

    return call


def test_default_batches_are_bounded_whatever_the_batch() -> None:
    assert default_batches(512) == [1, 2, 4, *range(8, 513, 8)]  # as before up to 519
    assert default_batches(1024) == [1, 2, 4, 8, *range(16, 1025, 16)]  # then a larger step
    for batch in (520, 65_536, 2**31 - 1):
        sizes = default_batches(batch)
        assert len(sizes) <= 96 and sizes[-1] == batch and 2 ** (batch.bit_length() - 1) in sizes


def test_too_many_batches_are_refused() -> None:
    with pytest.raises(ValueError, match=f"at most {MAX_TUNE_BATCHES} are tried"):
        check_batches(range(1, 10**6), 2**31 - 1)
    assert len(check_batches(range(1, MAX_TUNE_BATCHES + 1), 4096)) == MAX_TUNE_BATCHES


def test_a_tune_plans_a_bounded_number_of_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = LayerGraph.from_layers([("conv", PROBLEM.with_batch(4096))])
    tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph)
    planned: list[object] = []
    monkeypatch.setattr(tune_module, "make_plan_wd", counted(planned, make_plan_wd))
    result = tune(graph, tables, "1TiB")  # every batch fits
    assert len(planned) == len(result.points) == len(default_batches(4096)) <= 96


def test_a_batch_over_memory_needs_no_whole_front(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = LayerGraph.from_layers([("conv", PROBLEM.with_batch(1024))])
    tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph)
    pulled: dict[int, int] = {}  # batch: the points of its forward front found
    real = pareto.desirable_points

    def counted_points(table: KernelTable, *args: Any) -> pareto.FrontWalk:
        walk = real(table, *args)
        step = walk.step

        def counted_step() -> Schedule | None:
            point = step()
            if point is not None and table.kernel == "forward":
                pulled[table.batch] = pulled.get(table.batch, 0) + 1
            return point

        monkeypatch.setattr(walk, "step", counted_step)
        return walk

    monkeypatch.setattr(pareto, "desirable_points", counted_points)
    result = tune(graph, tables, "16MiB", overhead="0")  # fronts, not headroom
    planned = {p.batch for p in result.points if p.status == "fits"}
    assert planned and len(planned) < len(result.points)
    # Beyond the first point, only the fronts of the batches planned are looked into. A batch
    # over memory needs its first point only where its undivided run was not measured (the
    # MODEL's measured undivided runs include one of no workspace): none at all elsewhere.
    assert {b for b, n in pulled.items() if n > 1} <= planned
    over = [p for p in result.points if p.status == "over_memory"]
    assert all(pulled.get(p.batch, 0) == (not p.measured) for p in over)
    assert any(p.measured for p in over) and any(not p.measured for p in over)


def wide_table(batch: int) -> KernelTable:
    """Sizes 1..batch each with its own workspace, each running a sample faster than the
    smaller ones: policy "all" solves again at each, and every size may be part of the
    fastest schedule, so none is left out."""
    return KernelTable(
        "conv",
        "forward",
        batch,
        [Candidate(b, 0, b - b * b / (4 * batch), b) for b in range(1, batch + 1)],
    )


def test_desirable_sets_are_solved_within_one_step_budget() -> None:
    budget = StepBudget(100_000)
    with pytest.raises(ValueError, match=r"already spent .* more than the 100000 allowed"):
        desirable_set(wide_table(200), None, "all", budget=budget)
    sets = DesirableSets("all")
    sets.front(wide_table(40))
    spent = sets.budget.limit - sets.budget.left
    sets.front(wide_table(41))
    assert sets.budget.limit - sets.budget.left > spent > 0  # one budget for all its fronts


def test_an_explanation_reuses_the_plans_desirable_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = LayerGraph.from_layers([("a", PROBLEM), ("b", PROBLEM), ("c", PROBLEM.with_batch(4))])
    tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph)
    calls: list[object] = []
    monkeypatch.setattr(pareto, "desirable_points", counted(calls, pareto.desirable_points))
    sets = DesirableSets()
    explain_plan(make_plan_wd(tables, 64 << 20, sets=sets), tables, sets)
    assert len(calls) == len({t.content_key() for _, t in tables.items()}) == 6


def test_40000_rows_of_one_label_are_named_in_order() -> None:
    graph = LayerGraph.from_layers([("conv", PROBLEM)] * 40_000)
    assert graph.layers() == ["conv", *(f"conv#{i}" for i in range(2, 40_001))]


def test_free_names_skip_taken_names_and_reuse_released_ones() -> None:
    names = FreeNames({"a#3"})
    assert [names.take("a") for _ in range(4)] == ["a", "a#2", "a#4", "a#5"]
    names.release("a#2")
    assert names.take("a") == "a#2" and names.take("a") == "a#6"


def test_a_handles_layer_seen_with_many_problems_is_named_in_order() -> None:
    slots = Slots()
    names = [slots.get(PROBLEM.with_batch(b), "forward", "x").name for b in range(1, 2001)]
    assert names == ["x", *(f"x#{i}" for i in range(2, 2001))]
    slots.forget(slots.of(("x#2", "forward")))
    assert slots.get(PROBLEM.with_batch(5000), "forward", "x").name == "x#2"
