"""The split axis: the batch's rules, and every format carrying an axis, the batch implied
where none is named. `TestDoubleAxis` is a test double: a second axis that splits like the
batch under another name, so that the plumbing can be seen to carry an axis other than BATCH."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from ucudnn.core import splits
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import ConvProblem
from ucudnn.core.splits import BATCH, BatchAxis, axis_named
from ucudnn.planner.cache import BenchmarkCache, Measurement
from ucudnn.planner.cache.records import measurement_key
from ucudnn.planner.cli import legacy_only
from ucudnn.planner.plan_types import KernelPlan
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

FACTS = DeviceFacts("NVIDIA H100 80GB HBM3", "9.0", 92800, 13000)
PROBLEM = ConvProblem.create(8, 3, 4, (5, 5), 3)
BATCH_CSV = (
    "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes,math_type,deterministic,engine\n"
    "conv,forward,2,1,1,0.25,0,default,false,\n"
    "conv,forward,2,2,0,1.0,0,default,false,\n"
)


class TestDoubleAxis(BatchAxis):
    """A test double: the batch's rules under another name."""

    __test__ = False  # not a pytest test class
    name = "test_double"


DOUBLE = TestDoubleAxis()


@pytest.fixture
def double_axis(monkeypatch: pytest.MonkeyPatch) -> Iterator[TestDoubleAxis]:
    monkeypatch.setitem(splits.AXES, DOUBLE.name, DOUBLE)
    yield DOUBLE


def _table(axis: splits.Axis = BATCH) -> KernelTable:
    return KernelTable(
        "conv", "forward", 2, [Candidate(2, 0, 1.0, 0), Candidate(1, 1, 0.25, 0)], axis=axis
    )


def test_the_batch_axis_is_the_problems_samples() -> None:
    assert axis_named("batch") is BATCH
    assert BATCH.extent(PROBLEM) == 8
    assert BATCH.part(PROBLEM, 3) == PROBLEM.with_batch(3)
    assert BATCH.offset_bytes(PROBLEM, "x", 2) == PROBLEM.sample_offset_bytes("x", 2)


def test_an_unknown_axis_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown split axis 'spatial'; expected one of batch"):
        axis_named("spatial")
    with pytest.raises(TypeError, match=r"split axis is named by text, got \[1\]"):
        axis_named([1])  # type: ignore[arg-type]


def test_old_timings_read_as_batch_and_batch_tables_write_as_before() -> None:
    tables = TimingTables.read_csv(io.StringIO(BATCH_CSV))
    assert tables["conv", "forward"].axis is BATCH
    assert tables.to_csv() == BATCH_CSV  # no axis column
    assert "axis" not in tables.to_json()
    header, *rows = BATCH_CSV.splitlines()
    blank = "\n".join([f"{header},axis", *(f"{row}," for row in rows)]) + "\n"
    assert TimingTables.read_csv(io.StringIO(blank))["conv", "forward"].axis is BATCH


def test_an_unknown_axis_in_a_timings_file_is_refused_where_it_is() -> None:
    header, *rows = BATCH_CSV.splitlines()
    text = "\n".join([f"{header},axis", *(f"{row},spatial" for row in rows)]) + "\n"
    with pytest.raises(ValueError, match=r"line 2.*column 'axis'.*unknown split axis 'spatial'"):
        TimingTables.read_csv(io.StringIO(text))


def test_timings_carry_another_axis_through_csv_json_and_rows(double_axis) -> None:
    tables = TimingTables([_table(double_axis)])
    text = tables.to_csv()
    assert text.splitlines()[0].endswith(",engine,axis")
    assert all(line.endswith(",test_double") for line in text.splitlines()[1:])
    for again in (
        TimingTables.read_csv(io.StringIO(text)),
        TimingTables.from_json(tables.to_json()),
        TimingTables.from_rows(tables.to_rows()),
    ):
        assert again == tables
        assert again["conv", "forward"].axis is double_axis
    assert tables != TimingTables([_table()])


def test_a_table_keeps_its_axis_when_cut_or_renamed(double_axis) -> None:
    table = _table(double_axis)
    assert table.at_batch(1).axis is double_axis
    assert table.renamed("other").axis is double_axis
    assert "axis=test_double" in repr(table)
    assert legacy_only(TimingTables([table]))["conv", "forward"].axis is double_axis


def test_a_timings_file_refuses_two_axes_for_one_kernel(double_axis) -> None:
    rows = [
        *TimingTables([_table()]).to_rows(),
        {**TimingTables([_table(double_axis)]).to_rows()[1]},
    ]
    rows[-1]["micro_batch"] = 2
    rows[-1]["algo"] = 3
    with pytest.raises(ValueError, match="axis test_double conflicts with axis batch"):
        TimingTables.from_rows(rows)


def test_a_kernel_plan_names_its_axis_only_when_not_the_batch(double_axis) -> None:
    schedule = Schedule((Candidate(1, 1, 0.25, 0), Candidate(1, 1, 0.25, 0)))
    batch_plan = KernelPlan("conv", "forward", 2, schedule)
    assert "axis" not in batch_plan.to_dict()
    assert KernelPlan.from_dict(batch_plan.to_dict()).axis is BATCH
    plan = KernelPlan.of_checked(_table(double_axis), schedule, None, None)
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["axis"] == "test_double"
    assert KernelPlan.from_dict(data) == plan
    with pytest.raises(ValueError, match=r"axis.*unknown split axis 'spatial'"):
        KernelPlan.from_dict({**data, "axis": "spatial"})


def test_cache_keys_of_batch_splits_are_unchanged_and_other_axes_apart(
    double_axis, tmp_path
) -> None:
    key = measurement_key(PROBLEM, "forward", 2, FACTS, "legacy")
    assert key[0] == PROBLEM.with_batch(2).key() and key[-1] == "legacy"
    other = measurement_key(PROBLEM, "forward", 2, FACTS, "legacy", double_axis)
    assert other[-1] == "legacy/axis=test_double"
    with BenchmarkCache(tmp_path / "cache.sqlite") as cache:
        cache.store(
            PROBLEM,
            "forward",
            2,
            FACTS,
            [Measurement(2, 0, time_ms=1.0, workspace_bytes=0)],
            axis=double_axis,
        )
        assert cache.lookup(PROBLEM, "forward", 2, FACTS) is None
        assert cache.candidates(PROBLEM, "forward", 2, FACTS, axis=double_axis) == [
            Candidate(2, 0, 1.0, 0)
        ]
