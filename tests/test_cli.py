"""The `ucudnn` command on a CPU: every subcommand's argument errors, planning from a timings
file and from the cost model, plots, and the no-GPU answers of the commands that need one."""

from __future__ import annotations

import json

import pytest

from tests.conftest import gpu_available
from ucudnn.faces.cli import main
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.synthetic import model_tables


@pytest.fixture
def timings(tmp_path):
    graph = builtin_network("alexnet", batch=32)
    path = tmp_path / "alexnet.csv"
    model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers()).write_csv(path)
    return path


@pytest.fixture
def no_gpu():
    if gpu_available()[0]:
        pytest.skip("a GPU is present: the no-GPU answers do not apply")


def test_help_of_every_command(capsys) -> None:
    for command in ([], ["info"], ["bench"], ["plan"], ["run"], ["plot"], ["demo"]):
        with pytest.raises(SystemExit) as exit_:
            main([*command, "--help"])
        assert exit_.value.code == 0
    assert "micro-batch" in capsys.readouterr().out


def test_info_reports_versions_and_devices(capsys, tmp_path) -> None:
    assert main(["info", "--database", str(tmp_path / "none.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "cuDNN 9." in out and "CUDA runtime" in out and "not created yet" in out


def test_plan_from_a_timings_file(capsys, timings) -> None:
    assert main(["plan", "--timings", str(timings), "--workspace-limit", "16MiB", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["mode"] == "wr" and len(plan["kernels"]) == 15
    assert all(k["workspace_bytes"] <= 16 << 20 for k in plan["kernels"])


def test_plan_wd_from_the_model_says_so(capsys) -> None:
    args = ["plan", "resnet18", "--batch", "64", "--model", "--mode", "wd"]
    assert main([*args, "--total-workspace", "256MiB"]) == 0
    captured = capsys.readouterr()
    assert "MODEL" in captured.err and "WD plan" in captured.out and "highs" in captured.out


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["plan"], 2, "give --timings"),
        (["plan", "alexnet", "--model", "--batch", "0"], 2, "--batch must be >= 1"),
        (["plan", "nonet", "--model"], 2, "nonet"),
        (["plan", "alexnet", "--model", "--workspace-limit", "lots"], 2, "--workspace-limit"),
        (["plan", "alexnet", "--model", "--policy", "sometimes"], 2, "--policy"),
        (["plan", "alexnet", "--model", "--mode", "wd"], 2, "--total-workspace"),
        (["run", "alexnet", "--mode", "wr", "--total-workspace", "1MiB"], 2, "--mode wd"),
        (["run", "alexnet", "--mode", "wd", "--workspace-limit", "1MiB"], 2, "--mode wr"),
        (["plan", "--timings", "missing.csv"], 2, "missing.csv"),
    ],
)
def test_argument_errors(capsys, argv, status, message) -> None:
    assert main(argv) == status
    assert message in capsys.readouterr().err


def test_plan_with_timings_and_network_is_refused(capsys, timings) -> None:
    assert main(["plan", "alexnet", "--timings", str(timings)]) == 2
    assert "not both" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["bench", "alexnet"], ["run", "alexnet"], ["plan", "alexnet"]])
def test_gpu_commands_say_there_is_no_gpu(capsys, no_gpu, argv) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "GPU" in err and "driver" in err


def test_plot_writes_pngs(capsys, timings, tmp_path) -> None:
    out = tmp_path / "plots"
    assert (
        main(["plot", "--timings", str(timings), "--workspace-limit", "8MiB", "--out", str(out)])
        == 0
    )
    for name in ("desirable_sets.png", "breakdown.png"):
        data = (out / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 1000
    assert str(out / "breakdown.png") in capsys.readouterr().out


def test_demo_without_gpu_plans_from_the_model_and_says_so(capsys, no_gpu) -> None:
    assert main(["demo", "--batch", "32"]) == 0
    out = capsys.readouterr().out
    assert "No usable GPU" in out and "NOT measurements" in out
    assert "WR plan" in out and "WD plan" in out


@pytest.mark.gpu
def test_bench_twice_then_plan_from_the_export(capsys, tmp_path) -> None:
    bench = ["bench", "alexnet", "--batch", "8", "--database", str(tmp_path / "db.sqlite")]
    exported = tmp_path / "alexnet.csv"
    assert main([*bench, "--quiet", "--export", str(exported)]) == 0
    assert main([*bench, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "0 problem sizes measured" in out.splitlines()[-1]
    assert main(["plan", "--timings", str(exported), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert len(plan["kernels"]) == 15 and plan["timings_source"].endswith("alexnet.csv")
