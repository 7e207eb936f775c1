"""What the readers of timings and plans refuse: legacy algorithm numbers past their kernel's
enum, blank engine cells, engine tags of any length; and how fast a large table reads."""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ucudnn.core.algorithms import LEGACY_ALGORITHMS
from ucudnn.core.problem import Kernel
from ucudnn.planner import timings_reading
from ucudnn.planner.plan import Plan, make_plan_wr
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.planner.values import MAX_ENGINE_TAG_LENGTH

HEADER = "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes,engine"


def read(text: str) -> TimingTables:
    f = io.StringIO(text)
    f.name = "t.csv"
    return TimingTables.read_csv(f)


@pytest.mark.parametrize("kernel", list(LEGACY_ALGORITHMS))
def test_each_kernels_legacy_algorithms_are_read_up_to_its_last(kernel: Kernel) -> None:
    last = len(LEGACY_ALGORITHMS[kernel]) - 1
    tables = read(f"{HEADER}\nc,{kernel},8,8,{last},0.1,0,\n")
    assert [c.algo for c in tables["c", kernel]] == [last]
    with pytest.raises(ValueError) as caught:
        read(f"{HEADER}\nc,{kernel},8,8,{last + 1},0.1,0,\n")
    assert str(caught.value) == (
        f"t.csv, line 2, column 'algo': {last + 1} is not a legacy {kernel} algorithm: cuDNN "
        f"numbers them 0 to {last} (a graph-API engine configuration needs its tag as the engine)"
    )


def test_an_engine_row_may_have_any_engine_index() -> None:
    tables = read(f"{HEADER}\nc,forward,8,8,99,0.1,0,eng99\n")
    assert [c.name for c in tables["c", "forward"]] == ["eng99"]


def test_json_rows_check_the_legacy_range_too() -> None:
    row = {"layer": "c", "kernel": "backward_data", "batch": 8, "micro_batch": 8, "algo": 6,
           "time_ms": 0.1, "workspace_bytes": 0}  # fmt: skip
    with pytest.raises(ValueError, match=r"^rows, row 1, column 'algo': 6 is not a legacy"):
        TimingTables.from_rows([row])


def test_the_cli_refuses_an_out_of_range_algorithm_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\nc,forward,8,8,99,0.1,0,\n")
    done = subprocess.run(
        [sys.executable, "-m", "ucudnn", "plan", "--timings", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"ucudnn plan: error: {path}, line 2, column 'algo': 99 is not a legacy forward "
        "algorithm: cuDNN numbers them 0 to 7 (a graph-API engine configuration needs its tag "
        "as the engine)\n"
    )


@pytest.mark.parametrize("blank", [" ", "   ", "\t"])
def test_an_engine_cell_of_blanks_is_no_legacy_row(blank: str) -> None:
    with pytest.raises(ValueError, match=r"^t.csv, line 2, column 'engine': engine .* white space"):
        read(f"{HEADER}\nc,forward,8,8,28,0.1,0,{blank}\n")


def test_an_empty_engine_cell_is_a_legacy_row() -> None:
    assert read(f"{HEADER}\nc,forward,8,8,1,0.1,0,\n")["c", "forward"].candidates[8][0].engine == ""


def _plan_document(part: dict[str, object]) -> str:
    tables = TimingTables([KernelTable("c", "forward", 8, [Candidate(8, 1, 0.1, 0)])])
    document = make_plan_wr(tables, 1 << 20).to_dict()
    kernel = document["kernels"][0]  # type: ignore[index]
    kernel["parts"] = [{**kernel["parts"][0], **part}]
    return json.dumps(document, indent=2)


def test_a_plans_legacy_part_is_checked_against_its_kernel() -> None:
    with pytest.raises(ValueError) as caught:
        Plan.from_json(_plan_document({"algo": 62}), "p.json")
    assert str(caught.value).startswith(
        "p.json, line 20, kernel c/forward, field 'parts', part 0, field 'algo': 62 is not a "
        "legacy forward algorithm: cuDNN numbers them 0 to 7"
    )
    assert Plan.from_json(_plan_document({"algo": 62, "engine": "eng62"})).kernels[0].schedule


# A valid configuration (each knob once), of 18,894 characters.
LONG_TAG = "eng1" + "".join(f"_k{knob}=0" for knob in range(2_000))


def test_the_bound_on_tags_is_far_above_real_ones() -> None:
    lines = (Path(__file__).parent / "data" / "engine-tags.txt").read_text().splitlines()
    longest = max(len(line) for line in lines if line.startswith("eng"))
    assert 8 * longest < MAX_ENGINE_TAG_LENGTH  # 57 characters today


def test_a_long_engine_tag_is_refused_and_quoted_cut_short() -> None:
    with pytest.raises(ValueError) as caught:
        read(f"{HEADER}\nc,forward,8,8,1,0.1,0,{LONG_TAG}\n")
    message = str(caught.value)
    assert message.startswith("t.csv, line 2, column 'engine': engine tag 'eng1_k0=0_k1=0")
    assert f"... ({len(LONG_TAG)} characters) is longer than 512 characters" in message
    assert len(message) < 300


def test_a_plan_document_refuses_a_long_engine_tag() -> None:
    with pytest.raises(ValueError, match=r"part 0: engine tag 'eng1_k0.*\.\.\. \(") as caught:
        Plan.from_json(_plan_document({"algo": 1, "engine": LONG_TAG}), "p.json")
    assert len(str(caught.value)) < 300


ENGINE_TABLE = Path(__file__).parent / "data" / "engines-resnet50-fp16-nchw.csv.gz"


def test_a_large_table_reads_as_its_rows_do_one_by_one() -> None:
    """The column-wise reader makes the tables that the rows make one at a time, in the same
    order, candidates and all."""
    tables = TimingTables.read_csv(ENGINE_TABLE)
    assert sum(len(list(table)) for _, table in tables.items()) == 62_165
    one_by_one = TimingTables.from_rows(tables.to_rows())
    assert list(tables) == list(one_by_one) and tables == one_by_one
    for kernel_id, table in tables.items():
        assert table.content_key() == one_by_one[kernel_id].content_key()


def test_rows_repeated_for_another_layer_are_ordered_and_shared() -> None:
    """A size whose rows another layer repeats (a network repeats its blocks) is checked once:
    both tables hold the rows in canonical order, as one tuple. Rows that differ share
    nothing, and a repeated row is refused in a repeating table as in any other."""
    rows = ["2,0.5,64,", "0,0.7,0,", "1,0.6,8,"]
    lines = [f"{layer},forward,8,8,{row}" for row in rows for layer in "abcd"]
    text = "\n".join([HEADER, *lines, "c,forward,8,4,0,0.3,0,", "d,forward,8,4,0,0.4,0,", ""])
    tables = read(text)
    assert tables == TimingTables.from_rows(tables.to_rows())
    at_8 = [tables[layer, "forward"].rows()[8] for layer in "abcd"]
    assert [row[1] for row in at_8[0]] == [0, 1, 2]
    assert all(rows is at_8[0] for rows in at_8)
    assert tables["c", "forward"].rows()[4] != tables["d", "forward"].rows()[4]
    with pytest.raises(ValueError, match=r"t\.csv, line 11: duplicate candidate"):
        read(text.replace("b,forward,8,8,1,", "b,forward,8,8,0,"))


def test_each_distinct_cell_text_is_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes 62,165 rows read in a fraction of a second: a column's few distinct texts
    are checked, not its every cell (the engine table has 13,567 distinct texts in 621,650
    cells)."""
    checked: list[tuple[str, str]] = []
    original = timings_reading._text_cell

    def counting(column: str, text: str) -> object:
        checked.append((column, text))
        return original(column, text)

    monkeypatch.setattr(timings_reading, "_text_cell", counting)
    monkeypatch.setattr(timings_reading, "_repeated_text_cell", counting)
    TimingTables.read_csv(ENGINE_TABLE)
    assert len(checked) == len(set(checked)) < 20_000


NUMBER_TEXTS = [
    *("0", "1", "007", "42", "2147483647", "2147483648", "1125899906842624", "1125899906842625"),
    *("12345678901234567", "0" * 30 + "5", "1.5", ".5", "5.", "1e3", "1E-3", "2e-400", "1e9"),
    *("1000000000.5", "9" * 400, " 7", "7 ", "+7", "-0", "-0.0", "-1", "1_000", "inf", "nan"),
    *("0x10", "\u0661\u0662", "", " ", "1e", "e3", "1.2.3"),
]


@pytest.mark.parametrize("column", ["batch", "micro_batch", "algo", "time_ms", "workspace_bytes"])
def test_a_number_column_reads_as_its_cells_do_one_by_one(column: str) -> None:
    """Plain numbers are converted a column at a time; each value is the one the cell rules
    give, of the same type, and a column with any cell they refuse is refused."""
    by_rules: dict[str, object] = {}
    for text in NUMBER_TEXTS:
        try:
            by_rules[text] = timings_reading._text_cell(column, text)
        except (TypeError, ValueError):
            continue
    good = list(by_rules)
    values = timings_reading._column_values(column, [*good, *good], 2 * len(good))
    # The same type and value (repr tells 1 from 1.0, and -0.0 from 0.0).
    assert list(map(repr, values)) == [repr(by_rules[text]) for text in good] * 2
    for text in NUMBER_TEXTS:
        if text not in by_rules:
            with pytest.raises((TypeError, ValueError)):
                timings_reading._column_values(column, [*good, text], len(good) + 1)


@pytest.mark.parametrize(
    "text",
    [
        f"{HEADER}\nc,forward,8,8,1,0.1,0,\n",
        f"{HEADER}\n\nc,forward,8,8,1,0.1,0,\n\n",  # blank lines
        f"{HEADER}\nc,forward,8,8,1,0.1,0,",  # no end to the last line
        f"{HEADER}\nc,forward,8,8,1,0.1,0,\nc,forward,8,4,1,0.1,0, eng1\n",
    ],
)
def test_quoted_and_plain_files_read_alike(text: str) -> None:
    """A quote sends a file to the csv module; without one, its lines are split at commas:
    both make the same tables."""
    quoted = text.replace("forward", '"forward"')
    assert read(text) == read(quoted) and list(read(text)) == list(read(quoted))


def test_a_line_separator_is_no_line_end_to_either_reader() -> None:
    text = f"{HEADER}\nc\u2028d,forward,8,8,1,0.1,0,\n"
    for variant in (text, text.replace("forward", '"forward"')):
        with pytest.raises(ValueError, match=r"^t.csv, line 2, column 'layer': .*'\\u2028'"):
            read(variant)


@pytest.mark.parametrize("quote", ["", '"'])
def test_the_first_error_of_the_file_is_reported(quote: str) -> None:
    """A bad cell on line 3 comes before a short row on line 4, whichever reader splits it."""
    text = f"{HEADER}\nc,{quote}forward{quote},8,8,1,0.1,0,\nc,forward,x,8,1,0.1,0,\nc,forward\n"
    with pytest.raises(ValueError, match=r"^t.csv, line 3, column 'batch': batch must be an int"):
        read(text)
    with pytest.raises(ValueError, match=r"^t.csv, line 4: has 2 fields but the header has 8"):
        read(text.replace(",x,8,", ",8,4,"))


def test_a_kernel_at_two_batches_is_refused_at_the_later_row() -> None:
    text = f"{HEADER}\nc,forward,8,8,1,0.1,0,\nc,forward,16,8,2,0.1,0,\nc,forward,16,16,1,0.1,0,\n"
    with pytest.raises(ValueError, match=r"^t.csv, line 3, column 'batch': batch 16 conflicts"):
        read(text)


def test_a_gzip_stream_reads_as_a_gzip_path_does() -> None:
    """Package data and archive members come as open binary files, not paths."""
    with ENGINE_TABLE.open("rb") as f:
        assert TimingTables.read_csv(f) == TimingTables.read_csv(ENGINE_TABLE)


ROOT = Path(__file__).parent.parent


def test_every_reader_of_timings_leaves_opening_them_to_read_csv() -> None:
    """One reader opens timings, gzip or not (paths, streams, archive members), and bounds
    what it reads: its callers neither decompress nor decode them themselves."""
    callers = []
    for path in sorted([*(ROOT / "ucudnn").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]):
        tree = ast.parse(path.read_text())
        calls = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "read_csv"
        ]
        if not calls or path.name == "tables.py":
            continue
        callers.append(path.name)
        arguments = " ".join(ast.unparse(arg) for call in calls for arg in call.args)
        assert not re.search(r"gzip|decompress|StringIO|BytesIO|decode", arguments), path
        assert "gzip" not in _imported(tree), path
    assert {"commands.py", "measured.py", "planner_speed.py", "first_use_replay.py"} <= set(callers)


def _imported(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names
