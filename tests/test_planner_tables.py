"""Timing tables: candidates, schedules, and the CSV/JSON interchange format with its errors."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest

from ucudnn.planner.candidate import ROW_DETERMINISTIC, ROW_WORKSPACE, row_speed_key
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
    trusted = Schedule.of_parts((a, b, b))  # as the planners make them, unchecked
    assert trusted == s and hash(trusted) == hash(s) and trusted.time_ms == 2.0
    assert s.micro_batches_text() == "128+2x64"
    assert s.algos_text() == "1,7/tensor_op"
    c = Candidate(64, 0, 0.5, 0)
    assert Schedule((a, b, b, c)).micro_batches_text() == "128+2x64+64"  # one run per algorithm
    assert Schedule((a, b, b, c)).algos_text() == "1,7/tensor_op,0"
    assert Schedule((a, a)).micro_batches_text() == "2x128"
    assert Schedule((a, a)).algos_text() == "1"
    assert Schedule((a,)).micro_batches_text() == "128"
    with pytest.raises(ValueError, match="at least one part"):
        Schedule(())
    with pytest.raises(TypeError, match="parts are Candidates"):
        Schedule(((1, 0, 1.0, 0),))
    assert Schedule([a]) == Schedule((a,))


@pytest.mark.parametrize("runs", [[(10, 0.1)], [(3, 0.1), (7, 0.2), (1, 1e-17)], [(256, 1 / 3)]])
def test_a_schedule_of_runs_is_that_of_its_parts(runs: list[tuple[int, float]]) -> None:
    # Times that no float adds exactly: the runs' sum must round as the parts' does.
    made = [(n, Candidate(64 >> i, i, t, 100 * i)) for i, (n, t) in enumerate(runs)]
    parts = tuple(c for n, c in made for _ in range(n))
    of_runs, of_parts = Schedule.of_runs(made), Schedule(parts)
    assert of_runs == of_parts and of_runs.parts == parts
    assert (of_runs.time_ms, of_runs.workspace_bytes) == (
        of_parts.time_ms,
        of_parts.workspace_bytes,
    )
    assert of_runs.time_ms == math.fsum(c.time_ms for c in parts)


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


@pytest.mark.parametrize(
    "algos", [[0, 1, 5], [5, 0, 1], [1, 0, 5]], ids=["in order", "reversed", "one out of place"]
)
def test_a_size_set_at_once_keeps_its_rows_in_slot_order(algos: list[int]) -> None:
    table = KernelTable("conv1", "forward", 8)
    table.set_checked_size(8, [Candidate(8, a, 1.0 + a, 0).values() for a in algos])
    assert [c.algo for c in table] == [0, 1, 5]
    assert table == KernelTable("conv1", "forward", 8, [Candidate(8, a, 1.0 + a, 0) for a in algos])


@pytest.mark.parametrize("algos", [[0, 0, 1], [1, 0, 1]], ids=["side by side", "apart"])
def test_a_size_set_at_once_refuses_two_rows_of_one_slot(algos: list[int]) -> None:
    table = KernelTable("conv1", "forward", 8)
    with pytest.raises(ValueError, match="duplicate candidates in conv1/forward"):
        table.set_checked_size(8, [Candidate(8, a, 1.0 + a, 0).values() for a in algos])
    assert table.micro_batches() == []


def test_rows_are_the_candidates_field_values() -> None:
    fast = Candidate(4, 7, 1.5, 2048, "tensor_op", True)
    table = KernelTable("conv1", "forward", 4, [Candidate(4, 0, 3.0, 0), fast])
    assert table.rows()[4] == tuple(c.values() for c in table.candidates[4])
    assert (fast.values()[ROW_WORKSPACE], fast.values()[ROW_DETERMINISTIC]) == (2048, True)
    assert row_speed_key(fast.values()) == fast.speed_key()
    assert Candidate.of_row(fast.values()) == fast


def test_tables_made_from_a_table_keep_their_rows_when_it_changes() -> None:
    table = KernelTable("conv1", "forward", 4, [Candidate(4, 1, 2.0, 0), Candidate(2, 1, 1.0, 0)])
    assert len(table.candidates[4]) == 1  # made Candidates: an add must make them again
    renamed, smaller = table.renamed("conv2"), table.at_batch(2)
    table.add(Candidate(4, 0, 3.0, 0))
    table.add(Candidate(2, 0, 0.5, 0))
    assert table.candidates[4] == [Candidate(4, 0, 3.0, 0), Candidate(4, 1, 2.0, 0)]
    assert renamed.candidates[4] == [Candidate(4, 1, 2.0, 0)]
    assert smaller.candidates == {2: [Candidate(2, 1, 1.0, 0)]}
    assert renamed.content_key() != table.content_key()


def test_records_are_each_sizes_fastest_rows_by_workspace_and_follow_changes() -> None:
    rows = [(0, 9.0, 0, False), (1, 5.0, 64, True), (2, 5.0, 32, False), (3, 7.0, 128, True)]
    table = KernelTable(
        "conv1", "forward", 4, [Candidate(2, a, t, w, "default", d) for a, t, w, d in rows]
    )
    assert [r[1] for r in table.records(2, False)] == [0, 2]  # 1 is as fast, and larger
    assert [r[1] for r in table.records(2, True)] == [1]  # 3 is slower and larger
    assert table.records(4, False) == ()
    smaller, renamed = table.at_batch(2), table.renamed("conv2")
    table.add(Candidate(2, 4, 1.0, 256))
    assert [r[1] for r in table.records(2, False)] == [0, 2, 4]
    assert [r[1] for r in smaller.records(2, False)] == [0, 2]  # the rows it was made from
    assert [r[1] for r in renamed.records(2, False)] == [0, 2]


def test_csv_reads_rows_with_defaults_for_optional_columns() -> None:
    tables = read("\n".join([HEADER, *GOOD]) + "\n")
    table = tables["conv1", "forward"]
    assert (table.batch, table.micro_batches()) == (4, [2, 4])
    # Canonical order within a size: by algorithm, not by line.
    assert table.candidates[4] == [Candidate(4, 0, 3.0, 0), Candidate(4, 1, 2.5, 1024)]
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
    ("rows", "where", "message"),
    [
        (["conv1,sideways,4,4,1,2.5,0"], "line 2, column 'kernel'", "unknown kernel 'sideways'"),
        (
            ["conv1,forward,4,4,1,-2.5,0"],
            "line 2, column 'time_ms'",
            "time_ms must be a number between 0 and",
        ),
        (
            ["conv1,forward,4,4,1,1e20,0"],
            "line 2, column 'time_ms'",
            "time_ms must be a number between 0 and 1e\\+09, got 1e\\+20",
        ),
        (
            ["conv1,forward,4,4,1," + "9" * 5000 + ",0"],
            "line 2, column 'time_ms'",
            r"time_ms is too large to be a number, got '9{60}'\.\.\. \(5000 characters\)$",
        ),
        (
            ["conv1,forward,4,4,1,nan,0"],
            "line 2, column 'time_ms'",
            "time_ms must be a number, got 'nan'",
        ),
        (
            ["conv1,forward,4,4,1,1_0,0"],
            "line 2, column 'time_ms'",
            "time_ms must be a number, got '1_0'",
        ),
        (
            ["conv1,forward,4,4,1,2.5,-1"],
            "line 2, column 'workspace_bytes'",
            "workspace_bytes must be >= 0",
        ),
        (
            ["conv1,forward,4,4,1,2.5,2600000000000000"],
            "line 2, column 'workspace_bytes'",
            "workspace_bytes must be <= 1125899906842624",
        ),
        (
            ["conv1,forward,4,4,1,2.5,00260000000000000000"],
            "line 2, column 'workspace_bytes'",
            r"workspace_bytes has 18 digits, more than any allowed value \(at most 1125899",
        ),
        (
            ["conv1,forward,4,8,1,2.5,0"],
            "line 2, column 'micro_batch'",
            r"micro_batch must be between 1 and batch \(4\), got 8",
        ),
        (
            ["conv1,forward,4,0,1,2.5,0"],
            "line 2, column 'micro_batch'",
            "micro_batch must be >= 1, got 0",
        ),
        (["conv1,forward,0,1,1,2.5,0"], "line 2, column 'batch'", "batch must be >= 1, got 0"),
        (
            ["conv1,forward,9223372036854775808,1,1,2.5,0"],
            "line 2, column 'batch'",
            r"batch has 19 digits, more than any allowed value \(at most 2147483647\)",
        ),
        (
            ["conv1,forward,four,4,1,2.5,0"],
            "line 2, column 'batch'",
            "batch must be an integer, got 'four'",
        ),
        (
            ["conv1,forward,1_0,4,1,2.5,0"],
            "line 2, column 'batch'",
            "batch must be an integer, got '1_0'",
        ),
        (
            ["conv1,forward,4,4,1,fast,0"],
            "line 2, column 'time_ms'",
            "time_ms must be a number, got 'fast'",
        ),
        (
            ["conv1,forward,4,4,1,2.5,1.5"],
            "line 2, column 'workspace_bytes'",
            "workspace_bytes must be an integer",
        ),
        (["conv1,forward,4,4,x,2.5,0"], "line 2, column 'algo'", "algo must be an integer"),
        (["conv1,forward,4,4,-1,2.5,0"], "line 2, column 'algo'", "algo must be >= 0"),
        (
            ["conv1,forward,4,4,2147483648,2.5,0"],
            "line 2, column 'algo'",
            "algo must be <= 2147483647",
        ),
        ([",forward,4,4,1,2.5,0"], "line 2, column 'layer'", "layer must be a non-empty name"),
        (
            ['"con\x00v1",forward,4,4,1,2.5,0'],
            "line 2, column 'layer'",
            r"layer '.*' contains the control character '\\x00'",
        ),
        (
            ['"con\nv1",forward,4,4,1,2.5,0'],
            "line 2, column 'layer'",
            r"layer '.*' contains the control character '\\n'",
        ),
        ([*GOOD, "conv1,forward,4,4,1,2.5,0"], "line 5", "duplicate candidate"),
        (["conv1,forward,4,4,1,2.5"], "line 2", "has 6 fields but the header has 7"),
        (["conv1,forward,4,4,1,2.5,0,9"], "line 2", "has 8 fields but the header has 7"),
        (["", "", "conv1,forward,4,4,1,2.5"], "line 4", "has 6 fields"),  # blank lines count
        (['"conv\n1",forward,4,4,1,2.5', "x"], "line 2", "has 6 fields"),  # where the row starts
        (["x" * 140_000 + ",forward,4,4,1,2.5,0"], "line 2", r"field larger than field limit"),
        (
            [*GOOD, "conv1,forward,8,8,1,2.5,0"],
            "line 5, column 'batch'",
            "batch 8 conflicts with batch 4 given earlier for conv1/forward",
        ),
        (
            [*GOOD, "conv2,forward,4,2,1,1.0,0", "conv2,forward,4,1,1,1.0,0"],
            r"line 5 \(its first row\)",
            r"conv2/forward has no rows at micro_batch == batch \(4\)",
        ),
    ],
)
def test_csv_errors_name_the_line_and_column(rows: list[str], where: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^t.csv, {where}: {message}"):
        read("\n".join([HEADER, *rows]) + "\n")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("layer,kernel,batch,micro_batch,algo,time_ms", "line 1: missing column.*workspace_bytes"),
        (HEADER + ",speed", "line 1: unknown column.*'speed'"),
        (HEADER + "," + "s" * 100_000, r"line 1: unknown column\(s\) 's{60}'\.\.\. \(100000 char"),
        (HEADER + ",workspace_bytes", "line 1, column 'workspace_bytes': the column is repeated"),
        (HEADER + ", layer ", "line 1, column 'layer': the column is repeated"),
        ("", "line 1: empty file"),
    ],
)
def test_csv_header_errors(header: str, message: str) -> None:
    with pytest.raises(ValueError, match="^t.csv, " + message):
        read(header + ("\n" if header else ""))


@pytest.mark.parametrize("digits", [11, 5000, 100_000])
def test_long_numbers_are_refused_at_their_cell_before_converting(digits: int) -> None:
    with pytest.raises(ValueError) as caught:
        read(f"{HEADER}\nconv1,forward,4,4,{'9' * digits},2.5,0\n")
    assert str(caught.value) == (
        f"t.csv, line 2, column 'algo': algo has {digits} digits, more than any allowed value "
        "(at most 2147483647)"
    )


def test_leading_zeros_and_signs_are_no_digits_of_a_value() -> None:
    table = read(f"{HEADER}\nconv1,forward,{'0' * 5000}4,+0004,-0,2.5,{'0' * 20}\n")
    assert list(table["conv1", "forward"]) == [Candidate(4, 0, 2.5, 0)]


@pytest.mark.parametrize(
    ("column", "bad"),
    [("layer", "x" * 100_000 + "\x00"), ("batch", "x" * 100_000), ("time_ms", "1" * 100_000 + "x"),
     ("kernel", "f" * 100_000), ("math_type", "t" * 100_000), ("deterministic", "y" * 100_000)],
)  # fmt: skip
def test_long_cells_are_shown_cut_short(column: str, bad: str) -> None:
    row = dict.fromkeys(["layer", "kernel", "batch", "micro_batch", "algo", "time_ms",
                         "workspace_bytes", "math_type", "deterministic"], "")  # fmt: skip
    row |= {"layer": "c", "kernel": "forward", "batch": "1", "micro_batch": "1", "algo": "0",
            "time_ms": "1", "workspace_bytes": "0", column: bad}  # fmt: skip
    with pytest.raises(ValueError, match=rf"^t.csv, line 2, column '{column}': ") as caught:
        read(",".join(row) + "\n" + ",".join(row.values()) + "\n")
    assert len(str(caught.value)) < 300 and f"({len(bad)} characters)" in str(caught.value)


def test_optional_column_values_are_checked() -> None:
    with pytest.raises(
        ValueError, match="line 2, column 'deterministic': deterministic='maybe' is not a yes/no"
    ):
        read(HEADER + ",deterministic\nconv1,forward,1,1,1,2.5,0,maybe\n")
    with pytest.raises(ValueError, match="line 2, column 'math_type': math_type 'turbo' is not"):
        read(HEADER + ",math_type\nconv1,forward,1,1,1,2.5,0,turbo\n")


@pytest.mark.parametrize(
    ("word", "value"),
    [("true", True), ("YES", True), ("1", True), ("On", True), ("", False),
     ("false", False), ("no", False), ("0", False), ("OFF", False)],
)  # fmt: skip
def test_deterministic_takes_the_yes_no_words_settings_take(word: str, value: bool) -> None:
    table = read(HEADER + f",deterministic\nconv1,forward,1,1,1,2.5,0,{word}\n")
    assert [c.deterministic for c in table["conv1", "forward"]] == [value]


def test_rows_and_json_errors_name_the_row() -> None:
    row = {"layer": "c", "kernel": "forward", "batch": 2, "micro_batch": 2, "algo": 1}
    with pytest.raises(ValueError, match="rows, row 1: missing column"):
        TimingTables.from_rows([row])
    full = {**row, "time_ms": 1.0, "workspace_bytes": 0}
    with pytest.raises(ValueError, match="rows, row 2, column 'batch': batch must be an integer"):
        TimingTables.from_rows([full, {**full, "algo": 2, "batch": True}])
    with pytest.raises(ValueError, match="row 1, column 'layer': layer must be text, got 5"):
        TimingTables.from_rows([{**full, "layer": 5}])
    doc = {"format": "ucudnn-timings", "version": 1, "rows": [full, {**full, "time_ms": "x"}]}
    with pytest.raises(ValueError, match=r"^<json>, line 1, row 2, column 'time_ms': time_ms must"):
        TimingTables.from_json(json.dumps(doc))
    rows = ",\n".join(json.dumps(row) for row in doc["rows"])
    text = f'{{"format": "ucudnn-timings", "version": 1, "rows": [\n{rows}\n]}}'
    with pytest.raises(ValueError, match=r"^t.json, line 3, row 2, column 'time_ms'"):
        TimingTables.from_json(text, "t.json")
    with pytest.raises(ValueError, match=r"^<json>, line 1: not a ucudnn-timings document"):
        TimingTables.from_json("[]")
    with pytest.raises(ValueError, match="version 9 is not supported"):
        TimingTables.from_json(json.dumps({**doc, "version": 9}))
    with pytest.raises(ValueError, match="version True is not supported"):
        TimingTables.from_json(json.dumps({**doc, "version": True}))
    with pytest.raises(ValueError, match=r"version 'vvvv.*'\.\.\. \(100000 characters\) is not"):
        TimingTables.from_json(json.dumps({**doc, "version": "v" * 100_000}))
    with pytest.raises(ValueError, match="line 1, field 'rows': must be a list of objects"):
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


def test_tables_take_numpy_integers_and_refuse_bools() -> None:
    table = KernelTable("conv1", "forward", np.int64(8))
    assert table.batch == 8 and type(table.batch) is int
    tables = TimingTables([table])
    assert tables.setdefault("conv1", "forward", np.int32(8)) is table
    assert tables.setdefault("conv2", "forward", np.uint16(4)).batch == 4
    for batch, error in ((True, TypeError), (8.0, TypeError), (2**31, ValueError)):
        with pytest.raises(error, match="batch must be"):
            KernelTable("conv1", "forward", batch)
        with pytest.raises(error, match="batch must be"):
            tables.setdefault("conv3", "forward", batch)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("con\x00v", r"contains the control character '\\x00'"),
        ("con\nv", r"contains the control character '\\n'"),
        ("con\u2028v", "contains the control character"),
        ("", "non-empty name"),
    ],
)
def test_layer_names_are_one_line_of_text(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KernelTable(name, "forward", 1)
    rows = [{"layer": name, "kernel": "forward", "batch": 1, "micro_batch": 1, "algo": 0,
             "time_ms": 1.0, "workspace_bytes": 0}]  # fmt: skip
    with pytest.raises(ValueError, match=f"row 1, column 'layer': .*{message}"):
        TimingTables.from_rows(rows)
    assert KernelTable("conv 1 · über", "forward", 1).layer == "conv 1 · über"


def test_layer_names_have_no_surrounding_space_that_csv_would_strip() -> None:
    with pytest.raises(ValueError, match="starts or ends with white space"):
        KernelTable("conv ", "forward", 1)
    assert read(HEADER + "\n conv1 ,forward,1,1,0,1.0,0\n")["conv1", "forward"].layer == "conv1"


def test_a_table_has_one_order_whatever_order_its_rows_came_in() -> None:
    rows = [
        Candidate(4, 7, 1.0, 0), Candidate(4, 1, 2.0, 0, "tensor_op"), Candidate(2, 3, 0.5, 0),
        Candidate(4, 1, 3.0, 0), Candidate(4, 0, 4.0, 0),
    ]  # fmt: skip
    found = KernelTable("c", "forward", 4, rows)  # as cuDNN's Find ranks them
    cached = KernelTable("c", "forward", 4, sorted(rows, key=lambda c: (c.algo, c.math_type)))
    assert found == cached
    assert list(found) == list(cached) == [
        Candidate(2, 3, 0.5, 0), Candidate(4, 0, 4.0, 0), Candidate(4, 1, 3.0, 0),
        Candidate(4, 1, 2.0, 0, "tensor_op"), Candidate(4, 7, 1.0, 0),
    ]  # fmt: skip
    assert found.content_key() == cached.content_key()
    assert TimingTables([found]).to_csv() == TimingTables([cached]).to_csv()
    assert read(TimingTables([found]).to_csv())["c", "forward"] == found


def test_candidates_check_their_flags() -> None:
    assert Candidate(1, 0, 1.0, 0, deterministic=1).deterministic is True
    assert Candidate(1, 0, 1.0, 0, deterministic=np.uint8(0)).deterministic is False
    compared = np.float32(2.0) > 1  # numpy comparisons give numpy bools
    assert Candidate(1, 0, 1.0, 0, deterministic=compared).deterministic is True
    assert Candidate(1, 0, 1.0, 0, deterministic=np.False_).deterministic is False
    for bad in ("no", 2, np.int64(-1), 1.0, np.array([True, False])):
        with pytest.raises(TypeError, match="deterministic must be true or false"):
            Candidate(1, 0, 1.0, 0, deterministic=bad)
    with pytest.raises(TypeError, match="a kernel table holds Candidates"):
        KernelTable("c", "forward", 1).add((1, 0, 1.0, 0))


def test_csv_reads_paths_and_binary_streams_alike(tmp_path) -> None:
    text = "\n".join([HEADER, *GOOD]) + "\n"
    (tmp_path / "t.csv").write_text(text)
    expected = read(text)
    assert TimingTables.read_csv(tmp_path / "t.csv") == expected
    assert TimingTables.read_csv(io.BytesIO(("\ufeff" + text).encode())) == expected


def test_non_utf8_bytes_are_located(tmp_path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(
        (HEADER + "\n" + GOOD[0] + "\nconv\xff1,forward,4,4,0,3.0,0\n").encode("latin-1")
    )
    with pytest.raises(
        ValueError, match=r"t.csv, line 3, column 5: not UTF-8 text \(invalid start"
    ):
        TimingTables.read_csv(path)


def test_json_output_is_strict() -> None:
    tables = TimingTables([KernelTable("c", "forward", 1, [Candidate(1, 0, -0.0, 0)])])
    text = tables.to_json()
    assert '"time_ms": 0.0' in text and "-0.0" not in text
    assert TimingTables.from_json(text) == tables
    assert TimingTables.from_json(text.encode()) == tables


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "9" * 100,
            "line 2, row 1, column 'workspace_bytes': workspace_bytes must be <= "
            "1125899906842624, got an integer of 100 digits",
        ),
        (
            "-" + "9" * 101,
            "line 3, column 36: the integer has 101 digits, more than any value "
            "a document holds (at most 100)",
        ),
        (
            "9" * 5000,
            "line 3, column 36: the integer has 5000 digits, more than any value "
            "a document holds (at most 100)",
        ),
    ],
)
def test_json_integers_are_bounded_before_they_are_converted(value: str, message: str) -> None:
    text = (
        '{"format": "ucudnn-timings", "version": 1, "rows": [\n'
        '{"layer": "c", "kernel": "forward", "batch": 1, "micro_batch": 1, "algo": 0,\n'
        f'"time_ms": 1.0, "workspace_bytes": {value}}}]}}'
    )
    with pytest.raises(ValueError) as caught:
        TimingTables.from_json(text, "t.json")
    assert str(caught.value) == f"t.json, {message}"


def test_json_repeated_keys_and_syntax_errors_are_located() -> None:
    text = '{"format": "ucudnn-timings", "version": 1, "rows": [\n{"layer": "a", "layer": "b"}]}'
    with pytest.raises(
        ValueError, match=r"^t.json, line 2, column 1: the key 'layer' appears twice"
    ):
        TimingTables.from_json(text, "t.json")
    key = "k" * 100_000
    text = f'{{"format": "ucudnn-timings", "rows": [\n{{"{key}": 1, "{key}": 2}}]}}'
    with pytest.raises(ValueError, match=r"^t.json, line 2, column 1: the key 'kkk.*\(100000 ch"):
        TimingTables.from_json(text, "t.json")
    with pytest.raises(ValueError, match=r"^t.json, line 2, column 5: malformed JSON: Expecting"):
        TimingTables.from_json('{"format": "ucudnn-timings",\n"a" "b"}', "t.json")


def test_a_table_at_a_smaller_batch_keeps_the_rows_up_to_it() -> None:
    rows = [Candidate(b, a, 0.1 * b + a, 8 * b * a) for b in (1, 2, 4, 8) for a in (0, 1)]
    table = KernelTable("conv", "forward", 8, reversed(rows))

    four = table.at_batch(4)
    assert (four.layer, four.kernel, four.batch) == ("conv", "forward", 4)
    assert list(four) == [c for c in rows if c.micro_batch <= 4]
    four.check_complete()  # measured at 4 itself
    six = table.at_batch(6)
    assert six.micro_batches() == [1, 2, 4]
    with pytest.raises(ValueError, match="no rows at micro_batch == batch"):
        six.check_complete()  # 6 was not measured: it has no undivided run
    assert table.at_batch(8) == table
    with pytest.raises(
        ValueError, match="measured at batch 8; its table says nothing about batch 9"
    ):
        table.at_batch(9)
    with pytest.raises(ValueError, match="batch"):
        table.at_batch(0)


ENGINE = "eng62_k2=0_k13=1_k25=1"


def test_engine_candidates_are_checked_and_canonical() -> None:
    c = Candidate(4, 62, 1.0, 0, "tensor_op", False, "eng62_k25=1_k13=1_k2=0")
    assert c.engine == ENGINE and c.name == ENGINE
    assert Candidate(4, 7, 1.0, 0, engine="eng7").engine == "eng7"
    assert Candidate(4, 3, 1.0, 0).name == "3"
    with pytest.raises(ValueError, match="is a configuration of engine 62, but algo is 6"):
        Candidate(4, 6, 1.0, 0, engine=ENGINE)
    with pytest.raises(ValueError, match=r"engine tag 'eng62_k2=0_k2=1'.* chosen more than once"):
        Candidate(4, 62, 1.0, 0, engine="eng62_k2=0_k2=1")
    with pytest.raises(ValueError, match="engine tag 'alg62' is not eng<index>"):
        Candidate(4, 62, 1.0, 0, engine="alg62")
    with pytest.raises(TypeError, match="engine must be text"):
        Candidate(4, 62, 1.0, 0, engine=None)  # type: ignore[arg-type]


def test_a_legacy_algorithm_and_an_engine_of_the_same_number_are_distinct() -> None:
    legacy = Candidate(4, 1, 2.0, 0)
    engine = Candidate(4, 1, 2.0, 0, engine="eng1_k2=3")
    other = Candidate(4, 1, 1.0, 0, engine="eng1_k2=4")
    assert legacy.slot() == (1, "", "default", 0)
    assert engine.slot() == (1, "eng1_k2=3", "default", 0)
    table = KernelTable("c", "forward", 4, [other, engine, legacy])
    assert table.candidates[4] == [legacy, engine, other]
    with pytest.raises(ValueError, match="algo eng1_k2=3, math_type default is already in"):
        table.add(Candidate(4, 1, 9.0, 0, engine="eng1_k2=3"))
    # Ties in speed go to the legacy algorithm, then to the lower tag.
    assert min([engine, legacy], key=Candidate.speed_key) is legacy
    assert Schedule((other, legacy)).algos_text() == "eng1_k2=4,1"
    half = Candidate(2, 1, 1.0, 0, "tensor_op", engine="eng1_k2=4")
    assert Schedule((half, half)).algos_text() == "eng1_k2=4/tensor_op"


def test_csv_and_json_carry_the_engine_column() -> None:
    tables = read(
        HEADER + ",engine\n"
        "conv1,forward,4,4,62,1.0,64,eng62_k25=1_k2=0_k13=1\n"
        "conv1,forward,4,4,6,1.5,0,\n"
        "conv1,forward,4,2,10,0.5,0,eng10_k2=8_k12=-1\n"
    )
    table = tables["conv1", "forward"]
    assert [c.engine for c in table] == ["eng10_k2=8_k12=-1", "", ENGINE]
    assert tables.to_csv().splitlines()[0] == HEADER + ",math_type,deterministic,engine"
    assert tables.to_csv().splitlines()[1].endswith(",eng10_k2=8_k12=-1")
    assert read(tables.to_csv()) == tables
    document = json.loads(tables.to_json())
    assert document["version"] == 1 and document["rows"][2]["engine"] == ENGINE
    assert TimingTables.from_json(tables.to_json()) == tables
    legacy = document["rows"][1]
    assert legacy["engine"] == ""
    del legacy["engine"]  # as rows written before the field existed
    assert TimingTables.from_json(json.dumps(document)) == tables


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("eng61", "line 2, column 'engine': engine eng61 is a configuration of engine 61, but algo "
                  "is 62"),
        ("eng62_k2", "line 2, column 'engine': engine tag 'eng62_k2' is not eng<index>"),
        ("eng62_k2=1_k2=1", "line 2, column 'engine': engine tag .* chosen more than once"),
    ],
)  # fmt: skip
def test_engine_cells_are_checked_where_they_are(cell: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read(HEADER + f",engine\nconv1,forward,1,1,62,2.5,0,{cell}\n")


def test_a_content_key_follows_what_the_table_holds() -> None:
    table = KernelTable("c", "forward", 4, [Candidate(4, 1, 2.0, 0)])
    key = table.content_key()
    assert key == (4, (Candidate(4, 1, 2.0, 0).values(),)) and table.content_key() is key
    assert hash(key) == hash(tuple(key))  # it keys dicts as the tuple would
    table.add(Candidate(2, 1, 0.5, 0, engine="eng1"))
    assert table.content_key() != key
    assert table.content_key() == KernelTable("d", "forward", 4, list(table)).content_key()
    assert Candidate(4, 1, 2.0, 0).values() == (4, 1, 2.0, 0, "default", False, "", 0)


def test_equal_tables_read_from_a_file_share_their_content_key_until_one_changes() -> None:
    rows = "forward,4,4,1,2.5,0\n{0},forward,4,2,1,1.5,0\n"
    tables = read(HEADER + "\n" + "".join(f"{layer},{rows.format(layer)}" for layer in "abc"))
    a, b, c = (tables[layer, "forward"] for layer in "abc")
    assert b.content_key() is a.content_key() is c.content_key()  # found by identity
    a.add(Candidate(4, 0, 3.0, 0))
    assert a.content_key() != b.content_key() and b.content_key() is c.content_key()
    assert list(b) == [Candidate(2, 1, 1.5, 0), Candidate(4, 1, 2.5, 0)]


def test_a_renamed_table_works_out_its_content_key_with_its_origin() -> None:
    table = KernelTable("c", "forward", 4, [Candidate(4, 1, 2.0, 0)])
    renamed = table.renamed("d")
    assert renamed.content_key() is table.content_key()
