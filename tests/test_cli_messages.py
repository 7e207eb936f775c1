"""Every line the `ucudnn` command writes on stderr has one shape, "ucudnn VERB: error: ...",
"ucudnn VERB: warning: ..." or "ucudnn VERB: ...", whatever failed; and sizes print in binary
units (KiB, MiB, GiB) everywhere."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import pytest

from ucudnn.errors import UcudnnError, UcudnnWarning
from ucudnn.faces import commands
from ucudnn.faces.cli import main
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.synthetic import model_tables

ERROR_LINE = re.compile(r"ucudnn [a-z]+: error: [^\n]+\n")
# A size in decimal units (512MB, 1.5 GB, 24 kB), as nothing the command prints should have.
DECIMAL_SIZE = re.compile(r"\b[0-9]+(?:\.[0-9]+)?\s?(?:kB|KB|MB|GB|TB)\b")
PLAN = ["plan", "alexnet", "--model", "--batch", "8"]


@pytest.fixture
def timings(tmp_path: Path) -> Path:
    graph = builtin_network("alexnet", batch=8)
    path = tmp_path / "alexnet.csv"
    model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers()).write_csv(path)
    return path


def failing(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    status = main([*argv, "-q"])
    out, err = capsys.readouterr()
    assert out == ""
    return status, err


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        # CommandError
        (["plan"], 2, "give --timings FILE.csv, or a NETWORK"),
        (["tune", "alexnet", "--model", "--memory", "4GiB", "--timings", "x.csv"], 2, "not both"),
        # ValueError
        (["plan", "alexnet", "--model", "--workspace-limit", "lots"], 2, "--workspace-limit"),
        (["tune", "alexnet", "--model", "--memory", "lots"], 2, "--memory='lots'"),
        # OSError
        (["plan", "--timings", "no-such.csv"], 2, "No such file or directory: 'no-such.csv'"),
        # InfeasibleError
        (["tune", "alexnet", "--model", "--memory", "1MiB"], 1, "no plan fits: the smallest"),
        # an empty path, refused before the command runs
        (["plot", "--timings", "x.csv", "--out", ""], 2, "--out is empty; expected a path"),
    ],
)
def test_each_kind_of_error_is_one_line_of_one_shape(
    capsys: pytest.CaptureFixture[str], argv: list[str], status: int, message: str
) -> None:
    got, err = failing(capsys, argv)
    assert got == status
    assert ERROR_LINE.fullmatch(err), err
    assert err.startswith(f"ucudnn {argv[0]}: error: ") and message in err


def test_a_device_error_is_named_in_the_same_shape(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class DeviceLost(UcudnnError):
        pass

    def lose(*args: object) -> None:
        raise DeviceLost("the device fell off the bus")

    monkeypatch.setattr(commands, "load_network", lose)
    status, err = failing(capsys, PLAN)
    assert status == 1
    assert err == "ucudnn plan: error: DeviceLost: the device fell off the bus\n"


def test_plotting_without_matplotlib_is_an_error_of_the_same_shape(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, timings: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    status, err = failing(capsys, ["plot", "--timings", str(timings), "--out", "x"])
    assert status == 1 and ERROR_LINE.fullmatch(err) and "[plot]" in err


def test_ctrl_c_is_an_error_of_the_same_shape(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "load_network", interrupt)
    assert main(PLAN) == 130
    assert capsys.readouterr().err == "ucudnn plan: error: interrupted\n"


def test_a_usage_error_names_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own errors are one line naming the command, with a pointer to its help, and
    no usage block; so is -q beside -v, found after parsing."""
    for argv in (["plan", "--mode", "xx"], ["-q", *PLAN, "-v"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert ERROR_LINE.fullmatch(err), err
        assert err.startswith("ucudnn plan: error: ")
        assert err.endswith("; see ucudnn plan --help\n")


def test_warnings_and_log_records_name_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    load_network = commands.load_network

    def warn_then_load(*args: object) -> object:
        warnings.warn("a test warning", UcudnnWarning, stacklevel=1)
        return load_network(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(commands, "load_network", warn_then_load)
    assert main([*PLAN, "-v"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert "ucudnn plan: warning: a test warning" in lines
    assert any(line.startswith("ucudnn plan: WR plan of 15 kernels") for line in lines)


def test_help_and_output_print_sizes_in_binary_units(
    capsys: pytest.CaptureFixture[str], timings: Path
) -> None:
    for command in ([], ["info"], ["bench"], ["plan"], ["tune"], ["run"], ["plot"], ["demo"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
    for argv in (
        PLAN,
        ["plan", "--timings", str(timings), "--mode", "wd", "--total-workspace", "1GiB"],
        ["tune", "alexnet", "--model", "--batch", "64", "--memory", "4GiB"],
        ["plan", "alexnet", "--model", "--workspace-limit", "lots"],  # what a size may be
    ):
        main(argv)
    printed = "".join(capsys.readouterr())
    assert "MiB" in printed and "GiB" in printed
    assert DECIMAL_SIZE.findall(printed) == []
