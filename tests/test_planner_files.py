"""Reading and writing files: located errors, UTF-8 decoding, CSV records, atomic writes."""

from __future__ import annotations

import csv
import io
import os
import random
import stat
from pathlib import Path

import pytest

from ucudnn.core.problem import ConvProblem
from ucudnn.planner import files
from ucudnn.planner.files import (
    CsvRecords,
    FieldError,
    atomic_write,
    decode,
    field_errors,
    located_error,
)
from ucudnn.planner.layerlist import write_layer_list
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables


def test_located_errors_put_the_place_first() -> None:
    assert str(located_error(ValueError("bad"), "t.csv", "line 3")) == "t.csv, line 3: bad"
    inner = FieldError("column 'batch'", "batch must be >= 1")
    assert str(inner) == "column 'batch': batch must be >= 1"
    located = located_error(inner, "t.csv", "line 3", "")
    assert str(located) == "t.csv, line 3, column 'batch': batch must be >= 1"
    assert type(located) is ValueError


def test_field_errors_nest_places_and_turn_type_errors_into_value_errors() -> None:
    with (
        pytest.raises(FieldError) as info,
        field_errors("kernel a/forward"),
        field_errors("field 'offset'"),
    ):
        raise TypeError("offset must be an integer")
    assert (info.value.place, info.value.message) == (
        "kernel a/forward, field 'offset'",
        "offset must be an integer",
    )
    with pytest.raises(KeyError), field_errors("x"):
        raise KeyError("not ours: passes through")


@pytest.mark.parametrize(
    ("data", "line", "column"),
    [
        (b"\xff", 1, 1),
        (b"abc\xff", 1, 4),
        (b"a\nb\nc\xc3(d", 3, 2),
        ("é\nü".encode() + b"\xff", 2, 2),  # columns count characters, not bytes
        (b"\xef\xbb\xbfab\xff", 1, 3),  # the byte-order mark is no column
    ],
)
def test_undecodable_bytes_are_located(data: bytes, line: int, column: int) -> None:
    with pytest.raises(ValueError, match=rf"^f.csv, line {line}, column {column}: not UTF-8"):
        decode(data, "f.csv")


def test_decoding_drops_the_byte_order_mark() -> None:
    assert decode("\ufeffa,b".encode(), "f") == "a,b"


def _records(text: str) -> CsvRecords:
    return CsvRecords(io.StringIO(text), "<csv>")


def test_records_carry_the_line_they_start_on() -> None:
    records = _records('a,b\n1,2\n\n"x\ny",3\n\n\n4,5\n')
    assert records.header == ["a", "b"]
    assert list(records) == [
        (2, {"a": "1", "b": "2"}),
        (4, {"a": "x\ny", "b": "3"}),
        (8, {"a": "4", "b": "5"}),
    ]


def test_records_refuse_repeated_columns_and_ragged_rows() -> None:
    with pytest.raises(ValueError, match=r"^<csv>, line 1, column 'a': the column is repeated"):
        _records("a,b, a\n")
    with pytest.raises(ValueError, match=r"^<csv>, line 3: has 1 fields but the header has 2"):
        list(_records("a,b\n1,2\n3\n"))
    with pytest.raises(ValueError, match=r"^<csv>, line 1: empty file"):
        _records("")
    long = "c" * 100_000
    with pytest.raises(ValueError) as caught:
        _records(f"{long},{long}\n")
    assert str(caught.value) == (
        f"<csv>, line 1, column {'c' * 60!r}... (100000 characters): the column is repeated"
    )


def _as_the_csv_module_reads(text: str) -> tuple[list[tuple[int, dict[str, str]]], str | None]:
    """The records of `text` before its first of another width than the header, with their
    lines, and that one's error: what CsvRecords must give, found by the csv module."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader)
    records: list[tuple[int, dict[str, str]]] = []
    for fields in reader:
        if not fields:
            continue
        if len(fields) != len(header):
            line = reader.line_num
            return (
                records,
                f"line {line}: has {len(fields)} fields but the header has {len(header)}",
            )
        records.append((reader.line_num, dict(zip(header, fields, strict=True))))
    return records, None


def test_plain_records_are_those_the_csv_module_reads() -> None:
    """Lines without quotes are split in bulk; lines of other widths, also where one too long
    and one too short make up the count of cells between them, are found as the csv module
    finds them, and so are blank lines and a last line without its end."""
    rng = random.Random(37)
    for _ in range(400):
        width = rng.randint(1, 3)
        lines = [",".join(f"h{i}" for i in range(width))]
        for _ in range(rng.randint(0, 6)):
            count = rng.choice([width, width, width, width + 1, max(width - 1, 1), 0])
            lines.append(",".join(rng.choice(["", "x", "12", " y"]) for _ in range(count)))
        text = "\n".join(lines) + rng.choice(["\n", ""])
        expected, error = _as_the_csv_module_reads(text)
        read: list[tuple[int, dict[str, str]]] = []
        try:
            for record in _records(text):
                read.append(record)
        except ValueError as exc:
            assert str(exc) == f"<csv>, {error}", text
        else:
            assert error is None, text
        assert read == expected, text


def test_csv_library_errors_become_located_value_errors() -> None:
    huge = "x" * 200_000
    with pytest.raises(ValueError, match=r"^<csv>, line 3: field larger than field limit"):
        list(_records(f"a,b\n1,2\n{huge},3\n"))


# -- atomic writes --------------------------------------------------------------------------
def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_write_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    with atomic_write(path) as f:
        f.write("first\n")
        assert not path.exists()  # nothing is visible before the block ends
    assert path.read_text() == "first\n"
    with atomic_write(path, "wb") as f:
        f.write(b"second\n")
    assert path.read_bytes() == b"second\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_an_error_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with pytest.raises(RuntimeError, match="interrupted"), atomic_write(path) as f:
        f.write("half a new fi")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def _write_timings(path: Path) -> None:
    TimingTables([KernelTable("c", "forward", 1, [Candidate(1, 0, 1.0, 0)])]).write_csv(path)


def _write_layers(path: Path) -> None:
    write_layer_list([("c", ConvProblem.create(2, 3, 4, (8, 8), 3))], path)


@pytest.mark.parametrize("write", [_write_timings, _write_layers])
def test_a_failing_disk_keeps_the_old_file(tmp_path: Path, monkeypatch, write) -> None:
    path = tmp_path / "t.csv"
    path.write_text("old\n")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write(path)
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["t.csv"]
    monkeypatch.undo()
    write(path)
    assert path.read_text().startswith(("layer,", "source,"))


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_files_get_the_permissions_open_would_give(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        with atomic_write(tmp_path / "new.txt") as f:
            f.write("x")
        with open(tmp_path / "plain.txt", "w") as f:
            f.write("x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "new.txt") == _mode(tmp_path / "plain.txt") == 0o666 & ~umask


def test_an_existing_file_keeps_its_permissions(tmp_path: Path) -> None:
    path = tmp_path / "shared.txt"
    path.write_text("old")
    path.chmod(0o640)
    with atomic_write(path) as f:
        f.write("new")
    assert _mode(path) == 0o640 and path.read_text() == "new"


def test_a_symlink_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "data.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with atomic_write(link) as f:
        f.write("new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_missing_folder_names_the_file_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "out.txt"
    with pytest.raises(FileNotFoundError) as info, atomic_write(path) as f:
        f.write("x")
    assert info.value.filename == str(path)


def test_only_whole_file_modes(tmp_path: Path) -> None:
    with (
        pytest.raises(ValueError, match="mode must be 'w' or 'wb'"),
        atomic_write(tmp_path / "x", "a"),
    ):
        pass


def test_plots_are_written_whole(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from ucudnn.faces.plots import write_plots
    from ucudnn.planner.plan import make_plan_wr

    table = KernelTable("c", "forward", 2, [Candidate(2, 0, 2.0, 0), Candidate(1, 1, 0.5, 64)])
    tables = TimingTables([table])
    plan = make_plan_wr(tables, 1 << 20)
    paths = write_plots(tables, plan, tmp_path)
    assert [p.name for p in paths] == ["desirable_sets.png", "breakdown.png"]
    before = {p: p.read_bytes() for p in paths}
    assert all(data.startswith(b"\x89PNG") for data in before.values())

    def broken(self, fname, **kwargs) -> None:
        fname.write(b"\x89PNG half")
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError, match="renderer crashed"):
        write_plots(tables, plan, tmp_path)
    assert {p: p.read_bytes() for p in paths} == before
    assert sorted(os.listdir(tmp_path)) == ["breakdown.png", "desirable_sets.png"]
