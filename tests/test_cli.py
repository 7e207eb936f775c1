"""The `ucudnn` command on a CPU: every subcommand's argument errors, planning from a timings
file and from the cost model, plots, and the no-GPU answers of the commands that need one."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import gpu_available, simulated
from ucudnn.faces.cli import main
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import TimingTables


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
    for command in ([], ["info"], ["bench"], ["plan"], ["tune"], ["run"], ["plot"], ["demo"]):
        with pytest.raises(SystemExit) as exit_:
            main([*command, "--help"])
        assert exit_.value.code == 0
    assert "micro-batch" in capsys.readouterr().out


def test_info_reports_versions_and_devices(capsys, tmp_path) -> None:
    assert main(["info", "--database", str(tmp_path / "none.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "cuDNN 9." in out and "CUDA runtime" in out and "not created yet" in out


def test_info_reads_a_foreign_file_and_changes_nothing(capsys, tmp_path) -> None:
    path = tmp_path / "theirs.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE measurements (x)")
        conn.executemany("INSERT INTO measurements VALUES (?)", [(i,) for i in range(1000)])
    before = path.read_bytes()
    assert main(["info", "--database", str(path)]) == 0
    assert "not a ucudnn benchmark cache" in capsys.readouterr().out
    assert path.read_bytes() == before and sorted(tmp_path.iterdir()) == [path]


def test_info_reports_bad_settings_as_warnings(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("UCUDNN_BATCH_SIZE_POLICY", "sometimes")
    monkeypatch.setenv("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "lots")
    monkeypatch.setenv("UCUDNN_CHECK", "maybe")
    monkeypatch.setenv("UCUDNN_DATABASE", "~no-such-user-here/b.sqlite")
    monkeypatch.setenv("UCUDNN_CACHE_TIMEOUT", "soon")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "warning: UCUDNN_CACHE_TIMEOUT='soon' is not a number" in out
    assert "warning: UCUDNN_BATCH_SIZE_POLICY='sometimes' is not a policy" in out
    assert "warning: UCUDNN_DEFAULT_WORKSPACE_LIMIT='lots' is not a size" in out
    assert "warning: UCUDNN_CHECK='maybe' is not a yes/no value" in out
    assert "warning: UCUDNN_DATABASE='~no-such-user-here/b.sqlite': cannot expand ~" in out
    # The cache it reports is the default one, which it does not create.
    assert f"cache: {tmp_path / 'ucudnn' / 'benchmarks.sqlite'} (not created yet)" in out
    assert not any(tmp_path.iterdir())


def test_plan_from_a_timings_file(capsys, timings) -> None:
    assert main(["plan", "--timings", str(timings), "--workspace-limit", "16MiB", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["mode"] == "wr" and len(plan["kernels"]) == 15
    assert all(k["workspace_bytes"] <= 16 << 20 for k in plan["kernels"])


def test_plan_wd_from_the_model_says_so(capsys) -> None:
    args = ["plan", "resnet18", "--batch", "64", "--model", "--mode", "wd"]
    assert main([*args, "--total-workspace", "256MiB"]) == 0
    captured = capsys.readouterr()
    assert "MODEL" in captured.err and "WD plan" in captured.out and "solver dp" in captured.out


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["plan"], 2, "give --timings"),
        (["plan", "alexnet", "--model", "--batch", "0"], 2, "--batch='0' is out of range"),
        (["demo", "--batch", "0"], 2, "expected an integer from 1 to 2147483647"),
        (["plan", "alexnet", "--model", "--batch", str(2**31)], 2, "32-bit"),
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


# `plan NETWORK` plans from shipped measurements or MODEL instead (test_planner_measured.py).
@pytest.mark.parametrize("argv", [["bench", "alexnet"], ["run", "alexnet"]])
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


def test_plot_without_matplotlib_says_how_to_get_it(capsys, timings, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    out = tmp_path / "plots"
    assert main(["plot", "--timings", str(timings), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == "ucudnn plot: error: plots need matplotlib: pip install 'ucudnn-cu13[plot]'\n"
    assert not out.exists()  # checked before anything is created


def test_write_plots_without_matplotlib_creates_nothing(timings, tmp_path, monkeypatch) -> None:
    from ucudnn.faces.plots import PlottingUnavailable, write_plots
    from ucudnn.planner.plan import make_plan_wr

    tables = TimingTables.read_csv(timings)
    plan = make_plan_wr(tables, 8 << 20)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlottingUnavailable, match=r"\[plot\]"):
        write_plots(tables, plan, tmp_path / "plots")
    assert not (tmp_path / "plots").exists()


def test_demo_without_gpu_plans_from_the_model_and_says_so(capsys, no_gpu) -> None:
    assert main(["demo", "--batch", "32"]) == 0
    out = capsys.readouterr().out
    assert "No usable GPU" in out and "NOT measurements" in out
    assert "WR plan" in out and "WD plan" in out


def test_demo_compares_both_plans_with_one_baseline(capsys, no_gpu) -> None:
    """Each kernel's baseline is the same in the WR and the WD table, and the demo says which
    it is (WD's own, the undivided plan within the budget, differs per kernel)."""
    assert main(["demo", "--batch", "32", "--workspace-limit", "8MiB"]) == 0
    out = capsys.readouterr().out
    assert "one baseline: each kernel's fastest undivided algorithm within 8 MiB" in out
    wr, wd = out.split("\nWR plan")[1].split("\nWD plan")

    def baselines(table: str) -> list[str]:
        rows = [line.split() for line in table.splitlines() if line.startswith("conv")]
        return [row[7] for row in rows]

    assert baselines(wr) == baselines(wd) and len(baselines(wr)) == 15


@pytest.mark.gpu
def test_bench_twice_then_plan_from_the_export(capsys, tmp_path) -> None:
    bench = ["bench", "alexnet", "--batch", "8", "--database", str(tmp_path / "db.sqlite")]
    exported = tmp_path / "alexnet.csv"
    assert main([*bench, "--quiet", "--export", str(exported)]) == 0
    assert main([*bench, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "0 problem sizes measured" in out.splitlines()[-1]
    assert (" on SIMULATED " in out.splitlines()[-1]) == simulated()
    assert main(["plan", "--timings", str(exported), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert len(plan["kernels"]) == 15
    assert plan["timings_source"].startswith(f"timings file {exported}, measured on ")


@pytest.mark.gpu
def test_run_names_the_device_it_ran_on(capsys, tmp_path) -> None:
    argv = ["run", "alexnet", "--batch", "2", "--repeats", "1", "--workspace-limit", "1MiB"]
    assert main([*argv, "--quiet", "--database", str(tmp_path / "db.sqlite")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("alexnet: WR at 1 MiB, policy powerOfTwo on "), first
    assert re.search(r" \(cuDNN [0-9]+\.[0-9]+\.[0-9]+\)$", first), first
    assert ("SIMULATED" in first) == simulated()


@pytest.mark.gpu
def test_bench_with_engines_exports_their_tags_and_plans_from_them(capsys, tmp_path) -> None:
    exported = tmp_path / "alexnet.csv"
    argv = ["bench", "alexnet", "--batch", "4", "--database", str(tmp_path / "db.sqlite")]
    assert main([*argv, "--quiet", "--engines", "on", "--export", str(exported)]) == 0
    tables = TimingTables.read_csv(exported)
    engine_rows = [c for _, table in tables.items() for c in table if c.engine]
    assert engine_rows and all(c.engine.startswith(f"eng{c.algo}") for c in engine_rows)
    assert any(not c.engine for _, table in tables.items() for c in table)  # legacy kept
    capsys.readouterr()
    assert main(["plan", "--timings", str(exported), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert all(len(k["engines"]) == len(k["algos"]) for k in plan["kernels"])


def hard_wd_timings(path: Path) -> int:
    """60 kernels of 6 options whose time saved follows the workspace spent (a strongly
    correlated knapsack): HiGHS needs tens of seconds to prove the optimum. The budget."""
    rng = random.Random(2)
    rows = ["layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes"]
    smallest = 0
    for layer in range(60):
        units = [rng.randrange(1, 10**6) for _ in range(6)]
        for algo, u in enumerate(units):
            time_ms = (2 * 10**6 - u - rng.randrange(0, 1000) + rng.random()) / 1000
            rows.append(f"l{layer},forward,1,1,{algo},{time_ms!r},{u * 256}")
        smallest += min(units) * 256
    path.write_text("\n".join(rows) + "\n")
    return smallest + 60 * 300_000 * 256 + 12345


def test_a_time_limit_stops_the_solver_with_a_plan_that_says_so(
    tmp_path, capsys, monkeypatch
) -> None:
    """The limit bounds the plan's and the baseline's solves together: here both are hard
    (at batch 1 the undivided runs are all the options), and each alone needs tens of
    seconds; the generous bound on the wall time separates one shared limit from two.
    The exact search, which settles them at once, is kept out."""
    monkeypatch.setattr("ucudnn.planner.wd.search.DP_WORK_LIMIT", 0)
    budget = hard_wd_timings(tmp_path / "hard.csv")
    argv = ["plan", "--timings", str(tmp_path / "hard.csv"), "--mode", "wd"]
    argv += ["--total-workspace", str(budget), "--time-limit", "4", "--json"]
    start = time.monotonic()
    assert main(argv) == 0
    assert time.monotonic() - start < 7.5
    plan = json.loads(capsys.readouterr().out)
    assert (plan["solver"], plan["solver_status"]) == ("highs", "feasible")
    assert plan["totals"]["workspace_bytes"] <= budget
    assert plan["totals"]["baseline_time_ms"] is not None
