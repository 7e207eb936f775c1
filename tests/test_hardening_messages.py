"""Errors quote a long value cut short (never a pasted list back whole), and empty inputs say
what is missing rather than what went wrong later."""

from __future__ import annotations

import pytest

from tests.schema_validator import SchemaError, validate
from ucudnn.core.checks import boolean
from ucudnn.faces.cli import main
from ucudnn.planner.config import Config, file_path
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.networks import builtin_network, load_network
from ucudnn.planner.plan import Plan, make_plan_wr
from ucudnn.planner.policies import policy_text
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

SIZES = tuple(range(1, 5000))
PLOT = {"format": "ucudnn-plot", "version": 1}
LIST = ",".join(map(str, SIZES))  # 23888 characters


def test_a_long_policy_is_written_cut_short() -> None:
    assert policy_text(SIZES) == "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,...,4999 (4999 sizes)"
    assert policy_text((1, 2, 32)) == "1,2,32" and policy_text("all") == "all"


def test_a_plan_of_a_long_policy_reports_it_cut_short(capsys) -> None:
    assert main(["plan", "alexnet", "--model", "--batch", "8", "-q", "--policy", LIST]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "policy 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,...,4999 (4999 sizes)," in first


def test_no_plan_fits_names_a_long_policy_cut_short() -> None:
    table = KernelTable("conv1", "forward", 4, [Candidate(4, 0, 1.0, 100)])
    with pytest.raises(InfeasibleError) as caught:
        make_plan_wr(TimingTables([table]), 50, policy=SIZES)
    assert "(4999 sizes)" in str(caught.value) and len(str(caught.value)) < 400


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "alexnet", "--model", "--policy", LIST + ",x"],
        ["plan", "alexnet", "--model", "--policy", LIST + ",99999999999"],
        ["plan", "x" * 24_000, "--model"],
        ["plan", "alexnet", "--model", "--workspace-limit", "x" * 24_000],
        ["plan", "--timings", "x" * 24_000],  # too long a name for the OS, which says so
        ["plan", "--timings", "x" * 200],  # no such file
    ],
)
def test_errors_quote_a_long_value_cut_short(capsys, argv) -> None:
    assert main([*argv, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400 and "characters)" in err


def test_python_errors_quote_long_values_cut_short(monkeypatch) -> None:
    long = "y" * 24_000
    for call in (
        lambda: builtin_network(long),
        lambda: load_network(long),
        lambda: boolean([1] * 10_000, "check"),
        lambda: file_path(long + "\0", "database"),
        lambda: file_path([long], "database"),
        lambda: Config(batch_size_policy=10**5000),
        lambda: validate({**PLOT, "layer": 1, "files": [long * 2]}),
        lambda: validate({**PLOT, "layer": "c", "files": [], long: 1}),
    ):
        with pytest.raises((TypeError, ValueError, SchemaError)) as caught:
            call()
        assert len(str(caught.value)) < 400, str(caught.value)[:200]


# -- empty inputs ----------------------------------------------------------------------------
HEADER = "source,W,H,C_in,N,C_out,kernel_w,kernel_h,pad_w,pad_h,stride_w,stride_h\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "LAYERS", "--model"],
        ["plan", "LAYERS"],
        ["tune", "LAYERS", "--model", "--memory", "1GiB"],
        ["bench", "LAYERS"],
        ["demo", "--network", "LAYERS"],
    ],
)
def test_an_empty_layer_list_says_so(tmp_path, capsys, argv) -> None:
    layers = tmp_path / "layers.csv"
    layers.write_text(HEADER)
    assert main([str(layers) if a == "LAYERS" else a for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.endswith("layers.csv has no layers: expected a header and at least one row\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--timings", "TIMINGS"],
        ["plot", "--timings", "TIMINGS"],
        ["tune", "alexnet", "--timings", "TIMINGS", "--memory", "1GiB"],
    ],
)
def test_timings_without_rows_say_so(tmp_path, capsys, argv) -> None:
    timings = tmp_path / "t.csv"
    TimingTables().write_csv(timings)
    assert main([*(str(timings) if a == "TIMINGS" else a for a in argv), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.endswith("t.csv has no timing rows: expected a header and at least one row\n")


def test_an_empty_policy_option_is_refused_not_ignored(capsys, monkeypatch) -> None:
    assert main(["plan", "alexnet", "--model", "--policy", " ", "-q"]) == 2
    assert "--policy is empty; expected one of undivided" in capsys.readouterr().err
    # An empty variable is unset, as every UCUDNN_* variable.
    assert Config.from_env({"UCUDNN_BATCH_SIZE_POLICY": ""}).batch_size_policy == "powerOfTwo"


@pytest.mark.parametrize("text", ["", " \n", b""])
def test_an_empty_json_document_says_so(text: str | bytes) -> None:
    with pytest.raises(ValueError, match=r"^<plan>: empty, expected a JSON document$"):
        Plan.from_json(text)
    with pytest.raises(ValueError, match=r"empty, expected a JSON document$"):
        TimingTables.from_json(text)
