"""Every reader error is a ValueError that starts with the file and the line at fault.

Each cell of a good timings CSV and a good layer list is corrupted in turn, on real files; the
reader must refuse every corruption but an empty optional cell, and its error must name the
file, the line of the corrupted row and the column, and show the cell cut short.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ucudnn.planner.layerlist import read_layer_list
from ucudnn.planner.plan import Plan, make_plan_wd
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

TIMINGS = [
    "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes,math_type,deterministic,engine",
    "conv1,forward,4,4,0,2.0,0,default,true,eng0",
    "conv1,forward,4,2,1,0.5,256,tensor_op,false,eng1_k12=-1_k2=0",
    "conv2,backward_data,2,2,1,1.0,0,fma,0,",
]
TIMINGS_OPTIONAL = {"math_type", "deterministic", "engine"}
LAYERS = [
    "source,W,H,C_in,N,C_out,kernel_w,kernel_h,pad_w,pad_h,stride_w,stride_h,groups",
    "conv1,32,32,4,8,8,3,3,1,1,1,1,2",
    "conv2,16,16,8,8,8,1,1,0,0,2,2,1",
]
LAYERS_OPTIONAL = {"source", "pad_w", "pad_h", "stride_w", "stride_h", "groups"}
# Values no column of numbers or words takes ("9" * 5000 is past Python's own digit limit).
BAD_VALUES = ["", "x", "-1", "0x10", "1e400", "9" * 30, "9" * 5000, "nan", "a\x00b", "\u2028"]
# Values no name takes: names are any one line of text, so only these are refused.
BAD_NAMES = ["", "a\x00b", "\u2028", "a\tb", "x" * 100_000 + "\x00"]
NAME_COLUMNS = {"layer", "source"}


def _corruptions(lines: list[str]) -> list[tuple[str, int, str, str]]:
    """(file text, line at fault, column at fault, bad value) for every cell and bad value."""
    header = lines[0].split(",")
    cases = []
    for n in range(1, len(lines)):
        cells = lines[n].split(",")
        for i, column in enumerate(header):
            for bad in BAD_NAMES if column in NAME_COLUMNS else BAD_VALUES:
                text = "\n".join([*lines[:n], ",".join([*cells[:i], bad, *cells[i + 1 :]]),
                                  *lines[n + 1 :]]) + "\n"  # fmt: skip
                cases.append((text, n + 1, column, bad))
    return cases


def _check(path: Path, text: str, line: int, column: str, read) -> None:
    """The corrupted file is refused with the file, line and column first, short and with
    control characters shown escaped."""
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        read(path)
    message = str(caught.value)
    where = rf"{re.escape(str(path))}, line {line}, (layer '\w+', )?column '{column}': "
    assert re.match(where, message), message
    assert "\x00" not in message and "\u2028" not in message, message
    assert len(message) < 400, message


@pytest.mark.parametrize(
    ("lines", "optional", "read"),
    [
        (TIMINGS, TIMINGS_OPTIONAL, TimingTables.read_csv),
        (LAYERS, LAYERS_OPTIONAL, read_layer_list),
    ],
    ids=["timings", "layer list"],
)
def test_every_corrupted_cell_is_refused_and_located(
    tmp_path: Path, lines: list[str], optional: set[str], read
) -> None:
    path = tmp_path / "file.csv"
    for text, line, column, bad in _corruptions(lines):
        # A blank optional cell (U+2028 is white space too) takes its default, but for an
        # engine only an empty cell does: blanks would make a legacy row of an engine's.
        if not bad.strip() and column in optional and not (column == "engine" and bad):
            path.write_text(text, encoding="utf-8")
            read(path)
        else:
            _check(path, text, line, column, read)


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
