"""`--json` on every command: one document on stdout that matches its format's schema, notes
and errors on stderr as without it. The GPU commands' documents are built here from real
results (tables, timings, comparisons, plans), and their no-GPU answers are checked."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import ucudnn
from tests.conftest import gpu_available
from tests.schema_validator import validate
from ucudnn.core.device import Device
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import ConvProblem
from ucudnn.faces.cli import main
from ucudnn.faces.outputs import (
    bench_document,
    demo_document,
    info_document,
    numpy_check_part,
    plot_document,
    run_document,
)
from ucudnn.faces.report import timing_report
from ucudnn.planner.cache import BenchmarkCache, CacheReport, CacheStats, Measurement
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.plan import Plan, make_plan_wd, make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, TimingTables
from ucudnn.runtime.check import CheckResult
from ucudnn.runtime.engines_setting import EnginesSetting
from ucudnn.runtime.measure import KernelTiming

MiB = 1 << 20
FACTS = DeviceFacts("NVIDIA H100 80GB HBM3", "9.0", 92800, 13000)
NETWORK = {"network": "alexnet", "batch": 32, "dtype": "float32", "layout": None}
ENGINES_ON = EnginesSetting(enabled=True, source="default", reason=None)


@pytest.fixture(scope="module")
def alexnet() -> TimingTables:
    graph = builtin_network("alexnet", batch=32)
    return model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())


@pytest.fixture
def timings(tmp_path: Path, alexnet: TimingTables) -> str:
    path = tmp_path / "alexnet.csv"
    alexnet.write_csv(path)
    return str(path)


@pytest.fixture
def no_gpu() -> None:
    if gpu_available()[0]:
        pytest.skip("a GPU is present: the no-GPU answers do not apply")


def document(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[dict, str]:
    """The one document `ucudnn argv` prints, checked against its schema, and its stderr."""
    assert main(argv) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)  # the whole of stdout is the document
    validate(data)
    return data, err


# -- on the CPU, for real -----------------------------------------------------------------
def test_info(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("UCUDNN_CHECK", "maybe")
    data, err = document(capsys, ["info", "--json", "--database", str(tmp_path / "none")])
    assert (data["format"], data["version"]) == ("ucudnn-info", 1)
    assert data["ucudnn_version"] == ucudnn.__version__
    assert data["cudnn_version"].startswith("9.") and data["native_loaded"] is True
    (problem,) = data["configuration_problems"]
    assert problem.startswith("UCUDNN_CHECK='maybe' is not a yes/no value")
    assert data["cache"] == {
        "path": str(tmp_path / "none"), "state": "absent", "problem": None,
        "measured_problem_sizes": None, "rows": None, "file_bytes": None,
    }  # fmt: skip
    cudnn = next(lib for lib in data["libraries"] if lib["soname"] == "libcudnn.so.9")
    assert cudnn["distribution"].startswith("nvidia-cudnn-cu")  # the pip package installed here
    assert err == ""


def test_info_of_a_cache_in_use_and_of_a_foreign_file(capsys, tmp_path) -> None:
    path = tmp_path / "b.sqlite"
    problem = ConvProblem.create(8, 3, 4, (8, 8), 3)
    with BenchmarkCache(path) as cache:
        cache.store(problem, "forward", 8, FACTS, [Measurement.timed(Candidate(8, 0, 1.0, 0), [1])])
    data, _ = document(capsys, ["info", "--json", "--database", str(path)])
    cache_part = data["cache"]
    assert (cache_part["state"], cache_part["measured_problem_sizes"], cache_part["rows"]) == (
        "ready",
        1,
        1,
    )
    assert cache_part["file_bytes"] == path.stat().st_size
    foreign = tmp_path / "theirs.txt"
    foreign.write_text("not a database, but someone's notes")
    data, _ = document(capsys, ["info", "--json", "--database", str(foreign)])
    assert data["cache"]["state"] == "unusable" and "not a ucudnn" in data["cache"]["problem"]


def test_info_document_of_a_machine_with_a_device_and_of_one_without_modules() -> None:
    device = Device(0, "NVIDIA H100 80GB HBM3", "9.0", 85 << 30, 132, "GPU-1234", "0000:01:00.0")
    report = {
        "native": True, "libraries": [], "cudnn": "9.28.0", "cudnn_build": "9.28.0",
        "cuda_runtime": "13.0", "cuda_driver": "13.0",
        "devices": [dataclasses.asdict(device)], "reason": None,
    }  # fmt: skip
    cache = CacheReport("b.sqlite", CacheStats(sets=4, measurements=30, file_bytes=8192))
    data = info_document(report, [], cache, ENGINES_ON)
    validate(data)
    assert data["devices"][0]["total_memory_bytes"] == 85 << 30
    assert data["unusable_reason"] is None and data["cache"]["state"] == "ready"
    assert data["engines"] == {"enabled": True, "source": "default", "reason": None}
    missing = {"native": False, "devices": [], "reason": "native modules did not import: x"}
    off = EnginesSetting(False, "default", "native modules did not import: x")
    data = info_document(missing, [], CacheReport("b.sqlite", None), off)
    validate(data)
    assert data["native_loaded"] is False and data["cudnn_version"] is None
    assert data["unusable_reason"] == "native modules did not import: x"
    assert data["engines"] == {
        "enabled": False, "source": "default", "reason": "native modules did not import: x"
    }  # fmt: skip


def test_info_without_a_gpu_reports_engines_off_by_default_and_why(capsys, no_gpu) -> None:
    data, _ = document(capsys, ["info", "--json"])
    engines = data["engines"]
    assert (engines["enabled"], engines["source"]) == (False, "default")
    assert engines["reason"].startswith("no usable device: ")


@pytest.mark.parametrize("value", ["off", "on"])
def test_info_reports_engines_set_by_the_environment(capsys, monkeypatch, value) -> None:
    """Off as asked needs no reason; on is on only where engines can run, which info says."""
    monkeypatch.setenv("UCUDNN_ENGINES", value)
    data, _ = document(capsys, ["info", "--json"])
    engines = data["engines"]
    assert engines["source"] == "environment"
    if value == "off":
        assert (engines["enabled"], engines["reason"]) == (False, None)
    else:
        assert engines["enabled"] is (engines["reason"] is None)


@pytest.mark.gpu
def test_info_reports_engines_on_by_default_on_a_device(capsys, monkeypatch) -> None:
    """On the simulated device too: its cuDNN is 9.19 and its heuristics answer the probe."""
    monkeypatch.delenv("UCUDNN_ENGINES", raising=False)
    data, _ = document(capsys, ["info", "--json"])
    assert data["engines"] == {"enabled": True, "source": "default", "reason": None}


@pytest.mark.parametrize("mode", ["wr", "wd"])
def test_plan(capsys, timings, mode: str) -> None:
    size = ["--workspace-limit", "16MiB"] if mode == "wr" else ["--total-workspace", "64MiB"]
    argv = ["plan", "--timings", timings, "--mode", mode, *size, "--json", "--explain"]
    data, err = document(capsys, argv)
    assert (data["format"], data["version"], data["mode"]) == ("ucudnn-plan", 3, mode)
    assert len(data["explain"]["kernels"]) == len(data["kernels"]) == 15
    assert err == f"planning from timings file {timings}\n"  # on stderr, as without --json


def test_plot(capsys, timings, tmp_path) -> None:
    out = tmp_path / "plots"
    argv = ["plot", "--timings", timings, "--workspace-limit", "8MiB", "--out", str(out)]
    data, _ = document(capsys, [*argv, "--json"])
    assert [f["kind"] for f in data["files"]] == ["desirable_sets", "breakdown"]
    assert all(Path(f["path"]).read_bytes().startswith(b"\x89PNG") for f in data["files"])
    data, _ = document(capsys, [*argv, "--json", "--layer", "conv1"])
    assert data["layer"] == "conv1"


def test_plot_document_names_each_file_by_what_it_shows() -> None:
    data = plot_document("conv2", [Path("out/desirable_sets.png"), Path("out/breakdown.png")])
    validate(data)
    assert data["files"][1] == {"kind": "breakdown", "path": "out/breakdown.png"}


def test_demo_without_a_gpu(capsys, no_gpu) -> None:
    data, _ = document(capsys, ["demo", "--batch", "32", "--json"])
    assert (data["format"], data["gpu"], data["run"], data["numpy_check"]) == (
        "ucudnn-demo",
        False,
        None,
        None,
    )
    assert data["info"]["format"] == "ucudnn-info" and data["info"]["unusable_reason"]
    plans = data["model_plans"]
    assert (plans["wr"]["mode"], plans["wd"]["mode"]) == ("wr", "wd")
    assert plans["wd"]["limit_bytes"] == 15 * data["workspace_limit_bytes"] == 15 * 64 * MiB
    assert "MODEL" in plans["wr"]["timings_source"]
    for part in plans.values():
        Plan.from_json(json.dumps(part))  # each a plan document of its own


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "alexnet", "--json"],
        ["run", "alexnet", "--json"],
        ["run", "alexnet", "--json", "--check"],
    ],
)
def test_gpu_commands_without_a_gpu_print_no_document(capsys, no_gpu, argv) -> None:
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"ucudnn {argv[0]}: ") and "GPU" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "nonet", "--json"],
        ["info", "--json", "--database"],
        ["plan", "alexnet", "--model", "--json", "--policy", "sometimes"],
        ["demo", "--json", "--batch", "0"],
    ],
)
def test_bad_arguments_with_json_fail_as_without(capsys, argv) -> None:
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err


# -- the GPU commands' documents, from real results ------------------------------------------
def test_bench_document_holds_the_timings(alexnet: TimingTables) -> None:
    counts = {"measured": 40, "cached": 80}
    data = bench_document(NETWORK, [1, 8, 32], 15, counts, 12.5, None, FACTS, alexnet)
    validate(data)
    assert (data["problem_sizes_measured"], data["problem_sizes_cached"]) == (40, 80)
    assert data["policy"] == [1, 8, 32] and data["elapsed_s"] == 12.5
    assert data["device"]["cudnn_version"] == 92800
    assert TimingTables.from_json(json.dumps(data["timings"])) == alexnet


def kernel_timings(plan: Plan, ratio: float = 1.1) -> list[KernelTiming]:
    """What timing `plan` on a device could give: each kernel `ratio` slower than predicted."""
    return [
        KernelTiming(
            k.layer, k.kernel, k.time_ms, k.time_ms * ratio,
            None if k.baseline is None else k.baseline.time_ms,
            None if k.baseline is None else k.baseline.time_ms * ratio,
        )
        for k in plan.kernels
    ]  # fmt: skip


def test_run_document(alexnet: TimingTables) -> None:
    plan = make_plan_wd(alexnet, 256 * MiB, device=FACTS)
    timings = kernel_timings(plan)
    checks = [
        CheckResult(t.layer, t.kernel, distance=2e-7, tolerance=1e-6) for t in timings[:-1]
    ] + [CheckResult(timings[-1].layer, timings[-1].kernel, distance=3e-3, tolerance=1e-4)]
    data = run_document({**NETWORK, "batch": None}, 10, timings, checks, plan)
    validate(data)
    assert (data["mode"], data["limit_bytes"], data["repeats"]) == ("wd", 256 * MiB, 10)
    totals = data["totals"]
    assert totals["measured_ms"] == pytest.approx(1.1 * plan.time_ms)
    assert totals["speedup"] == pytest.approx(plan.speedup)
    assert totals["prediction_error"] == pytest.approx(1 / 1.1 - 1)
    assert data["check"]["passed"] is False
    assert [r["within_bound"] for r in data["check"]["results"]] == [True] * 14 + [False]
    assert Plan.from_json(json.dumps(data["plan"])) == plan


def test_run_document_without_baselines_or_checks() -> None:
    from ucudnn.planner.tables import KernelTable

    table = KernelTable("big", "forward", 4, [Candidate(4, 1, 4.0, 100), Candidate(2, 1, 1.0, 10)])
    plan = make_plan_wr(TimingTables([table]), 50, policy=[2])
    data = run_document(NETWORK, 3, kernel_timings(plan), None, plan)
    validate(data)
    assert data["kernels"][0]["baseline_measured_ms"] is None
    assert data["kernels"][0]["speedup"] is None
    assert (data["totals"]["baseline_measured_ms"], data["totals"]["speedup"]) == (None, None)
    assert data["check"] is None and data["policy"] == [2]


def test_timing_report_shows_what_the_document_holds(alexnet: TimingTables) -> None:
    plan = make_plan_wr(alexnet, 16 * MiB)
    lines = timing_report(kernel_timings(plan, ratio=1.25)).splitlines()
    assert lines[0].split()[:4] == ["layer", "kernel", "predicted", "ms"]
    total = lines[-2].split()
    assert total[0] == "total" and total[-1] == f"{plan.speedup:.2f}x"
    assert lines[-1] == "prediction error of the total: -20.0% (predicted vs measured)"


def test_demo_document_on_a_gpu(alexnet: TimingTables) -> None:
    plan = make_plan_wr(alexnet, 64 * MiB, device=FACTS)
    run = run_document(NETWORK, 10, kernel_timings(plan), [], plan)
    info = info_document(
        {"native": True, "devices": [], "reason": None}, [], CacheReport("c", None), ENGINES_ON
    )
    check = numpy_check_part((64, 16, 32, 32), (32, 16, 3, 3), (64, 32, 32, 32), 1.5e-7)
    data = demo_document("alexnet", 32, 64 * MiB, info, numpy_check=check, run=run)
    validate(data)
    assert data["gpu"] is True and data["model_plans"] is None
    assert data["numpy_check"]["y_shape"] == [64, 32, 32, 32]
    assert data["run"]["check"] == {"passed": True, "results": []}


# -- on a GPU ---------------------------------------------------------------------------------
@pytest.mark.gpu
def test_bench_and_run_on_a_gpu(capsys, tmp_path) -> None:
    database = ["--database", str(tmp_path / "db.sqlite")]
    data, _ = document(capsys, ["bench", "alexnet", "--batch", "8", "--json", *database])
    assert data["kernels"] == 15 and data["problem_sizes_cached"] == 0
    argv = ["run", "alexnet", "--batch", "8", "--repeats", "2", "--check", "--json"]
    data, _ = document(capsys, [*argv, *database])
    assert data["check"]["passed"] and len(data["kernels"]) == 15
    assert data["plan"]["device"]["device_name"]
