"""--json documents where a ratio has no finite value: a speed-up or samples per second over a
time too small to divide by is null (JSON has no infinity), and every document still matches
its schema."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.schema_validator import validate
from ucudnn.faces.cli import main
from ucudnn.faces.outputs import run_document
from ucudnn.planner.documents import document_text
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.plan import make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.runtime.measure import KernelTiming

NETWORK = {"network": "alexnet", "batch": 32, "dtype": "float32", "layout": None}
TINY = "1e-320"  # a subnormal time: a finite baseline over it is infinite


def timings_file(tmp_path: Path, micro_batched_ms: str, undivided_ms: str | None = None) -> str:
    """AlexNet's model timings at batch 32, with the times of its micro-batched rows (and of
    its undivided ones, if given) replaced."""
    graph = builtin_network("alexnet", batch=32)
    path = tmp_path / "alexnet.csv"
    model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers()).write_csv(path)
    header, *rows = path.read_text().splitlines()
    columns = header.split(",")
    batch, micro_batch, time_ms = (columns.index(c) for c in ("batch", "micro_batch", "time_ms"))
    changed = [header]
    for row in rows:
        cells = row.split(",")
        undivided = cells[batch] == cells[micro_batch]
        if not undivided or undivided_ms is not None:
            cells[time_ms] = micro_batched_ms if not undivided else str(undivided_ms)
        changed.append(",".join(cells))
    path.write_text("\n".join(changed) + "\n")
    return str(path)


def document(capsys, argv: list[str]) -> dict:
    """The document `ucudnn argv` prints, checked against its schema."""
    assert main([*argv, "-q"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    data = json.loads(out)
    validate(data)
    return data


@pytest.mark.parametrize("explain", [[], ["--explain"]])
def test_a_plan_of_subnormal_times_has_null_speedups(tmp_path, capsys, explain) -> None:
    data = document(capsys, ["plan", "--timings", timings_file(tmp_path, TINY), "--json", *explain])
    assert data["totals"]["speedup"] is None and data["totals"]["baseline_time_ms"] > 0
    assert any(k["speedup"] is None and k["baseline"] is not None for k in data["kernels"])


def test_a_wd_plan_of_subnormal_times_has_null_speedups(tmp_path, capsys) -> None:
    argv = ["plan", "--timings", timings_file(tmp_path, TINY), "--json", "--mode", "wd"]
    data = document(capsys, [*argv, "--total-workspace", "1GiB"])
    assert data["totals"]["speedup"] is None


@pytest.mark.parametrize(("micro", "undivided"), [(TINY, None), (TINY, TINY), ("0", "0")])
def test_a_tune_of_tiny_or_zero_times_has_null_samples_per_second(
    tmp_path, capsys, micro: str, undivided: str | None
) -> None:
    path = timings_file(tmp_path, micro, undivided)
    data = document(capsys, ["tune", "alexnet", "--timings", path, "--memory", "4GiB", "--json"])
    assert data["samples_per_s"] is None
    assert all(p["samples_per_s"] is None for p in data["curve"] if p["status"] == "fits")


def test_a_plan_of_zero_times_has_null_speedups(tmp_path, capsys) -> None:
    data = document(capsys, ["plan", "--timings", timings_file(tmp_path, "0", "0"), "--json"])
    assert data["totals"]["speedup"] is None and data["totals"]["time_ms"] == 0


@pytest.mark.parametrize("measured_ms", [0.0, 5e-324])
def test_a_run_that_measured_no_time_has_null_ratios(measured_ms: float) -> None:
    graph = builtin_network("alexnet", batch=32)
    tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
    plan = make_plan_wr(tables, 64 << 20)
    timings = [
        KernelTiming(k.layer, k.kernel, k.time_ms, measured_ms, k.time_ms, k.time_ms)
        for k in plan.kernels
    ]
    data = json.loads(document_text(run_document(NETWORK, 10, timings, None, plan)))
    validate(data)
    assert all(k["speedup"] is None for k in data["kernels"])
    assert (data["totals"]["speedup"], data["totals"]["prediction_error"]) == (None, None)


def test_document_text_writes_infinity_as_null_and_refuses_nan() -> None:
    document = {"a": math.inf, "b": [1.5, -math.inf, (math.inf,)], "c": {"d": math.inf}}
    assert json.loads(document_text(document)) == {
        "a": None,
        "b": [1.5, None, [None]],
        "c": {"d": None},
    }
    with pytest.raises(ValueError, match="not JSON compliant"):
        document_text({"a": math.nan})
