"""Timing tables: candidates, schedules, and the CSV/JSON interchange format with its errors."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from ucudnn.planner.tables import Candidate, KernelTable, Schedule, TimingTables

HEADER = "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes"
GOOD = [
    "conv1,forward,4,4,1,2.5,1024",
    "conv1,forward,4,2,1,1.0,512",
    "conv1,forward,4,4,0,3.0,0",
]


def read(text: str) -> TimingTables:
    f = io.StringIO(text)
    f.name = "t.csv"
    return TimingTables.read_csv(f)


def test_candidate_rejects_bad_values() -> None:
    for kwargs, message in [
        ({"micro_batch": 0}, "micro_batch must be >= 1"),
        ({"algo": -1}, "algo must be >= 0"),
        ({"time_ms": -0.5}, "time_ms must be a number between 0 and 1e"),
        ({"time_ms": float("nan")}, "time_ms must be a number between"),
        ({"time_ms": float("inf")}, "time_ms must be a number between"),
        ({"time_ms": 1e20}, "time_ms must be a number between 0 and 1e"),
        ({"workspace_bytes": -1}, "workspace_bytes must be >= 0"),
        ({"workspace_bytes": 2**58}, "workspace_bytes must be <= 1125899906842624"),
        ({"micro_batch": 2**31}, "micro_batch must be <= 2147483647"),
        ({"math_type": "fast"}, "math_type 'fast' is not one of"),
    ]:
        fields = {"micro_batch": 1, "algo": 0, "time_ms": 1.0, "workspace_bytes": 0, **kwargs}
        with pytest.raises(ValueError, match=message):
            Candidate(**fields)


def test_candidate_takes_numpy_numbers_and_refuses_other_types() -> None:
    c = Candidate(np.int64(4), np.int32(1), np.float32(0.5), np.uint64(256))
    assert c == Candidate(4, 1, 0.5, 256)
    assert type(c.micro_batch) is int and type(c.time_ms) is float
    assert Candidate(1, 0, -0.0, 0).time_ms.hex() == "0x0.0p+0"  # no negative zero
    for kwargs in (
        {"micro_batch": True},
        {"algo": 1.0},
        {"workspace_bytes": "1"},
        {"time_ms": "1"},
    ):
        fields = {"micro_batch": 1, "algo": 0, "time_ms": 1.0, "workspace_bytes": 0, **kwargs}
        with pytest.raises(TypeError, match=next(iter(kwargs))):
            Candidate(**fields)


def test_schedule_adds_times_and_takes_the_largest_workspace() -> None:
    a = Candidate(128, 1, 1.5, 100, deterministic=True)
    b = Candidate(64, 7, 0.25, 300, math_type="tensor_op")
    s = Schedule((a, b, b))
    assert (s.time_ms, s.workspace_bytes, s.batch) == (2.0, 300, 256)
    assert not s.deterministic
    assert s.micro_batches_text() == "128+64+64"
    assert s.algos_text() == "1,7/tensor_op,7/tensor_op"
    assert Schedule((a, a)).micro_batches_text() == "2x128"
    assert Schedule((a, a)).algos_text() == "1"
    assert Schedule((a,)).micro_batches_text() == "128"
    with pytest.raises(ValueError, match="at least one part"):
        Schedule(())


def test_kernel_table_checks_what_it_holds() -> None:
    table = KernelTable("conv1", "forward", 8, [Candidate(8, 0, 1.0, 0)])
    with pytest.raises(ValueError, match="micro_batch 16 is larger than batch 8"):
        table.add(Candidate(16, 0, 1.0, 0))
    with pytest.raises(ValueError, match="duplicate candidate"):
        table.add(Candidate(8, 0, 2.0, 5))
    table.add(Candidate(8, 0, 2.0, 5, math_type="tensor_op"))  # another math type is another row
    assert table.micro_batches() == [8]
    with pytest.raises(ValueError, match="unknown kernel"):
        KernelTable("conv1", "sideways", 8)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        KernelTable("conv1", "forward", 0)
    with pytest.raises(ValueError, match="non-empty name"):
        KernelTable("", "forward", 8)
    with pytest.raises(ValueError, match="no rows at micro_batch == batch"):
        KernelTable("conv1", "forward", 8, [Candidate(4, 0, 1.0, 0)]).check_complete()


def test_csv_reads_rows_with_defaults_for_optional_columns() -> None:
    tables = read("\n".join([HEADER, *GOOD]) + "\n")
    table = tables["conv1", "forward"]
    assert (table.batch, table.micro_batches()) == (4, [2, 4])
    assert table.candidates[4] == [Candidate(4, 1, 2.5, 1024), Candidate(4, 0, 3.0, 0)]
    assert all(c.math_type == "default" and not c.deterministic for c in table)


def test_csv_accepts_a_bom_spaces_and_optional_columns(tmp_path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "\ufeff" + HEADER + ", math_type ,deterministic\n"
        " conv1 , forward ,2,2,6, 0.5 ,0,tensor_op,Yes\n"
        "conv1,forward,2,1,6,0.25,0,,\n",
        encoding="utf-8",
    )
    table = TimingTables.read_csv(path)["conv1", "forward"]
    assert table.candidates[2] == [Candidate(2, 6, 0.5, 0, "tensor_op", True)]
    assert table.candidates[1] == [Candidate(1, 6, 0.25, 0, "default", False)]


def test_csv_and_json_round_trip(tmp_path) -> None:
    tables = TimingTables(
        [
            KernelTable(
                "a",
                "backward_filter",
                3,
                [Candidate(3, 1, 0.1 + 0.2, 7, "fma", True), Candidate(1, 0, 1e-9, 0)],
            ),
            KernelTable("b", "forward", 1, [Candidate(1, 2, 5.0, 2**40)]),
        ]
    )
    path = tmp_path / "out.csv"
    tables.write_csv(path)
    assert TimingTables.read_csv(path) == tables
    assert read(tables.to_csv()) == tables
    assert TimingTables.from_json(tables.to_json()) == tables
    assert TimingTables.from_rows(tables.to_rows()) == tables


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["conv1,sideways,4,4,1,2.5,0"], "line 2: unknown kernel 'sideways'"),
        (["conv1,forward,4,4,1,-2.5,0"], "line 2: time_ms must be a number between 0 and"),
        (["conv1,forward,4,4,1,nan,0"], "line 2: time_ms must be a number between 0 and"),
        (["conv1,forward,4,4,1,2.5,-1"], "line 2: workspace_bytes must be >= 0"),
        (["conv1,forward,4,8,1,2.5,0"], r"line 2: micro_batch must be between 1 and batch \(4\)"),
        (["conv1,forward,4,0,1,2.5,0"], r"line 2: micro_batch must be between 1 and batch \(4\)"),
        (["conv1,forward,0,1,1,2.5,0"], "line 2: batch must be >= 1"),
        (["conv1,forward,four,4,1,2.5,0"], "line 2: batch must be an integer, got 'four'"),
        (["conv1,forward,4,4,1,fast,0"], "line 2: time_ms must be a number, got 'fast'"),
        (["conv1,forward,4,4,1,2.5,1.5"], "line 2: workspace_bytes must be an integer"),
        (["conv1,forward,4,4,x,2.5,0"], "line 2: algo must be an integer"),
        (["conv1,forward,4,4,-1,2.5,0"], "line 2: algo must be >= 0"),
        ([",forward,4,4,1,2.5,0"], "line 2: layer is empty"),
        ([*GOOD, "conv1,forward,4,4,1,2.5,0"], "line 5: duplicate candidate"),
        (["conv1,forward,4,4,1,2.5"], "line 2: has 6 fields but the header has 7"),
        (["conv1,forward,4,4,1,2.5,0,9"], "line 2: has 8 fields but the header has 7"),
        (
            [*GOOD, "conv1,forward,8,8,1,2.5,0"],
            "line 5: batch 8 conflicts with batch 4 given earlier for conv1/forward",
        ),
        (
            [*GOOD, "conv2,forward,4,2,1,1.0,0", "conv2,forward,4,1,1,1.0,0"],
            r"line 5 \(its first row\): conv2/forward has no rows at micro_batch == batch \(4\)",
        ),
    ],
)
def test_csv_errors_name_the_line(rows: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        read("\n".join([HEADER, *rows]) + "\n")
    assert str(info.value).startswith("t.csv, line ")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("layer,kernel,batch,micro_batch,algo,time_ms", "line 1: missing column.*workspace_bytes"),
        (HEADER + ",speed", "line 1: unknown column.*'speed'"),
        ("", "empty file"),
    ],
)
def test_csv_header_errors(header: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read(header + ("\n" if header else ""))


def test_optional_column_values_are_checked() -> None:
    with pytest.raises(ValueError, match="line 2: deterministic must be true or false"):
        read(HEADER + ",deterministic\nconv1,forward,1,1,1,2.5,0,maybe\n")
    with pytest.raises(ValueError, match="line 2: math_type 'turbo' is not one of"):
        read(HEADER + ",math_type\nconv1,forward,1,1,1,2.5,0,turbo\n")


def test_rows_and_json_errors_name_the_row() -> None:
    row = {"layer": "c", "kernel": "forward", "batch": 2, "micro_batch": 2, "algo": 1}
    with pytest.raises(ValueError, match="rows, row 1: missing column"):
        TimingTables.from_rows([row])
    full = {**row, "time_ms": 1.0, "workspace_bytes": 0}
    with pytest.raises(ValueError, match="rows, row 2: batch must be an integer, got True"):
        TimingTables.from_rows([full, {**full, "algo": 2, "batch": True}])
    with pytest.raises(ValueError, match="row 1: layer must be text, got 5"):
        TimingTables.from_rows([{**full, "layer": 5}])
    doc = {"format": "ucudnn-timings", "version": 1, "rows": [{**full, "time_ms": "x"}]}
    with pytest.raises(ValueError, match="<json>, row 1: time_ms must be a number"):
        TimingTables.from_json(json.dumps(doc))
    with pytest.raises(ValueError, match="not a ucudnn-timings document"):
        TimingTables.from_json("[]")
    with pytest.raises(ValueError, match="version 9 is not supported"):
        TimingTables.from_json(json.dumps({**doc, "version": 9}))
    with pytest.raises(ValueError, match="'rows' must be a list of objects"):
        TimingTables.from_json(json.dumps({**doc, "rows": [1]}))


def test_timing_tables_lookup_and_duplicates() -> None:
    tables = read("\n".join([HEADER, *GOOD]) + "\n")
    assert list(tables) == [("conv1", "forward")] and len(tables) == 1
    assert ("conv1", "forward") in tables
    with pytest.raises(KeyError, match="no timings for layer 'conv9' kernel 'forward'"):
        tables["conv9", "forward"]
    with pytest.raises(ValueError, match="already in the tables"):
        tables.add(KernelTable("conv1", "forward", 4))
    assert tables.setdefault("conv1", "forward", 4) is tables["conv1", "forward"]
