"""The measured timings that ship with ucudnn: that they are the H100 run's own tables, that
`plan` and `tune` use them without a GPU exactly where they cover the network and say so,
and that everything else is planned from MODEL timings, saying why."""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
import zipfile
from pathlib import Path

import pytest

from ucudnn.faces import commands
from ucudnn.faces.cli import main
from ucudnn.planner import measured
from ucudnn.planner.measured import MeasuredTable, measured_tables, shipped_tables
from ucudnn.planner.networks import load_network
from ucudnn.planner.tables import TimingTables

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
H100 = (
    "measurements on NVIDIA H100 80GB HBM3, cuDNN 9.19.0, CUDA 13.0, driver 580.159.04 "
    "(2026-11-24), shipped with ucudnn"
)
# The run that measured each shipped table, in benchmarks/results.
RUNS = {
    "resnet50": "2026-11-24-h100-compare-resnet50-alexnet",
    "alexnet": "2026-11-24-h100-compare-resnet50-alexnet",
    "deepbench": "2026-11-24-h100-compare-deepbench",
}


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """No usable device, whichever device the suite runs on; the library's own defaults."""
    monkeypatch.setattr(commands, "unusable_reason", lambda: "no NVIDIA driver (test)")
    for name in ("UCUDNN_ALLOW_TF32", "UCUDNN_BATCH_SIZE_POLICY", "UCUDNN_TOTAL_WORKSPACE_SIZE"):
        monkeypatch.delenv(name, raising=False)


def table_of(network: str) -> MeasuredTable:
    (table,) = [t for t in measured_tables() if t.network == network]
    return table


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[dict, str]:
    assert main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


# -- what ships ----------------------------------------------------------------------------
def test_the_float32_nchw_tables_of_three_networks_ship() -> None:
    shipped = {(t.network, t.dtype, t.layout, t.math_type) for t in measured_tables()}
    assert shipped == {(network, "float32", "NCHW", "fma") for network in RUNS}


@pytest.mark.parametrize("network", sorted(RUNS))
def test_each_shipped_table_is_the_runs_own_byte_for_byte(network: str) -> None:
    table = table_of(network)
    run = RESULTS / RUNS[network]
    with zipfile.ZipFile(f"{run}-tables.zip") as archive:
        raw = archive.read(f"{network}-{table.dtype}-{table.layout}.csv")
    assert gzip.decompress(table.file.read_bytes()) == raw
    results = json.loads(Path(f"{run}.json").read_text())
    env = results["environment"]
    assert table.label == (
        f"measurements on {env['gpu']}, cuDNN {env['cudnn']}, CUDA {env['cuda_runtime']}, "
        f"driver {env['driver']} ({results['started'][:10]}), shipped with ucudnn"
    )
    assert table.problems == {
        item["layer"]: item["problem"]
        for item in results["layers"]
        if (item["network"], item["dtype"], item["layout"]) == (network, "float32", "NCHW")
    }


# -- planning from them --------------------------------------------------------------------
@pytest.mark.parametrize("network", sorted(RUNS))
@pytest.mark.parametrize(
    "limit",
    [["--mode", "wr", "--workspace-limit", "8MiB"], ["--mode", "wd", "--total-workspace", "1GiB"]],
)
def test_plan_uses_the_shipped_tables_and_names_them(
    network: str, limit: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data, err = run_json(capsys, ["plan", network, *limit])
    assert err == f"planning from {H100}\n"
    assert data["timings_source"] == H100 and data["solver_status"] == "optimal"
    assert len(data["kernels"]) == len(load_network(network).kernel_ids())
    # The same plan as from the run's own CSV, but for its source.
    table = table_of(network)
    csv = tmp_path / "t.csv"
    csv.write_bytes(gzip.decompress(table.file.read_bytes()))
    from_file, _ = run_json(capsys, ["plan", "--timings", str(csv), *limit])
    assert from_file.pop("timings_source") == f"timings file {csv}"
    data.pop("timings_source")
    assert data == from_file


def test_the_text_report_names_the_h100(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "alexnet", "--workspace-limit", "64MiB"]) == 0
    assert f"timings: {H100}\n" in capsys.readouterr().out


def test_tune_at_the_tables_batch_uses_them(capsys: pytest.CaptureFixture[str]) -> None:
    data, err = run_json(capsys, ["tune", "alexnet", "--memory", "4GiB"])
    assert err == f"tuning from {H100}\n"
    assert data["table_batch"] == 256 and data["plan"]["timings_source"] == H100


def test_the_tune_plot_names_the_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib", reason="plots need matplotlib (the [plot] extra)")
    from matplotlib.figure import Figure

    titles = []
    savefig = Figure.savefig

    def recording(self: Figure, *args: object, **kwargs: object) -> None:
        titles.append(self.get_suptitle())
        savefig(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording)
    assert main(["tune", "alexnet", "--memory", "4GiB", "--plot", str(tmp_path / "t.png")]) == 0
    assert titles == [f"timings: {H100}"]


def test_a_gpu_measures_rather_than_use_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def measure(*args: object) -> tuple[TimingTables, str]:
        return table_of("alexnet").read(), "measurements on a test GPU"

    monkeypatch.setattr(commands, "unusable_reason", lambda: "")
    monkeypatch.setattr(commands, "_measured_tables", measure)
    data, err = run_json(capsys, ["plan", "alexnet"])
    assert err == "planning from measurements on a test GPU\n"
    assert data["timings_source"] == "measurements on a test GPU"


# -- everything else: MODEL, and why -------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["resnet50", "--batch", "128"], "float32 NCHW table: conv1: N=128, measured N=256"),
        (["alexnet", "--dtype", "float16"], "conv1: float16, measured float32"),
        (["alexnet", "--layout", "NHWC"], "conv1: NHWC, measured NCHW"),
        (["deepbench", "--batch", "8"], "DeepSpeech: N=8, measured N=4"),
        (["ucudnn-alexnet"], "ships no measured timings of ucudnn-alexnet"),
        (["vgg16"], "ships no measured timings of vgg16"),
    ],
)
def test_anything_else_is_planned_from_model_saying_why(
    argv: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data, err = run_json(capsys, ["plan", *argv, "-v"])
    assert data["timings_source"] == commands.MODEL_NOTE
    reason, source = err.splitlines()[:2]  # -v shows the log record, INFO
    assert reason.startswith("ucudnn plan: ") and why in reason
    assert source == f"planning from {commands.MODEL_NOTE}"


def test_tf32_problems_are_not_the_fma_measurements(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UCUDNN_ALLOW_TF32", "1")
    data, err = run_json(capsys, ["plan", "alexnet", "-v"])
    assert data["timings_source"] == commands.MODEL_NOTE
    assert "conv1 has math type default, measured fma" in err


def test_tune_at_another_batch_uses_model(capsys: pytest.CaptureFixture[str]) -> None:
    data, err = run_json(capsys, ["tune", "alexnet", "--batch", "64", "--memory", "4GiB"])
    assert err == f"tuning from {commands.MODEL_NOTE}\n"
    assert data["table_batch"] == 64 and data["plan"]["timings_source"] == commands.MODEL_NOTE


def test_model_stays_model(capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = run_json(capsys, ["plan", "alexnet", "--model"])
    assert data["timings_source"] == commands.MODEL_NOTE
    demo, _ = run_json(capsys, ["demo", "--batch", "256"])
    assert {plan["timings_source"] for plan in demo["model_plans"].values()} == {
        commands.MODEL_NOTE
    }


# -- coverage, kernel by kernel ------------------------------------------------------------
def test_other_layers_are_not_covered(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ucudnn.planner.measured")
    assert shipped_tables("alexnet", load_network("resnet18")) is None
    assert "its layers are conv1, conv2, conv3, … (5), the network's conv1," in caplog.text


def test_layers_of_the_same_names_but_other_problems_are_not_covered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ucudnn.planner.measured")
    assert shipped_tables("alexnet", load_network("ucudnn-alexnet")) is None
    assert "conv4: C=384->K=384, measured C=384->K=256" in caplog.text


def test_a_network_without_its_input_gradient_is_not_covered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ucudnn.planner.measured")
    graph = load_network("alexnet").without_input_gradient()
    assert shipped_tables("alexnet", graph) is None
    assert "timings for kernels the network lacks, such as conv1/backward_data" in caplog.text


def test_a_table_without_a_kernel_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    table = table_of("alexnet")
    lines = gzip.decompress(table.file.read_bytes()).decode().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith("conv5,backward_filter,")]
    short = tmp_path / "short.csv.gz"
    short.write_bytes(gzip.compress("".join(kept).encode()))
    monkeypatch.setattr(
        measured, "measured_tables", lambda: [dataclasses.replace(table, file=short)]
    )
    caplog.set_level(logging.INFO, logger="ucudnn.planner.measured")
    assert shipped_tables("alexnet", load_network("alexnet")) is None
    assert "no timings for conv5/backward_filter" in caplog.text
