"""What the command line takes and says before a command runs: one-line usage errors naming
the subcommand, no abbreviated options, values that start with "-", the right message for
each conflict, help texts that state every default in one form, and a light `--help`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ucudnn.faces.cli import main
from ucudnn.faces.parser import build_parser
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

ONE_LINE = re.compile(r"ucudnn(?: [a-z]+)?: error: [^\n]+; see ucudnn(?: [a-z]+)? --help\n")


def usage_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert ONE_LINE.fullmatch(err), err
    return err


def test_an_unknown_option_is_one_line_naming_the_subcommand(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = usage_error(capsys, ["plan", "alexnet", "--model", "--no-such-option"])
    assert err.startswith("ucudnn plan: error: unrecognized arguments: --no-such-option;")
    err = usage_error(capsys, ["--no-such-option"])
    assert err.startswith("ucudnn: error: ")


def test_options_are_never_abbreviated(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys, ["plan", "alexnet", "--model", "--engine", "on"])
    assert "unrecognized arguments: --engine" in err
    usage_error(capsys, ["plan", "alexnet", "--mod"])


def test_a_value_that_starts_with_a_dash_reaches_its_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--workspace-limit -64MiB` is a bad size, as `--workspace-limit=-64MiB` is, not an
    option without its argument; and it is refused before anything is planned or said."""
    for argv in (
        ["plan", "alexnet", "--model", "--workspace-limit", "-64MiB"],
        ["plan", "alexnet", "--model", "--total-workspace", "-1"],
    ):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith("ucudnn plan: error: --") and "is not a size" in err
        assert err.count("\n") == 1, err  # nothing printed before the error
    # An option after an option that takes a value is still an option.
    err = usage_error(capsys, ["plan", "alexnet", "--batch", "--model"])
    assert "argument --batch: expected one argument" in err


def test_each_conflict_names_what_was_given(capsys: pytest.CaptureFixture[str]) -> None:
    timings = Path(__file__).parent / "data" / "engines-resnet50-fp16-nchw.csv.gz"  # unread
    assert main(["plan", "--timings", str(timings), "--model", "-q"]) == 2
    assert capsys.readouterr().err == (
        "ucudnn plan: error: give --timings FILE or --model, not both\n"
    )
    assert main(["plan", "alexnet", "--timings", str(timings), "-q"]) == 2
    assert capsys.readouterr().err == (
        "ucudnn plan: error: give --timings FILE or a NETWORK, not both\n"
    )


def test_a_missing_layer_list_is_said_to_be_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "mynet.csv"
    assert main(["plan", str(missing), "--model"]) == 2
    assert capsys.readouterr().err == (
        f"ucudnn plan: error: layer list '{missing}': no such file\n"
    )


def test_engines_off_plans_a_timings_file_with_legacy_algorithms_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Handle with engines off runs no engine configuration, so a plan for it has none."""
    table = KernelTable("conv", "forward", 8, [
        Candidate(8, 1, 2.0, 0),  # legacy
        Candidate(8, 7, 1.0, 0, engine="eng7_k2=1"),  # an engine, faster
    ])  # fmt: skip
    path = tmp_path / "t.csv"
    TimingTables([table]).write_csv(path)
    monkeypatch.delenv("UCUDNN_ENGINES", raising=False)
    plans = {}
    for argv, env in ((["--engines", "on"], None), (["--engines", "off"], None), ([], "off")):
        if env is not None:
            monkeypatch.setenv("UCUDNN_ENGINES", env)
        assert main(["plan", "--timings", str(path), "--json", *argv]) == 0
        out, err = capsys.readouterr()
        plans[tuple(argv) or env] = (out, err)
    assert '"engine": "eng7_k2=1"' in plans[("--engines", "on")][0]
    for key in (("--engines", "off"), "off"):
        out, err = plans[key]
        assert '"engine": ""' in out and "eng7" not in out
        assert "legacy algorithms only (engines off)" in err


def test_every_subcommand_describes_itself_and_its_exit_statuses() -> None:
    parser = build_parser()
    for name, command in parser.commands.items():
        assert command.description, name
        assert command.epilog is not None and command.epilog.startswith("Exit status: 0 "), name
        assert "130 interrupted" in command.epilog, name


def test_every_option_says_what_it_does_and_its_default_in_one_form() -> None:
    """An option with a default says "(default: ...)"; one the environment changes names
    the variable there, as "(default: UCUDNN_..., else ...)"."""
    for name, command in build_parser().commands.items():
        for action in command._actions:
            place = f"{name} {'/'.join(action.option_strings) or action.dest}"
            assert action.help, place
            quiet = action.dest in ("help", "quiet", "verbose_after_command")
            if action.default not in (None, False, 0) and action.option_strings and not quiet:
                assert "(default: " in action.help, place
            if "UCUDNN_" in action.help:
                assert re.search(r"\(default: [^)]*UCUDNN_[A-Z_]+", action.help), place
            if "--policy" in action.option_strings:
                assert "(default: UCUDNN_BATCH_SIZE_POLICY, else powerOfTwo)" in action.help


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["plan", "--help"]])
def test_help_and_version_load_neither_numpy_nor_the_planner(argv: list[str]) -> None:
    """What makes `ucudnn --help` cost a fraction of a second: it imports only the parser.
    (benchmarks/import_time.py times it.)"""
    code = (
        "import sys\n"
        "from ucudnn.faces.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'networkx', 'mip')"
        " or m.startswith(('ucudnn.planner.tables', 'ucudnn.planner.timings_reading',"
        " 'ucudnn.planner.kernel_table', 'ucudnn.planner.schedule', 'ucudnn.planner.candidate',"
        " 'ucudnn.planner.values', 'ucudnn.faces.commands', 'ucudnn._native')))\n"
        "print(heavy, file=sys.stderr)\n"
        "sys.exit(1 if heavy else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
