"""Numbers as users type them (options, environment variables): one bounded parser, errors that
say the range and quote a huge value cut short, never Python's own words about it."""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction

import pytest

from ucudnn.core.checks import MAX_NUMBER_TEXT, parse_float, parse_int
from ucudnn.faces.cli import main
from ucudnn.planner.config import MAX_BYTES, Config, byte_count, parse_size
from ucudnn.planner.memory import FrameworkOverhead, parse_overhead
from ucudnn.runtime.options import HandleOptions

HUGE = "9" * 5000  # past Python's 4300-digit limit on int()
LONG = "9" * 400  # within it, but far past any range


@pytest.mark.parametrize(
    ("text", "expected"),
    [("7", 7), (" 12 ", 12), ("+3", 3), ("2147483647", 2**31 - 1), ("0" * 39 + "1", 1)],
)
def test_integers_within_the_range_are_read(text: str, expected: int) -> None:
    assert parse_int(text, "--n", 1, 2**31 - 1) == expected


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("0", "is out of range"),
        ("-1", "is out of range"),
        ("2147483648", "is out of range"),
        (LONG, "is out of range"),
        (HUGE, "is out of range"),
        ("0" * (MAX_NUMBER_TEXT + 1), "is out of range"),  # too long to read, whatever it says
        ("", "is not an integer"),
        ("1e3", "is not an integer"),
        ("1_000", "is not an integer"),
        ("١٢", "is not an integer"),  # Arabic-Indic digits, which int() would take
        ("x" * 100_000, "is not an integer"),
    ],
)
def test_integers_out_of_range_or_malformed_say_the_range(text: str, what: str) -> None:
    with pytest.raises(ValueError, match=rf"^--n=.* {what}") as caught:
        parse_int(text, "--n", 1, 2**31 - 1)
    message = str(caught.value)
    assert message.endswith("expected an integer from 1 to 2147483647")
    assert len(message) < 200 and "4300" not in message


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("0", "is out of range"),
        ("1e400", "is out of range"),  # float() reads it as inf
        ("1e-400", "is out of range"),  # and this as 0
        (HUGE, "is out of range"),
        ("inf", "is not a number"),
        ("nan", "is not a number"),
        ("infinity", "is not a number"),
        ("0x10", "is not a number"),
    ],
)
def test_numbers_out_of_range_or_malformed_say_the_range(text: str, what: str) -> None:
    with pytest.raises(ValueError, match=rf"^--s=.* {what}[:;] expected a number from 0.01 to 10$"):
        parse_float(text, "--s", 0.01, 10.0)


@pytest.mark.parametrize("text", ["2", " 0.5", "1e0", ".25", "10."])
def test_numbers_within_the_range_are_read(text: str) -> None:
    assert parse_float(text, "--s", 0.01, 10.0) == float(text)


def test_a_million_digit_size_is_refused_at_once() -> None:
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"is larger than any memory"):
        parse_size("9" * 1_000_000, "--memory")
    assert time.perf_counter() - start < 1  # int() of it would take a minute


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0" * 1000 + "64MiB", 64 << 20),  # leading zeros are no size
        ("1." + "0" * 100_000 + "GiB", 1 << 30),  # nor are a fraction's digits
        (str(MAX_BYTES), MAX_BYTES),
    ],
)
def test_long_sizes_that_fit_are_read(text: str, expected: int) -> None:
    assert parse_size(text, "--memory") == expected


@pytest.mark.parametrize("text", [LONG, HUGE, f"{LONG}+30%", f"1GiB+{LONG}%", f"{HUGE}%"])
def test_huge_overheads_say_what_is_out_of_range(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_overhead(text, "--framework-overhead")
    message = str(caught.value)
    assert message.startswith("--framework-overhead")
    assert "larger than any memory" in message or "from 0 to 10000" in message
    assert len(message) < 250


def test_an_overhead_of_a_huge_fraction_is_refused() -> None:
    with pytest.raises(ValueError, match="per_sample must be at most 100"):
        FrameworkOverhead(0, Fraction(10**400))


@pytest.mark.parametrize(
    "variable", ["UCUDNN_DEFAULT_WORKSPACE_LIMIT", "UCUDNN_TOTAL_WORKSPACE_SIZE"]
)
def test_huge_sizes_in_the_environment(variable: str) -> None:
    with pytest.raises(
        ValueError, match=rf"^{variable}='9{{60}}'\.\.\. \(5000 characters\) is lar"
    ):
        Config.from_env({variable: HUGE})


# -- every numeric option of the command, refused in one line ----------------------------------
TUNE = ["tune", "alexnet", "--model", "--memory", "16GiB"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["plan", "alexnet", "--model", "--batch", HUGE], "expected an integer from 1 to 2147"),
        (["bench", "alexnet", "--batch", LONG], "expected an integer from 1 to 2147483647"),
        (["demo", "--batch", "99999999999999999999"], "--batch='99999999999999999999' is out"),
        (["run", "alexnet", "--repeats", HUGE], "expected an integer from 1 to 10000"),
        (["run", "alexnet", "--repeats", "0"], "--repeats='0' is out of range"),
        (["plan", "alexnet", "--model", "--time-limit", HUGE], "a number from 1e-09 to 86400"),
        ([*TUNE, "--time-limit", "nan"], "--time-limit='nan' is not a number"),
        ([*TUNE, "--time-limit", "0"], "--time-limit='0' is out of range"),
        ([*TUNE, "--batches", HUGE], "expected an integer from 1 to 2147483647"),
        ([*TUNE, "--batches", f"32,{LONG}"], "batch='999"),
        ([*TUNE, "--batches", ""], "--batches is empty"),
        ([*TUNE, "--framework-overhead", LONG], "larger than any memory"),
        ([*TUNE, "--framework-overhead", HUGE], "larger than any memory"),
        ([*TUNE, "--framework-overhead", f"{LONG}%"], "expected a number from 0 to 10000"),
        ([*TUNE, "--framework-overhead", f"{HUGE}%"], "expected a number from 0 to 10000"),
        (["tune", "alexnet", "--model", "--memory", HUGE], "larger than any memory"),
        (["plan", "alexnet", "--model", "--workspace-limit", HUGE], "larger than any memory"),
        (
            ["plan", "alexnet", "--model", "--mode", "wd", "--total-workspace", HUGE],
            "larger than any memory",
        ),
        (["demo", "--workspace-limit", HUGE], "larger than any memory"),
    ],
)
def test_numeric_options_refuse_huge_values_in_one_line(capsys, argv, expected) -> None:
    assert main([*argv, "-q"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"ucudnn {argv[0]}: error: ") and err.count("\n") == 1
    # At most two excerpts: of the option's text, and of the item in it that is wrong.
    assert expected in err and len(err) < 400 and "4300" not in err


def test_demo_at_the_largest_limit_plans_without_echoing_a_product(capsys) -> None:
    # Its WD budget is the limit once per kernel: more than any memory, so any memory.
    assert main(["demo", "--workspace-limit", str(MAX_BYTES)]) in (0, 1)  # 1: a GPU run failed
    out, err = capsys.readouterr()
    assert "error" not in err and str(MAX_BYTES * 15) not in out + err


def test_numeric_options_in_range_are_read_as_numbers(monkeypatch) -> None:
    from ucudnn.faces import commands

    seen = {}

    def network(args):
        seen.update(vars(args))
        raise commands.CommandError("stop here")

    monkeypatch.setattr(commands, "_network", network)
    assert main(["plan", "alexnet", "--model", "--batch", " 16 ", "--time-limit", "1e1"]) == 2
    assert (seen["batch"], seen["time_limit"]) == (16, 10.0)
    assert type(seen["batch"]) is int and type(seen["time_limit"]) is float


# -- sizes are whole bytes, however they arrive -------------------------------------------------
def _refusal(read: Callable[[], object]) -> str:
    with pytest.raises(ValueError) as caught:
        read()
    return str(caught.value)


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        pytest.param(
            lambda: byte_count("1.5", "workspace_limit"),
            "workspace_limit='1.5' is not a whole number of bytes",
            id="byte_count",
        ),
        pytest.param(
            lambda: HandleOptions.resolve(total_workspace="0.0015KB", environ={}),
            "total_workspace='0.0015KB' is not a whole number of bytes: it is 1.5 bytes",
            id="Handle",
        ),
        pytest.param(
            lambda: Config.from_env({"UCUDNN_DEFAULT_WORKSPACE_LIMIT": "1.0000001KiB"}),
            "UCUDNN_DEFAULT_WORKSPACE_LIMIT='1.0000001KiB' is not a whole number of bytes: "
            "it is 1024.0001024 bytes",
            id="environment",
        ),
        pytest.param(
            lambda: parse_overhead("1.5+10%", "--framework-overhead"),
            "--framework-overhead='1.5' is not a whole number of bytes",
            id="overhead",
        ),
    ],
)
def test_part_of_a_byte_is_refused_with_the_reason_everywhere(read, expected) -> None:
    assert _refusal(read) == expected


def test_the_command_refuses_part_of_a_byte_in_one_line(capsys) -> None:
    argv = ["plan", "alexnet", "--model", "--workspace-limit", "1.5", "-q"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", "ucudnn plan: error: --workspace-limit='1.5' is not a whole number "
                              "of bytes\n")  # fmt: skip
