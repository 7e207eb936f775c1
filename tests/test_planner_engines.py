"""Replay: the H100 probe's engine timings for ResNet-50 fp16 plan to the optima issue 26
states (tests/data/engines-resnet50-fp16-nchw.md says where the data come from)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ucudnn.core.engines import parse_tag
from ucudnn.planner.eligible import size_records
from ucudnn.planner.general_dp import StepBudget
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import FrontWalk, desirable_set
from ucudnn.planner.plan import make_plan_wd, make_plan_wr
from ucudnn.planner.tables import KernelTable, TimingTables

MiB = 1 << 20
FIXTURE = Path(__file__).parent / "data" / "engines-resnet50-fp16-nchw.csv.gz"
PARTS_FROM_32 = "32,64,128,256"


@pytest.fixture(scope="module")
def tables() -> TimingTables:
    with gzip.open(FIXTURE) as f:
        return TimingTables.read_csv(f)


def test_the_fixture_covers_every_layer_of_the_network(tables: TimingTables) -> None:
    graph = builtin_network("resnet50", dtype="float16")
    expected = [
        (layer, kernel)
        for layer in graph.layers()
        for kernel in graph.kernels(layer)
        if (layer, kernel) != ("conv1", "backward_data")  # the probe measured none
    ]
    assert len(expected) == 158 and sorted(tables) == sorted(expected)
    candidates = [c for _, table in tables.items() for c in table]
    assert len(candidates) == 62165
    engines = {(c.engine, c.algo) for c in candidates}
    assert all(tag and parse_tag(tag).index == algo for tag, algo in engines)
    assert {c.micro_batch for c in candidates} == {1, 2, 4, 8, 16, 32, 64, 128, 256}
    # Layers that repeat a problem repeat its measurements.
    assert tables["layer1.1.conv1", "forward"].content_key() == (
        tables["layer1.2.conv1", "forward"].content_key()
    )


@pytest.mark.parametrize(
    ("policy", "limit_mib", "expected_ms"),
    [
        ("powerOfTwo", 64, 41.10),
        ("powerOfTwo", 8, 102.54),
        (PARTS_FROM_32, 64, 44.06),
        (PARTS_FROM_32, 8, 164.08),
        (PARTS_FROM_32, None, 34.65),
    ],
)
def test_wr_replays_the_probe_optimum(
    tables: TimingTables, policy: str, limit_mib: int | None, expected_ms: float
) -> None:
    limit = 2**50 if limit_mib is None else limit_mib * MiB
    plan = make_plan_wr(tables, limit, policy)
    assert len(plan.kernels) == 158
    assert plan.time_ms == pytest.approx(expected_ms, abs=0.005)
    assert all(k.workspace_bytes <= limit for k in plan.kernels)
    if limit_mib == 64:  # undivided, the best single plan within 64 MiB
        assert plan.baseline_time_ms == pytest.approx(153.09, abs=0.005)


@pytest.mark.parametrize(("budget_mib", "expected_ms"), [(64, 212.0), (256, 159.7)])
def test_wd_replays_the_probe_optimum(
    tables: TimingTables, budget_mib: int, expected_ms: float
) -> None:
    plan = make_plan_wd(tables, budget_mib * MiB, PARTS_FROM_32)
    assert plan.solver_status == "optimal"
    assert plan.time_ms == pytest.approx(expected_ms, abs=0.1)
    assert plan.workspace_bytes <= budget_mib * MiB


@pytest.mark.parametrize("budget_mib", [8, 64])
def test_plans_do_not_depend_on_which_equal_tables_share_their_rows(
    tables: TimingTables, budget_mib: int
) -> None:
    # The reader shares the rows of equal tables; tables made one by one share nothing.
    apart = TimingTables(
        KernelTable(t.layer, t.kernel, t.batch, list(t)) for _, t in tables.items()
    )
    shared = tables["layer1.1.conv1", "forward"]
    assert shared.shared_content() is tables["layer1.2.conv1", "forward"].shared_content()
    assert apart["layer1.1.conv1", "forward"].shared_content() is not (
        apart["layer1.2.conv1", "forward"].shared_content()
    )
    for make_plan in (make_plan_wr, make_plan_wd):
        assert make_plan(apart, budget_mib * MiB) == make_plan(tables, budget_mib * MiB)


@pytest.mark.parametrize("limit_mib", [None, 8, 64])
def test_undivided_sets_are_the_walks_points(tables: TimingTables, limit_mib: int | None) -> None:
    # With one size, the batch, desirable_set takes each record as a point without a walk.
    limit = None if limit_mib is None else limit_mib * MiB
    for _, table in tables.items():
        records = size_records(table, limit, "undivided", False)
        walked = list(FrontWalk(table.batch, records, StepBudget()))
        assert desirable_set(table, limit, "undivided") == walked
