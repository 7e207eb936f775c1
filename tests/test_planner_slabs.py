"""Candidates cut into slabs (`Candidate.slab`): their checks, how tables, timings files and
plan documents carry them, while everything without a slab is written as before, and that the
benchmark cache (of whole runs) refuses them."""

from __future__ import annotations

import io
import json

import pytest

from ucudnn.core.problem import MAX_DIM, ConvProblem
from ucudnn.planner.cache import Measurement
from ucudnn.planner.candidate import Candidate
from ucudnn.planner.explain import explain_plan
from ucudnn.planner.plan import Plan, baseline, make_plan_wd, make_plan_wr
from ucudnn.planner.plan_types import KernelPlan
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import KernelTable, TimingTables

OLD_HEADER = (
    "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes,math_type,deterministic,engine"
)


def sliced_table() -> KernelTable:
    """Batch 2: whole runs of algo 1 that need 100 bytes, and its slabs of 4 planes that need
    10 and take longer; a slab run is also the fastest at the batch, within any limit."""
    return KernelTable(
        "conv",
        "forward",
        2,
        [
            Candidate(2, 1, 4.0, 100),
            Candidate(2, 1, 5.0, 10, slab=4),
            Candidate(2, 0, 9.0, 0),
            Candidate(2, 0, 3.0, 0, slab=2),
            Candidate(1, 1, 2.5, 50),
        ],
    )


# -- the candidate ---------------------------------------------------------------------------
def test_a_candidate_is_whole_unless_it_has_a_slab() -> None:
    whole, cut = Candidate(2, 1, 1.0, 0), Candidate(2, 1, 1.0, 0, slab=8)
    assert whole.slab == 0 and cut.slab == 8
    assert whole.values()[-1] == 0 and cut.values()[-1] == 8
    assert whole.slot() == (1, "", "default", 0) and cut.slot() == (1, "", "default", 8)
    assert Candidate.of_row(cut.values()) == cut  # type: ignore[arg-type]
    # Equal but for the slab: whole first in speed order.
    assert whole.speed_key() < cut.speed_key()


@pytest.mark.parametrize(
    ("slab", "error", "message"),
    [
        (-1, ValueError, "slab must be"),
        (MAX_DIM + 1, ValueError, "slab must be"),
        (1.0, TypeError, "slab must be an integer"),
        (True, TypeError, "slab must be an integer"),
    ],
)
def test_a_slab_is_a_count_of_planes(slab: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Candidate(2, 1, 1.0, 0, slab=slab)  # type: ignore[arg-type]


def test_a_table_keeps_whole_and_slab_runs_of_one_algorithm_apart() -> None:
    table = sliced_table()
    assert [c.slab for c in table.candidates[2]] == [0, 2, 0, 4]  # by (algo, ..., slab)
    with pytest.raises(ValueError, match="math_type default, slab 4 is already in conv/forward"):
        table.add(Candidate(2, 1, 6.0, 0, slab=4))


def test_the_whole_volume_table_holds_the_whole_runs_at_the_batch() -> None:
    table = sliced_table()
    whole = table.whole_volume()
    assert whole.micro_batches() == [2]
    assert [(c.algo, c.slab) for c in whole.candidates[2]] == [(0, 0), (1, 0)]
    plain = KernelTable("conv", "forward", 2, [Candidate(2, 1, 4.0, 100)])
    assert plain.whole_volume() is plain


# -- timings files -----------------------------------------------------------------------------
def test_files_without_slabs_are_written_as_before() -> None:
    tables = TimingTables([KernelTable("c", "forward", 2, [Candidate(2, 1, 1.5, 8)])])
    assert tables.to_csv() == f"{OLD_HEADER}\nc,forward,2,2,1,1.5,8,default,false,\n"
    assert "slab" not in tables.to_json()
    # The model's tables of a 2D network, as every file before slabs.
    graph_tables = model_tables(
        [("conv", ConvProblem.create(8, 3, 16, (32, 32), 3, 1), ["forward"])]
    )
    text = graph_tables.to_csv()
    assert text.startswith(OLD_HEADER + "\n") and "slab" not in graph_tables.to_json()
    assert TimingTables.read_csv(io.StringIO(text)).to_csv() == text


def test_a_file_with_slabs_writes_the_column_and_reads_back() -> None:
    tables = TimingTables([sliced_table()])
    text = tables.to_csv()
    lines = text.splitlines()
    assert lines[0] == OLD_HEADER + ",slab"
    assert lines[1:] == [
        "conv,forward,2,1,1,2.5,50,default,false,,0",
        "conv,forward,2,2,0,9.0,0,default,false,,0",
        "conv,forward,2,2,0,3.0,0,default,false,,2",
        "conv,forward,2,2,1,4.0,100,default,false,,0",
        "conv,forward,2,2,1,5.0,10,default,false,,4",
    ]
    assert TimingTables.read_csv(io.StringIO(text)) == tables
    document = json.loads(tables.to_json())
    assert [row.get("slab") for row in document["rows"]] == [None, None, 2, None, 4]
    assert TimingTables.from_json(tables.to_json()) == tables


def test_an_empty_slab_cell_is_the_whole_volume() -> None:
    text = f"{OLD_HEADER},slab\nc,forward,2,2,1,1.5,8,default,false,,\nc,forward,2,2,1,1.0,4,,,,2\n"
    table = TimingTables.read_csv(io.StringIO(text))["c", "forward"]
    assert [(c.time_ms, c.slab) for c in table] == [(1.5, 0), (1.0, 2)]


@pytest.mark.parametrize(
    ("cell", "message"),
    [("-1", "slab must be >= 0, got -1"), ("x", "slab must be an integer, got 'x'")],
)
def test_a_bad_slab_cell_is_refused_where_it_is(cell: str, message: str) -> None:
    f = io.StringIO(f"{OLD_HEADER},slab\nc,forward,2,2,1,1.5,8,default,false,,{cell}\n")
    f.name = "t.csv"
    with pytest.raises(ValueError) as caught:
        TimingTables.read_csv(f)
    assert str(caught.value) == f"t.csv, line 2, column 'slab': {message}"


def test_a_row_repeated_with_its_slab_is_refused() -> None:
    row = "c,forward,2,2,1,1.5,8,default,false,,4"
    with pytest.raises(ValueError, match="duplicate candidate"):
        TimingTables.read_csv(io.StringIO(f"{OLD_HEADER},slab\n{row}\n{row}\n"))


# -- the benchmark cache -----------------------------------------------------------------------
def test_the_cache_refuses_a_candidate_in_slabs() -> None:
    # The cache holds whole runs: a kernel cut into slabs is measured as its distinct slabs.
    with pytest.raises(ValueError, match="algo 1 runs in slabs of 2 planes: the cache holds"):
        Measurement.timed(Candidate(4, 1, 1.0, 16, slab=2), [1.0, 1.2])


# -- plans -------------------------------------------------------------------------------------
def test_a_plan_with_slabs_writes_them_and_reads_them_back() -> None:
    tables = TimingTables([sliced_table()])
    plan = make_plan_wr(tables, 60, policy="undivided")
    (kernel,) = plan.kernels
    assert [p.slab for p in kernel.schedule.parts] == [2]
    document = plan.to_dict()
    (planned,) = document["kernels"]
    assert planned["parts"][0]["slab"] == 2 and planned["slabs"] == [2]
    assert Plan.from_json(plan.to_json()) == plan
    # The baseline runs the whole volume, though a slab run is faster within the limit.
    assert kernel.baseline == Candidate(2, 0, 9.0, 0)
    assert planned["baseline"] is not None and "slab" not in planned["baseline"]


def test_a_plan_without_slabs_is_written_as_before() -> None:
    table = KernelTable("conv", "forward", 2, [Candidate(2, 1, 4.0, 100), Candidate(1, 0, 1.0, 0)])
    text = make_plan_wr(TimingTables([table]), 60).to_json()
    assert "slab" not in text


def test_the_baselines_run_the_whole_volume_in_both_modes() -> None:
    tables = TimingTables([sliced_table()])
    assert baseline(sliced_table(), 60) == Candidate(2, 0, 9.0, 0)
    wd = make_plan_wd(tables, 1024, policy="undivided")
    assert wd.kernels[0].baseline is not None and wd.kernels[0].baseline.slab == 0
    assert wd.kernels[0].schedule.parts[0].slab == 2


def test_a_baseline_in_slabs_is_refused() -> None:
    with pytest.raises(ValueError, match="field 'baseline': must be a Candidate of the whole"):
        KernelPlan(
            "conv",
            "forward",
            2,
            Schedule((Candidate(2, 0, 3.0, 0, slab=2),)),
            baseline=Candidate(2, 0, 3.0, 0, slab=2),
        )


def test_a_plan_part_with_a_bad_slab_is_refused_by_field() -> None:
    document = make_plan_wr(TimingTables([sliced_table()]), 60, policy="undivided").to_dict()
    document["kernels"][0]["parts"][0]["slab"] = -2
    with pytest.raises(ValueError, match=r"conv/forward, field 'parts', part 0: slab must be >= 0"):
        Plan.from_json(json.dumps(document))


def test_the_report_and_the_explanation_say_the_slabs() -> None:
    tables = TimingTables([sliced_table()])
    plan = make_plan_wr(tables, 60, policy="undivided")
    assert "0 in slabs of 2 planes" in plan.report()
    explanation = explain_plan(plan, tables)
    text = explanation.report()
    assert "2 algo 0 in slabs of 2 planes" in text
    chosen = explanation.to_dict()["kernels"][0]["chosen"]
    assert chosen["slabs"] == [2]
    one = Schedule((Candidate(2, 1, 1.0, 0, math_type="tensor_op", slab=1),))
    assert one.algos_text() == "1/tensor_op in slabs of 1 plane"
