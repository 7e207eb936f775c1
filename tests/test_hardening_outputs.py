"""Writers replace only regular files: a FIFO or a device is written to, anything else is
refused, and an empty path is an error (issue 27, item 2)."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from ucudnn.faces.cli import main
from ucudnn.faces.plots import write_plots
from ucudnn.planner.files import atomic_write
from ucudnn.planner.plan import make_plan_wr
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

TUNE = ["tune", "alexnet", "--model", "--memory", "4GiB", "-q"]


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as f:
            into.append(f.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    received: list[bytes] = []
    reader = _read_fifo(path, received)
    with atomic_write(path, "wb") as f:
        f.write(b"through the pipe")
    reader.join(5)
    assert received == [b"through the pipe"]
    assert stat.S_ISFIFO(path.stat().st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_a_device_behind_a_symlink_is_written_to_not_replaced(tmp_path: Path) -> None:
    """A copy of /dev/null where root may make one (root could also replace the real one)."""
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device needs root")
    link = tmp_path / "link"
    link.symlink_to(null)
    with atomic_write(link) as f:
        f.write("gone")
    assert stat.S_ISCHR(null.stat().st_mode) and link.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["link", "null"]


@pytest.mark.skipif(os.geteuid() == 0, reason="as root a regression would replace /dev/null")
def test_dev_null_is_written_to() -> None:
    with atomic_write("/dev/null", "wb") as f:
        f.write(b"x")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_directory_is_refused_and_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "out.csv"
    folder.mkdir()
    with (
        pytest.raises(ValueError, match=rf"^{folder}: cannot write over a directory; expected a "),
        atomic_write(folder) as f,
    ):
        f.write("x")
    assert folder.is_dir() and os.listdir(tmp_path) == ["out.csv"]


def test_a_socket_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # a short path: socket addresses are at most 108 bytes
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("s")
        with pytest.raises(ValueError, match=r"^s: cannot write over a socket"), atomic_write("s"):
            pass
    assert stat.S_ISSOCK(os.stat("s").st_mode) and os.listdir(".") == ["s"]


def test_an_empty_path_is_refused() -> None:
    with pytest.raises(ValueError, match="the path to write is empty"), atomic_write(""):
        pass


def test_plots_refuse_an_empty_folder_and_a_file(tmp_path: Path, monkeypatch) -> None:
    tables = TimingTables([KernelTable("c", "forward", 1, [Candidate(1, 0, 1.0, 0)])])
    plan = make_plan_wr(tables, 1 << 20)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="the folder to write the plots in is empty"):
        write_plots(tables, plan, "")
    Path("file").touch()
    with pytest.raises(ValueError, match=r"^file: not a folder to write the plots in"):
        write_plots(tables, plan, "file")
    assert os.listdir(".") == ["file"]


@pytest.mark.parametrize(
    "argv",
    [
        [*TUNE, "--plot", ""],
        ["plot", "--timings", "t.csv", "--out", ""],
        ["bench", "alexnet", "--export", ""],
        ["info", "--database", ""],
        ["plan", "--timings", ""],
    ],
)
def test_the_command_line_refuses_an_empty_path(capsys, argv: list[str]) -> None:
    option = argv[-2]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"ucudnn {argv[0]}: error: {option} is empty; expected a path\n"
    )


def test_a_tune_plot_into_a_folder_is_an_error(capsys, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert main([*TUNE, "--plot", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"ucudnn tune: error: {tmp_path}: cannot write over a directory; "
        "expected a regular file, a FIFO or a character device\n"
    )
    assert os.listdir(tmp_path) == []


def test_a_tune_plot_goes_through_a_fifo(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "plot.png"
    os.mkfifo(path)
    received: list[bytes] = []
    reader = _read_fifo(path, received)
    assert main([*TUNE, "--plot", str(path)]) == 0
    reader.join(5)
    assert received[0].startswith(b"\x89PNG\r\n\x1a\n") and stat.S_ISFIFO(path.stat().st_mode)
