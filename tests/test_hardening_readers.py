"""Readers take a bounded amount, and only from regular files and pipes (issue 27, item 9)."""

from __future__ import annotations

import gzip
import io
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ucudnn.faces.cli import main
from ucudnn.planner import files
from ucudnn.planner.layerlist import read_layer_list
from ucudnn.planner.measured import MeasuredTable
from ucudnn.planner.tables import TimingTables

HEADER = "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes\n"
ROW = "c,forward,1,1,0,1.0,0\n"
BOUND = 64 << 10  # the bound these tests read under, so that going past it is cheap


@pytest.fixture
def small_bound(monkeypatch) -> None:
    monkeypatch.setattr(files, "MAX_READ_BYTES", BOUND)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    yield path


def _feed(path: Path, data: bytes) -> threading.Thread:
    """Write `data` into the FIFO `path` from a thread, stopping when the reader goes away."""

    def write() -> None:
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass  # the reader stopped at its bound

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_directory_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=rf"^{tmp_path}: cannot read a directory; expected a "):
        TimingTables.read_csv(tmp_path)


def test_a_character_device_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^/dev/zero: cannot read a character device"):
        TimingTables.read_csv("/dev/zero")
    with pytest.raises(ValueError, match=r"^/dev/null: cannot read a character device"):
        read_layer_list("/dev/null")


def test_a_fifo_is_read(fifo: Path) -> None:
    writer = _feed(fifo, (HEADER + ROW).encode())
    tables = TimingTables.read_csv(fifo)
    writer.join(5)
    assert len(tables) == 1


def test_an_endless_fifo_stops_at_the_bound(fifo: Path, small_bound: None) -> None:
    writer = _feed(fifo, (HEADER + ROW * (2 * BOUND // len(ROW))).encode())
    with pytest.raises(ValueError, match=rf"^{fifo}: larger than 64 KiB, the most ucudnn reads"):
        TimingTables.read_csv(fifo)
    writer.join(5)


def test_a_file_at_the_bound_is_read_and_one_byte_more_is_not(
    tmp_path: Path, small_bound: None
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(HEADER + ROW + "\n" * (BOUND - len(HEADER) - len(ROW)))  # blank lines
    assert path.stat().st_size == BOUND
    assert len(TimingTables.read_csv(path)) == 1
    with open(path, "a") as f:
        f.write("\n")
    with pytest.raises(ValueError, match=r"t.csv: larger than 64 KiB"):
        TimingTables.read_csv(path)


@pytest.mark.parametrize("text", [True, False])
def test_open_streams_are_bounded(small_bound: None, text: bool) -> None:
    data = HEADER + ROW * (2 * BOUND // len(ROW))
    stream = io.StringIO(data) if text else io.BytesIO(data.encode())
    with pytest.raises(ValueError, match=r"^<stream>: larger than 64 KiB"):
        TimingTables.read_csv(stream)


def _bomb(path: Path) -> Path:
    """A gzip file of a few KB that expands to 16 MiB."""
    with gzip.open(path, "wb") as f:
        f.write(HEADER.encode())
        f.write(b"\n" * (16 << 20))
    return path


def test_a_gzip_bomb_stops_at_the_bound(tmp_path: Path, small_bound: None) -> None:
    path = _bomb(tmp_path / "t.csv.gz")
    assert path.stat().st_size < 100_000
    with gzip.open(path) as f, pytest.raises(ValueError, match=r"larger than 64 KiB"):
        TimingTables.read_csv(f)
    table = MeasuredTable("t", "float32", "NCHW", "default", {}, "a label", path)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: larger than 64 KiB"):
        table.read()


def test_the_command_line_says_what_it_refuses(capsys, tmp_path: Path) -> None:
    assert main(["plan", "--timings", "/dev/zero"]) == 2
    assert capsys.readouterr().err == (
        "ucudnn plan: error: /dev/zero: cannot read a character device; "
        "expected a regular file or a FIFO\n"
    )
    assert main(["plan", "--timings", str(tmp_path)]) == 2
    assert f"error: {tmp_path}: cannot read a directory" in capsys.readouterr().err


def test_a_layer_list_is_read_from_a_fifo_and_a_device_is_refused_by_name(
    capsys, fifo: Path
) -> None:
    layers = Path(__file__).parents[1] / "ucudnn" / "planner" / "data" / "alexnet.csv"
    writer = _feed(fifo, layers.read_bytes())
    assert main(["plan", str(fifo), "--model", "--json"]) == 0
    writer.join(5)
    assert capsys.readouterr().out.count('"layer": "conv') == 5 * 3  # AlexNet's 5 layers, 3 kernels
    assert main(["plan", "/dev/null", "--model"]) == 2
    assert "error: /dev/null: cannot read a character device" in capsys.readouterr().err
