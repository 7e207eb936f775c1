"""`explain_plan`: each kernel's choice, its runner-up and why, on tables whose answers are
known by hand and on the cost model's AlexNet."""

from __future__ import annotations

import json

import pytest

from tests.schema_validator import validate
from ucudnn.planner.explain import explain_plan
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import desirable_set
from ucudnn.planner.plan import KernelPlan, Plan, make_plan_wd, make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, KernelTable, Schedule, TimingTables
from ucudnn.planner.wd import aligned

MiB = 1 << 20


def kernel_a() -> KernelTable:
    """Its desirable set, by hand: 4 algo 0 (8 ms, 0 B), 2x2 algo 1 (3 ms, 512 B) and 4x1
    algo 2 (2 ms, 2048 B); the undivided algo 1 (4 ms, 1024 B) is dominated by 2x2."""
    return KernelTable(
        "a",
        "forward",
        4,
        [
            Candidate(4, 0, 8.0, 0),
            Candidate(4, 1, 4.0, 1024),
            Candidate(2, 1, 1.5, 512),
            Candidate(1, 2, 0.5, 2048),
        ],
    )


def kernel_b() -> KernelTable:
    """Two schedules: 2 algo 0 (2 ms, 0 B) and 2 algo 1 (1 ms, 768 B)."""
    return KernelTable(
        "b", "backward_filter", 2, [Candidate(2, 0, 2.0, 0), Candidate(2, 1, 1.0, 768)]
    )


def shape(schedule: Schedule | None) -> tuple[str, str, float, int] | None:
    if schedule is None:
        return None
    return (
        schedule.micro_batches_text(),
        schedule.algos_text(),
        schedule.time_ms,
        schedule.workspace_bytes,
    )


def test_wr_runner_up_is_the_next_faster_schedule_over_the_limit() -> None:
    tables = TimingTables([kernel_a()])
    explained = explain_plan(make_plan_wr(tables, 1024), tables)
    (k,) = explained.kernels
    assert shape(k.chosen) == ("2x2", "1", 3.0, 512)
    assert shape(k.runner_up) == ("4x1", "2", 2.0, 2048)
    assert (k.reason, k.desirable_set_size, k.within_limit) == ("over_limit", 3, 2)
    assert (k.baseline_ms, k.time_saved_ms) == (4.0, 1.0)  # the undivided algo 1 fits
    data = k.to_dict()
    assert data["runner_up"]["relation"] == "faster"
    assert data["runner_up"]["workspace_delta_bytes"] == 1536
    assert data["runner_up"]["time_delta_ms"] == -1.0
    assert explained.budget_left_bytes is None
    assert (explained.fastest_time_ms, explained.fastest_workspace_bytes) == (2.0, 2048)


def test_wr_runner_up_of_the_fastest_is_the_next_smaller() -> None:
    tables = TimingTables([kernel_a()])
    (k,) = explain_plan(make_plan_wr(tables, 4096), tables).kernels
    assert shape(k.chosen) == ("4x1", "2", 2.0, 2048)
    assert shape(k.runner_up) == ("2x2", "1", 3.0, 512)
    assert (k.reason, k.within_limit) == ("fastest", 3)
    runner_up = k.to_dict()["runner_up"]
    assert runner_up["relation"] == "smaller"
    assert (runner_up["workspace_delta_bytes"], runner_up["time_delta_ms"]) == (-1536, 1.0)


def test_wr_at_no_workspace() -> None:
    tables = TimingTables([kernel_a()])
    (k,) = explain_plan(make_plan_wr(tables, 0), tables).kernels
    assert shape(k.chosen) == ("4", "0", 8.0, 0)
    assert shape(k.runner_up) == ("2x2", "1", 3.0, 512)
    assert (k.reason, k.within_limit, k.time_saved_ms) == ("over_limit", 1, 0.0)


def test_a_set_of_one_has_no_runner_up() -> None:
    tables = TimingTables([KernelTable("c", "forward", 1, [Candidate(1, 0, 1.0, 0)])])
    (k,) = explain_plan(make_plan_wr(tables, 0), tables).kernels
    assert (k.runner_up, k.reason, k.desirable_set_size) == (None, "fastest", 1)
    assert k.to_dict()["runner_up"] is None
    assert "none" in explain_plan(make_plan_wr(tables, 0), tables).report()


def test_wd_says_what_the_budget_left_and_what_the_faster_ones_need() -> None:
    """Budget 1024: a at 2x2 (512 B) and b undivided at algo 0 (0 B) take 5 ms, the best that
    fits; 512 B are left, less than either faster runner-up needs beyond its chosen one."""
    tables = TimingTables([kernel_a(), kernel_b()])
    plan = make_plan_wd(tables, 1024)
    explained = explain_plan(plan, tables)
    a, b = explained.kernels
    assert (shape(a.chosen), shape(b.chosen)) == (("2x2", "1", 3.0, 512), ("2", "0", 2.0, 0))
    assert (shape(a.runner_up), shape(b.runner_up)) == (
        ("4x1", "2", 2.0, 2048),
        ("2", "1", 1.0, 768),
    )
    assert (a.reason, b.reason) == ("over_budget", "over_budget")
    assert explained.budget_left_bytes == 512
    # The WD baseline is the best undivided plan: a's algo 1 (1024 B) with b's algo 0.
    assert (a.time_saved_ms, b.time_saved_ms) == (1.0, 0.0)
    assert (explained.fastest_time_ms, explained.fastest_workspace_bytes) == (3.0, 2816)
    part = explained.to_dict()
    assert part["time_saved_ms"] == 1.0 and part["workspace_used_bytes"] == 512
    assert [k["desirable_within_limit"] for k in part["kernels"]] == [2, 2]


def test_wd_runner_up_that_fits_what_is_left_was_not_taken() -> None:
    """A plan the solver did not finish (made here by hand): b's faster schedule would fit."""
    a, b = kernel_a(), kernel_b()
    chosen_a = Schedule((a.candidates[2][0],) * 2)
    plan = Plan(
        mode="wd",
        limit_bytes=4096,
        policy="powerOfTwo",
        kernels=(
            KernelPlan("a", "forward", 4, chosen_a, offset=0),
            KernelPlan("b", "backward_filter", 2, Schedule((b.candidates[2][0],)), offset=512),
        ),
        solver="highs",
        solver_status="feasible",
        alignment=256,
    )
    explained = explain_plan(plan, TimingTables([a, b]))
    assert [k.reason for k in explained.kernels] == ["not_taken", "not_taken"]
    assert explained.budget_left_bytes == 4096 - 512
    assert all(k.baseline_ms is None and k.time_saved_ms is None for k in explained.kernels)
    assert explained.to_dict()["time_saved_ms"] is None


def test_deterministic_plans_explain_with_deterministic_sets() -> None:
    table = KernelTable(
        "d",
        "forward",
        2,
        [
            Candidate(2, 0, 4.0, 0, deterministic=True),
            Candidate(2, 1, 1.0, 100),
            Candidate(1, 2, 1.0, 200, deterministic=True),
        ],
    )
    tables = TimingTables([table])
    (k,) = explain_plan(make_plan_wr(tables, 1000, deterministic_only=True), tables).kernels
    assert shape(k.chosen) == ("2x1", "2", 2.0, 200)
    assert (k.desirable_set_size, k.reason) == (2, "fastest")
    assert shape(k.runner_up) == ("2", "0", 4.0, 0)


def test_tables_without_a_planned_kernel_are_refused() -> None:
    plan = make_plan_wr(TimingTables([kernel_a(), kernel_b()]), 1024)
    with pytest.raises(ValueError, match="no timings for kernel b/backward_filter"):
        explain_plan(plan, TimingTables([kernel_a()]))


def test_report_has_a_row_per_kernel_and_says_what_is_left() -> None:
    tables = TimingTables([kernel_a(), kernel_b()])
    lines = explain_plan(make_plan_wd(tables, 1024), tables).report().splitlines()
    assert lines[0] == "Why (WD): each kernel's choice and its runner-up"
    assert lines[1].split()[:6] == ["layer", "kernel", "set", "in", "budget", "chosen"]
    assert lines[2].split() == [
        "a", "forward", "3", "2", "2x2", "algo", "1", "512", "B", "3.000", "1.000",
        "4x1", "algo", "2", "+1.5", "KiB", "-1.000", "over", "budget",
    ]  # fmt: skip
    assert lines[3].split() == [
        "b", "backward_filter", "2", "2", "2", "algo", "0", "0", "B", "2.000", "0.000",
        "2", "algo", "1", "+768", "B", "-1.000", "over", "budget",
    ]  # fmt: skip
    # Text columns are left-aligned: the chosen schedules start in one column.
    assert lines[2].index("2x2 algo 1") == lines[3].index("2 algo 0")
    assert lines[-2:] == [
        "Budget 1 KiB: 512 B taken by the workspaces (each aligned to 256 bytes), 512 B left.",
        "The fastest schedule of every kernel: 3.000 ms, needing 2.8 KiB together; "
        "this plan: 5.000 ms (+2.000 ms).",
    ]


@pytest.fixture(scope="module")
def alexnet() -> TimingTables:
    graph = builtin_network("alexnet", batch=128)
    return model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())


@pytest.mark.parametrize("mode", ["wr", "wd"])
def test_alexnet_from_the_model(alexnet: TimingTables, mode: str) -> None:
    limit = 64 * MiB if mode == "wr" else 256 * MiB
    plan = (make_plan_wr if mode == "wr" else make_plan_wd)(alexnet, limit)
    explained = explain_plan(plan, alexnet)
    assert [k.kernel for k in explained.kernels] == [k.kernel for k in plan.kernels]
    reasons = set()
    for k, planned in zip(explained.kernels, plan.kernels, strict=True):
        front = desirable_set(alexnet[planned.kernel_id], None)
        assert k.chosen == planned.schedule and k.desirable_set_size == len(front)
        assert k.within_limit == sum(s.workspace_bytes <= limit for s in front)
        assert k.runner_up in front
        if k.reason == "fastest":
            assert k.chosen.time_ms == front[-1].time_ms
        else:
            assert k.runner_up.time_ms < k.chosen.time_ms
            assert k.runner_up.workspace_bytes > k.chosen.workspace_bytes
            extra = k.runner_up.workspace_bytes if mode == "wr" else (
                aligned(k.runner_up.workspace_bytes, 256) - aligned(k.chosen.workspace_bytes, 256)
            )  # fmt: skip
            assert extra > (limit if mode == "wr" else explained.budget_left_bytes)
        reasons.add(k.reason)
    assert reasons == {"fastest", "over_limit" if mode == "wr" else "over_budget"}
    assert explained.fastest_time_ms < plan.time_ms
    document = {**plan.to_dict(), "explain": explained.to_dict()}
    validate(json.loads(json.dumps(document)))
    assert Plan.from_json(json.dumps(document)) == plan
    assert len(explained.report().splitlines()) == 2 + 15 + (6 if mode == "wd" else 5)
