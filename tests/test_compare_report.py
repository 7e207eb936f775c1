"""The pure report of the GPU comparison (benchmarks/compare_report.py) and the script's CLI.

All numbers here are made up inside the tests; nothing is written to benchmarks/results/.
"""

from __future__ import annotations

import datetime
import gzip
import importlib.util
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import gpu_available

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by name

import compare_report as report  # noqa: E402

MiB = 1 << 20


def _m(method, layer, kernel, ms, limit=8 * MiB, predicted=None):
    return {
        "network": "toy", "dtype": "float32", "layout": "NCHW", "limit_bytes": limit,
        "layer": layer, "kernel": kernel, "method": method, "measured_ms": ms,
        "predicted_ms": predicted, "workspace_bytes": 0,
    }  # fmt: skip


def _toy_measurements():
    """Two kernels, made up: WR is 2x and 1x the baseline; PyTorch has no limit."""
    return [
        _m("baseline", "conv1", "forward", 4.0),
        _m("wr", "conv1", "forward", 2.0, predicted=2.2),
        _m("baseline", "conv2", "forward", 3.0),
        _m("wr", "conv2", "forward", 3.0, predicted=2.7),
        _m("ceiling", "conv1", "forward", 1.0, limit=None),
        _m("ceiling", "conv2", "forward", 3.0, limit=None),
        _m("pytorch", "conv1", "forward", 4.0, limit=None),
        _m("pytorch", "conv2", "forward", 3.0, limit=None),
    ]


def test_geomean():
    assert report.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert report.geomean([]) is None
    with pytest.raises(ValueError):
        report.geomean([1.0, 0.0])


def test_ratio_stats_best_and_worst():
    stats = report.RatioStats.of(
        [report.Ratio("a", "forward", 2.0), report.Ratio("b", "forward", 0.5)]
    )
    assert stats.geomean == pytest.approx(1.0)
    assert (stats.best.layer, stats.worst.layer) == ("a", "b")
    assert report.RatioStats.of([]) is None


def test_limit_free_methods_join_every_limit():
    rows = [*_toy_measurements(), _m("wr", "conv1", "forward", 1.5, limit=64 * MiB)]
    configs = report.configurations(rows)
    assert list(configs) == [
        ("toy", "float32", "NCHW", 8 * MiB),
        ("toy", "float32", "NCHW", 64 * MiB),
    ]
    assert set(configs[("toy", "float32", "NCHW", 64 * MiB)][("conv1", "forward")]) == {
        "wr", "ceiling", "pytorch",
    }  # fmt: skip


def test_summary_of_a_configuration():
    (s,) = report.summarise(_toy_measurements())
    assert s.kernels == 2
    assert s.speedups["wr"].geomean == pytest.approx(math.sqrt(2.0))
    assert s.speedups["wr"].best.label == "conv1 forward"
    assert s.speedups["wr"].worst.value == pytest.approx(1.0)
    assert s.ceiling_gap.best.value == pytest.approx(2.0)  # WR twice the ceiling on conv1
    assert s.peer_over_wr["pytorch"].geomean == pytest.approx(math.sqrt(2.0))
    assert s.peer_over_wr["frontend"] is None
    assert s.slower_than_baseline["wr"] == 0
    assert s.totals == {"baseline": 7.0, "wr": 5.0, "ceiling": 4.0, "pytorch": 7.0}
    p = s.prediction["wr"]
    assert (p.count, p.max_abs_error) == (2, pytest.approx(0.1))
    assert p.total_error == pytest.approx((4.9 - 5.0) / 5.0)


def _toy_run(**changes):
    run = {
        "run_id": "20250101T000000Z-test-gpu",
        "environment": report.environment(
            {"devices": [{"name": "Test GPU", "compute_capability": "9.0"}], "cudnn": "9.0.0"},
            driver_version="1.0", torch_versions={"version": "0.0-test"}, frontend_versions=None,
            ucudnn_version="0.1.0", commit="abc123", python="3.12",
        ),
        "settings": {"policy": "powerOfTwo", "warmup": 1, "repeats": 3, "workspace_cap": 1 << 30},
        "complete": True,
        "measurements": _toy_measurements(),
        "skipped": [{**_m("frontend", "conv1", "forward", 0.0), "reason": "not importable"}],
        "errors": [],
        "benchmark_times": [{"network": "toy", "dtype": "float32", "layout": "NCHW",
                             "kernels": 2, "first_use_s": 1.5, "cached_s": 0.01}],
    }  # fmt: skip
    return {**run, **changes}


def test_markdown_summary():
    text = report.render_markdown(_toy_run())
    assert text.startswith("# ucudnn GPU comparison 20250101T000000Z-test-gpu")
    assert "Test GPU" in text and "abc123" in text and "PyTorch 0.0-test" in text
    assert (
        "| toy | float32 | NCHW | 8MiB | 2 | 1.41x | 2.00x conv1 forward | 1.00x conv2 forward |"
        in text
    )
    assert "cuDNN frontend absent" in text
    assert "frontend: 1 kernel(s) skipped, e.g. not importable" in text
    assert "| toy | float32 | NCHW | 2 | 1.5 | 0.01 |" in text


def test_markdown_says_when_a_run_stopped_early():
    text = report.render_markdown(_toy_run(complete=False, stopped="out of time"))
    assert "**incomplete**: out of time" in text


def _schedule(*steps):
    """A recorded schedule; each step (micro_batch, engine, beta, alignment, benchmarked at)."""
    return {
        "micro_batches": "+".join(str(step[0]) for step in steps),
        "algos": ",".join(step[1] or "1" for step in steps),
        "steps": [
            {"micro_batch": b, "algo": 1, "engine": engine, "beta": beta, "first_sample": 0,
             "alignment_bytes": alignment, "benchmark_alignment_bytes": benchmarked}
            for b, engine, beta, alignment, benchmarked in steps
        ],
    }  # fmt: skip


def test_every_kernel_off_its_prediction_by_over_20_percent_is_listed_with_its_cause():
    engine_split = _schedule((4, "eng62_k2=0", 0.0, 256, 256), (4, "eng62_k2=0", 1.0, 256, 256))
    moved = _schedule((4, "", 0.0, 256, 16), (2, "", 0.0, 16, 8), (2, "", 0.0, 16, 8))
    legacy_split = _schedule((4, "", 0.0, 256, 256), (4, "", 1.0, 256, 256))
    rows = [
        *_toy_measurements(),  # WR within 10 %, which no list shows
        _m("baseline", "conv3", "backward_filter", 1.0, predicted=0.5),  # no plan of ucudnn's
        _m("pytorch", "conv3", "backward_filter", 1.0),
        {**_m("wr", "conv3", "backward_filter", 3.0, predicted=1.0), "schedule": engine_split},
        {**_m("wd_limit", "conv3", "forward", 0.5, predicted=1.0), "schedule": moved},
        {**_m("wd_kernels", "conv3", "backward_filter", 1.3, predicted=1.0),
         "schedule": legacy_split},
        _m("ceiling", "conv4", "forward", 1.25, limit=None, predicted=1.0),  # recorded before v2
        _m("ceiling", "conv5", "forward", 1.2, limit=None, predicted=1.0),  # not over 20 %
    ]  # fmt: skip
    misses = report.prediction_misses(rows)
    assert [(m.record["method"], m.record["layer"]) for m in misses] == [
        ("wr", "conv3"), ("wd_limit", "conv3"), ("wd_kernels", "conv3"), ("ceiling", "conv4"),
    ]  # fmt: skip
    assert [m.error for m in misses] == pytest.approx([2.0, -0.5, 0.3, 0.25])
    (beta1,), (alignment,), none, unknown = (m.causes for m in misses)
    assert beta1.startswith("split backward filter of an engine configuration")
    assert alignment == (
        "parts run at another byte alignment than benchmarked: "
        "4 at 256 B (benchmarked at 16 B), 2 at 16 B (benchmarked at 8 B)"
    )
    assert none == unknown == ()

    text = report.render_markdown(_toy_run(measurements=rows))
    assert "4 of the 7 predicted kernels (wr, wd_kernels, wd_limit, ceiling) are off" in text
    assert (
        "| toy | float32 | NCHW | 8MiB | wr | conv3 | backward_filter | 3 | 1 | +200.0% | 4+4 "
        "| eng62_k2=0,eng62_k2=0 | split backward filter" in text
    )
    assert (
        "| toy | float32 | NCHW | none | ceiling | conv4 | forward | 1.25 | 1 | +25.0% | — | — "
        "| unknown |" in text
    )
    assert text.count(" | unknown |") == 2


def test_a_run_with_no_kernel_off_its_prediction_says_so():
    text = report.render_markdown(_toy_run())
    assert "0 of the 2 predicted kernels" in text
    assert "| cause |" not in text


@pytest.mark.parametrize(
    ("name", "listed"),
    [("before-resnet50-fp16", 26), ("deepbench-fp16", 372), ("resnet50-fp16", 98),
     ("resnet50-fp32", 5)],
)  # fmt: skip
def test_recorded_runs_without_schedules_list_their_errors(name, listed):
    path = BENCHMARKS / "results" / f"2026-11-25-h100-engines-{name}.json.gz"
    run = json.loads(gzip.decompress(path.read_bytes()))
    assert run["version"] == 1  # before schedules were recorded
    assert len(report.prediction_misses(run["measurements"])) == listed
    section = report.render_markdown(run).split("## Prediction errors over 20%")[1]
    section = section.split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == listed + 1  # and the header
    assert all(row.endswith("| — | — | unknown |") for row in rows[1:])


def test_a_schedule_is_recorded_as_it_runs():
    from ucudnn.core.problem import ConvProblem
    from ucudnn.planner.plan import KernelPlan
    from ucudnn.planner.tables import Candidate, Schedule

    # 252 and 200 bytes per sample of x and y: the 4 samples run first at byte 0, and the
    # benchmark timed them 4 samples in (1,008 and 800 bytes: 16-byte aligned).
    problem = ConvProblem.create(6, 3, 5, (6, 7), 3, dtype="float16")
    parts = (Candidate(2, 62, 0.5, 0, engine="eng62_k2=0"), Candidate(4, 1, 1.0, 1024))
    kernel_plan = KernelPlan("conv1", "backward_filter", 6, Schedule(parts))
    record = _gpu_compare().schedule_record(problem, kernel_plan)
    assert (record["micro_batches"], record["algos"]) == ("2+4", "eng62_k2=0,1")
    assert record["steps"] == [
        {"micro_batch": 4, "algo": 1, "engine": "", "beta": 0.0, "first_sample": 0,
         "alignment_bytes": 256, "benchmark_alignment_bytes": 16},
        {"micro_batch": 2, "algo": 62, "engine": "eng62_k2=0", "beta": 1.0, "first_sample": 4,
         "alignment_bytes": 16, "benchmark_alignment_bytes": 8},
    ]  # fmt: skip
    measurement = {**_m("wr", "conv1", "backward_filter", 2.0, predicted=1.0), "schedule": record}
    assert len(report.known_causes(json.loads(json.dumps(measurement)))) == 2


def test_run_id_sorts_by_time_and_names_the_gpu():
    now = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    assert report.run_id(now, "NVIDIA H100 80GB HBM3") == "20250102T030405Z-nvidia-h100-80gb-hbm3"


def test_environment_without_devices():
    env = report.environment(
        {"devices": [], "cuda_runtime": "13.0"}, driver_version=None, torch_versions=None,
        frontend_versions=None, ucudnn_version="0.1.0", commit="unknown", python="3.12",
    )  # fmt: skip
    assert env["gpu"] is None and env["gpu_count"] == 0 and env["cuda_runtime"] == "13.0"


def test_plots_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    spec = importlib.util.spec_from_file_location("compare_plots", BENCHMARKS / "compare_plots.py")
    plots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plots)
    names, why = plots.write_plots(_toy_run(), tmp_path, "toy")
    assert why is None
    assert names == ["toy-speedup.png", "toy-prediction.png"]
    assert all((tmp_path / n).stat().st_size > 0 for n in names)


def _script(*args):
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_compare.py"), *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_help_works():
    done = _script("--help")
    assert done.returncode == 0
    assert "--max-minutes" in done.stdout and "--networks" in done.stdout


def test_bad_option_is_refused():
    done = _script("--dtypes", "float8")
    assert done.returncode == 2 and "float8" in done.stderr


def test_without_gpu_it_says_so(tmp_path):
    if gpu_available()[0]:
        pytest.skip("a GPU is present")
    done = _script("--out", str(tmp_path))
    assert done.returncode == 1
    assert "needs a GPU" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())


def _gpu_compare():
    spec = importlib.util.spec_from_file_location("gpu_compare", BENCHMARKS / "gpu_compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_results_files_are_replaced_whole(tmp_path, monkeypatch):
    output = _gpu_compare().Output(tmp_path / "results", "run")
    output.save(_toy_run())
    saved = {p.name: p.read_bytes() for p in (tmp_path / "results").iterdir()}
    assert sorted(saved) == ["run.json", "run.md"]
    assert json.loads(saved["run.json"])["run_id"] == "20250101T000000Z-test-gpu"

    def interrupted(run):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "render_markdown", interrupted)
    with pytest.raises(KeyboardInterrupt):
        output.save(_toy_run(complete=False))
    # The JSON was replaced whole; the Markdown kept its last complete version; no leftovers.
    after = {p.name: p.read_bytes() for p in (tmp_path / "results").iterdir()}
    assert sorted(after) == ["run.json", "run.md"]
    assert after["run.md"] == saved["run.md"]
    assert json.loads(after["run.json"])["complete"] is False


def test_finish_writes_the_tables_zip(tmp_path):
    pytest.importorskip("matplotlib")
    output = _gpu_compare().Output(tmp_path, "run")
    output.finish(_toy_run(), {"toy-float32-NCHW.csv": "layer,kernel\n"})
    with zipfile.ZipFile(tmp_path / "run-tables.zip") as zf:
        assert zf.read("toy-float32-NCHW.csv") == b"layer,kernel\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
