"""Every reader error is a ValueError that starts with the file and the line at fault.

Each cell of a good timings CSV and a good layer list is corrupted in turn, on real files; the
error must name the file, the line of the corrupted row and, for a bad value, its column.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ucudnn.planner.layerlist import read_layer_list
from ucudnn.planner.plan import Plan, make_plan_wd
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

TIMINGS = [
    "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes,math_type,deterministic",
    "conv1,forward,4,4,0,2.0,0,default,true",
    "conv1,forward,4,2,1,0.5,256,tensor_op,false",
    "conv2,backward_data,2,2,1,1.0,0,fma,0",
]
LAYERS = [
    "source,W,H,C_in,N,C_out,kernel_w,kernel_h,pad_w,pad_h,stride_w,stride_h,groups",
    "conv1,32,32,4,8,8,3,3,1,1,1,1,2",
    "conv2,16,16,8,8,8,1,1,0,0,2,2,1",
]
# Values no column takes, each with what the reader must say about it.
BAD_VALUES = ["", "x", "-1", "0x10", "1e400", "9" * 30, "nan", "a\x00b", "\u2028"]


def _corruptions(lines: list[str]) -> list[tuple[str, int, str]]:
    """(file text, line at fault, column at fault) for every cell and bad value."""
    header = lines[0].split(",")
    cases = []
    for n in range(1, len(lines)):
        cells = lines[n].split(",")
        for i, column in enumerate(header):
            for bad in BAD_VALUES:
                text = "\n".join([*lines[:n], ",".join([*cells[:i], bad, *cells[i + 1 :]]),
                                  *lines[n + 1 :]]) + "\n"  # fmt: skip
                cases.append((text, n + 1, column))
    return cases


def _check(path: Path, text: str, line: int, column: str, read) -> None:
    path.write_text(text, encoding="utf-8")
    try:
        read(path)
    except ValueError as exc:
        message = str(exc)
        if "(its first row)" in message:  # a renamed layer left its old table incomplete
            assert re.match(rf"{re.escape(str(path))}, line \d+ \(its first row\): ", message)
        else:
            where = rf"{re.escape(str(path))}, line {line}, (layer '\w+', )?column '{column}': "
            assert re.match(where, message), message
        assert "\x00" not in message and "\u2028" not in message, message  # shown escaped
    # Any other exception type escapes and fails the test. A corruption that still reads is
    # fine: an empty optional cell takes its default.


def test_every_corrupted_timings_cell_is_located(tmp_path: Path) -> None:
    path = tmp_path / "timings.csv"
    for text, line, column in _corruptions(TIMINGS):
        _check(path, text, line, column, TimingTables.read_csv)


def test_every_corrupted_layer_list_cell_is_located(tmp_path: Path) -> None:
    path = tmp_path / "layers.csv"
    for text, line, column in _corruptions(LAYERS):
        _check(path, text, line, column, read_layer_list)


@pytest.mark.parametrize(
    ("raw", "line", "column"),
    [(b"\xff", 3, 1), (b"conv\xc3(", 3, 5), (b"\xe2\x82", 3, 1)],
)
def test_undecodable_bytes_are_located(tmp_path: Path, raw: bytes, line: int, column: int) -> None:
    for lines, read in ((TIMINGS, TimingTables.read_csv), (LAYERS, read_layer_list)):
        data = "\n".join(lines[:2]).encode() + b"\n" + raw + lines[2].encode()[4:] + b"\n"
        path = tmp_path / "bad.csv"
        path.write_bytes(data)
        where = rf"^{re.escape(str(path))}, line {line}, column {column}: not UTF-8"
        with pytest.raises(ValueError, match=where):
            read(path)


def test_plan_documents_are_located_at_their_line(tmp_path: Path) -> None:
    tables = TimingTables(
        [KernelTable("a", "forward", 2, [Candidate(2, 0, 1.0, 0), Candidate(1, 1, 0.2, 512)])]
    )
    good = make_plan_wd(tables, 4096).to_json()
    for n, bad in ((8, "{"), (20, '"offset": "zero",'), (3, '"mode": "wr", "mode": "wd",')):
        lines = good.splitlines()
        lines.insert(n, bad)
        path = tmp_path / "plan.json"
        path.write_text("\n".join(lines))
        with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}, line \d+"):
            Plan.from_json(path.read_bytes(), str(path))
    assert Plan.from_json(good) == make_plan_wd(tables, 4096)
