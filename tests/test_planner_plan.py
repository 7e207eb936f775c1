"""Whole-network plans: WR and WD from timing tables, baselines, JSON round trip, report."""

from __future__ import annotations

import json

import pytest

from ucudnn.core.facts import DeviceFacts
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import smallest_workspace
from ucudnn.planner.plan import Plan, make_plan_wd, make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.planner.wd import aligned
from ucudnn.planner.wr import plan_wr

MiB = 1 << 20
FACTS = DeviceFacts("NVIDIA H100 80GB HBM3", "9.0", 92800, 13000)


@pytest.fixture(scope="module")
def tables() -> TimingTables:
    graph = builtin_network("alexnet", batch=128)
    return model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())


def test_wr_plan_is_per_kernel_wr_and_never_slower_than_its_baseline(tables) -> None:
    plan = make_plan_wr(tables, 16 * MiB, device=FACTS, timings_source="model")
    assert [k.kernel_id for k in plan.kernels] == list(tables)
    for k in plan.kernels:
        table = tables[k.kernel_id]
        assert k.schedule == plan_wr(table, 16 * MiB)
        singles = [c for c in table.candidates[128] if c.workspace_bytes <= 16 * MiB]
        assert k.baseline == min(singles, key=Candidate.speed_key)
        assert k.speedup >= 1.0 and k.offset is None
    assert plan.time_ms <= plan.baseline_time_ms
    assert plan.workspace_bytes == max(k.workspace_bytes for k in plan.kernels) <= 16 * MiB
    assert any(len(k.schedule.parts) > 1 for k in plan.kernels)  # micro-batching pays here


def test_wd_plan_fits_the_budget_and_beats_its_undivided_baseline(tables) -> None:
    plan = make_plan_wd(tables, 64 * MiB, deterministic_only=True)
    assert plan.solver_status == "optimal" and plan.alignment == 256
    end = 0
    for k in plan.kernels:
        assert k.offset % 256 == 0 and k.offset >= end
        end = k.offset + aligned(k.workspace_bytes, 256)
        assert k.schedule.deterministic and k.baseline.deterministic
    assert plan.workspace_bytes <= end <= 64 * MiB
    assert sum(aligned(k.baseline.workspace_bytes, 256) for k in plan.kernels) <= 64 * MiB
    assert plan.time_ms <= plan.baseline_time_ms


def test_wd_infeasible_budget_names_the_minimum(tables) -> None:
    need = sum(aligned(smallest_workspace(t, "powerOfTwo", True), 256) for _, t in tables.items())
    assert need > 0
    with pytest.raises(InfeasibleError) as info:
        make_plan_wd(tables, need - 1, deterministic_only=True)
    assert info.value.required_bytes == need
    assert make_plan_wd(tables, need, deterministic_only=True).workspace_bytes <= need


def test_plan_without_a_baseline() -> None:
    table = KernelTable("big", "forward", 4, [Candidate(4, 1, 4.0, 100), Candidate(2, 1, 1.0, 10)])
    plan = make_plan_wr(TimingTables([table]), 50, policy=[2])
    k = plan["big", "forward"]
    assert k.baseline is None and k.speedup is None and plan.baseline_time_ms is None
    assert "none fits" in plan.report()
    assert Plan.from_json(plan.to_json()) == plan
    with pytest.raises(KeyError, match="no layer 'small' kernel 'forward'"):
        plan["small", "forward"]


@pytest.mark.parametrize("mode", ["wr", "wd"])
def test_json_round_trip(tables, mode: str) -> None:
    make = make_plan_wr if mode == "wr" else make_plan_wd
    plan = make(tables, 32 * MiB, policy=[1, 32], device=FACTS, timings_source="t.csv")
    text = plan.to_json()
    assert Plan.from_json(text) == plan
    data = json.loads(text)
    assert data["totals"]["time_ms"] == pytest.approx(plan.time_ms)
    assert data["policy"] == [1, 32] and data["device"]["cudnn_version"] == 92800
    first = data["kernels"][0]
    assert {"micro_batches", "algos", "time_ms", "workspace_bytes", "offset"} <= set(first)


def test_from_json_rejects_other_documents() -> None:
    with pytest.raises(ValueError, match="not a ucudnn-plan document"):
        Plan.from_json('{"format": "other"}')
    with pytest.raises(ValueError, match="version 2 is not supported"):
        Plan.from_json('{"format": "ucudnn-plan", "version": 2}')
    with pytest.raises(ValueError, match="malformed ucudnn-plan document"):
        Plan.from_json('{"format": "ucudnn-plan", "version": 1, "mode": "wr"}')
    with pytest.raises(ValueError, match="plan mode must be one of wr, wd"):
        Plan(mode="xx", limit_bytes=0, policy="all", kernels=())


def test_report_lists_every_kernel_with_totals() -> None:
    table = KernelTable("conv1", "forward", 256)
    table.add(Candidate(256, 0, 8.0, 0))
    table.add(Candidate(256, 1, 4.0, 256 * MiB))
    table.add(Candidate(128, 1, 2.5, 128 * MiB))
    table.add(Candidate(64, 1, 0.75, 64 * MiB))
    plan = make_plan_wr(TimingTables([table]), 64 * MiB, timings_source="t.csv")
    lines = plan.report().splitlines()
    assert lines[0] == "WR plan: per-kernel limit 64 MiB, policy powerOfTwo, solver dp (optimal)"
    assert lines[1] == "timings: t.csv"
    assert lines[2].split() == [
        "layer", "kernel", "micro-batches", "algos", "workspace", "time", "ms",
        "baseline", "ms", "speedup",
    ]  # fmt: skip
    row = ["conv1", "forward", "4x64", "1", "64", "MiB", "3.000", "8.000", "2.67x"]
    assert lines[3].split() == row
    assert lines[-1].split() == ["total", "64", "MiB", "3.000", "8.000", "2.67x"]
