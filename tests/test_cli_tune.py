"""`ucudnn tune` on a CPU: the curve, the choice and its plan as text and as a ucudnn-tune
document, timings files, the framework overhead, the plot, and every refusal, each checked
against what `ucudnn.planner.tune.tune` finds for the same network and tables."""

from __future__ import annotations

import json
import math
import re
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from tests.conftest import gpu_available
from tests.schema_validator import validate
from ucudnn.faces.cli import main
from ucudnn.faces.commands import MODEL_NOTE
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.memory import FrameworkOverhead
from ucudnn.planner.networks import load_network
from ucudnn.planner.plan import Plan
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.tune import default_batches, tune

GiB = 1 << 30
ALEXNET = ["tune", "alexnet", "--model", "--batch", "64"]
# 900 MiB with no headroom: batch 64 fits, yet 32 is faster per sample.
TIGHT = ["--memory", "900MiB", "--framework-overhead", "0"]


@pytest.fixture(autouse=True)
def default_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's policy is the default one, as the function's is."""
    monkeypatch.delenv("UCUDNN_BATCH_SIZE_POLICY", raising=False)


def network(name: str, batch: int) -> tuple[LayerGraph, TimingTables]:
    graph = load_network(name, batch)
    tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
    return graph, tables


@pytest.fixture(scope="module")
def alexnet() -> tuple[LayerGraph, TimingTables]:
    return network("alexnet", 64)


def document(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[dict, str]:
    """The ucudnn-tune document `ucudnn argv --json` prints, checked, and its stderr."""
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)  # the whole of stdout is the document
    validate(data)
    assert (data["format"], data["version"]) == ("ucudnn-tune", 1)
    return data, err


def failure(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    """The exit status and stderr of a command that fails, which prints nothing on stdout."""
    status = main(argv)
    out, err = capsys.readouterr()
    assert out == ""
    return status, err


# -- the choice -----------------------------------------------------------------------------
def test_text_shows_the_curve_the_best_batch_and_its_plan(capsys, alexnet) -> None:
    assert main([*ALEXNET, "--memory", "4GiB"]) == 0
    out, err = capsys.readouterr()
    assert err == "tuning from MODEL timings (built-in cost model, NOT measurements)\n"
    expected = tune(*alexnet, 4 * GiB).best
    lines = out.splitlines()
    assert lines[1].startswith("headroom 1 GiB+10% (the default) for what the model does not see")
    assert lines[2] == f"timings: {MODEL_NOTE}, at batch 64"
    header = "batch  fits  step ms  samples/s     memory  workspace  note"
    assert lines[3].split() == header.split()
    rows = [line.split() for line in lines if re.match(r"^\s+\d+\s+(yes|no|—)\b", line)]
    batches = [int(row[0]) for row in rows]
    assert batches == default_batches(64) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    (best_row,) = [row for row in rows if row[-1] == "best"]
    assert int(best_row[0]) == expected.batch
    (best_line,) = [line for line in lines if line.startswith("best: ")]
    assert best_line.startswith(f"best: batch {expected.batch}, ")
    assert f"({expected.time_ms:.3f} ms of convolutions per step)" in best_line
    # Batches that are no power of two are planned from smaller micro-batches, and say so.
    composed = {int(row[0]) for row in rows if "composed" in row[-1]}
    assert composed == {24, 40, 48, 56}
    assert any(line.startswith("composed: the timings have no undivided run") for line in lines)
    assert not re.search(r"\bmeasured\b", out)  # MODEL timings are not measurements
    # The best batch's WD plan follows, in the memory its activations leave.
    report = out.split("\n\n", 1)[1]
    assert report.startswith("WD plan: total budget ")
    assert "timings: MODEL timings" in report


def test_json_holds_the_choice_its_plan_and_the_curve(capsys, alexnet) -> None:
    data, _ = document(capsys, [*ALEXNET, *TIGHT])
    expected = tune(*alexnet, 900 << 20, overhead="0").best
    assert data["batch"] == expected.batch and data["time_ms"] == expected.time_ms
    assert (data["memory_bytes"], data["table_batch"], data["plot_path"]) == (900 << 20, 64, None)
    curve = data["curve"]
    assert [point["batch"] for point in curve] == default_batches(64)
    fitting = [point for point in curve if point["status"] == "fits"]
    fastest = max(fitting, key=lambda point: point["samples_per_s"])
    assert data["batch"] == fastest["batch"]
    assert data["samples_per_s"] == fastest["samples_per_s"]
    assert data["samples_per_s"] == pytest.approx(data["batch"] / (data["time_ms"] / 1e3))
    assert fastest["memory"]["total_bytes"] <= data["memory_bytes"]
    # Here the fastest per sample is not the largest batch that fits: 64 fits, with less
    # workspace than 32 has.
    assert data["batch"] == 32 < max(point["batch"] for point in fitting) == 64
    # The plan is a ucudnn-plan document of its own, for the chosen batch.
    plan = data["plan"]
    assert (plan["format"], plan["mode"]) == ("ucudnn-plan", "wd")
    assert {kernel["batch"] for kernel in plan["kernels"]} == {data["batch"]}
    assert len(plan["kernels"]) == 15
    assert Plan.from_json(json.dumps(plan)).time_ms == pytest.approx(data["time_ms"])
    assert plan["totals"]["workspace_bytes"] <= fastest["memory"]["arena_bytes"]


def test_a_batch_list_is_tried_as_given_and_composed_batches_say_so(capsys) -> None:
    data, err = document(capsys, [*ALEXNET, "--memory", "4GiB", "--batches", "64,16,24", "-q"])
    assert err == ""  # -q: not even where the timings came from
    curve = {point["batch"]: point for point in data["curve"]}
    assert list(curve) == [16, 24, 64]
    assert curve[24]["measured_undivided"] is False
    assert curve[16]["measured_undivided"] is curve[64]["measured_undivided"] is True


def test_json_names_where_the_timings_come_from(capsys) -> None:
    data, _ = document(capsys, [*ALEXNET, "--memory", "4GiB", "--batches", "32,64"])
    assert data["timings_source"] == data["plan"]["timings_source"] == MODEL_NOTE


def test_shipped_measurements_are_named_with_their_device(capsys) -> None:
    """Without a GPU, alexnet at its batch of 256 is tuned from the measurements that ship,
    and the text and the document say where they were taken."""
    if gpu_available()[0]:
        pytest.skip("a GPU is present: it measures instead")
    argv = ["tune", "alexnet", "--memory", "16GiB", "--batches", "64,256", "-q"]
    assert main(argv) == 0
    timings = capsys.readouterr().out.splitlines()[2]
    assert re.fullmatch(
        r"timings: measurements on NVIDIA .+, shipped with ucudnn, at batch 256", timings
    )
    data, _ = document(capsys, argv)
    assert data["timings_source"] == timings.removeprefix("timings: ").removesuffix(
        ", at batch 256"
    )


def test_deterministic_plans_only_deterministic_algorithms(capsys) -> None:
    data, _ = document(capsys, [*ALEXNET, "--memory", "4GiB", "--deterministic"])
    parts = [part for kernel in data["plan"]["kernels"] for part in kernel["parts"]]
    assert parts and all(part["deterministic"] for part in parts)
    assert data["plan"]["deterministic_only"] is True


# -- timings files -----------------------------------------------------------------------------
def test_a_timings_file_gives_the_choice_the_model_gives(capsys, tmp_path, alexnet) -> None:
    path = tmp_path / "alexnet.csv"
    alexnet[1].write_csv(path)
    from_file, err = document(capsys, ["tune", "alexnet", "--timings", str(path), *TIGHT])
    assert err == f"tuning from timings file {path}\n"
    from_model, _ = document(capsys, [*ALEXNET, *TIGHT])
    expected = tune(*alexnet, 900 << 20, overhead="0").best.batch
    assert from_file["batch"] == from_model["batch"] == expected
    assert from_file["curve"] == from_model["curve"]
    assert from_file["plan"]["timings_source"] == f"timings file {path}"
    # A timings file has its own batch: a --batch beside it would be silently ignored.
    argv = ["tune", "alexnet", "--timings", str(path), "--batch", "32", *TIGHT]
    status, err = failure(capsys, argv)
    assert status == 2 and "a timings file has its own" in err


def test_timings_of_another_network_are_refused(capsys, tmp_path) -> None:
    path = tmp_path / "resnet18.csv"
    network("resnet18", 32)[1].write_csv(path)
    status, err = failure(capsys, ["tune", "alexnet", "--timings", str(path), "--memory", "4GiB"])
    assert status == 2
    assert "no rows for 12 of the network's 15 kernels" in err
    assert "conv2/forward" in err  # resnet18 has a conv1, but no conv2


def test_timings_with_kernels_of_another_network_are_refused(capsys, tmp_path, alexnet) -> None:
    tables = alexnet[1]
    resnet18 = network("resnet18", 64)[1]
    extra = [resnet18[k] for k in resnet18 if k not in tables][:5]
    both = TimingTables([*(tables[k] for k in tables), *extra])
    path = tmp_path / "both.csv"
    both.write_csv(path)
    status, err = failure(capsys, ["tune", "alexnet", "--timings", str(path), "--memory", "4GiB"])
    assert status == 2
    assert "rows for 5 kernels that are not in the network" in err
    assert "layer1.0.conv1/forward" in err and "another network" in err


# -- refusals --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "status", "messages"),
    [
        (["--batches", "128"], 2, ["batch 128 is beyond the batch 64", "never extrapolated"]),
        (["--batches", "32,128,256"], 2, ["batches 128, 256 are beyond the batch 64"]),
        (["--batches", "0"], 2, ["--batches='0'", "batch='0' is out of range"]),
        (
            ["--batches", "x"],
            2,
            ["--batches='x'", "not a list of batch sizes", "batch='x' is not an integer"],
        ),
        (["--batches", "32,,64"], 2, ["--batches='32,,64'"]),
        (["--framework-overhead", "5%%"], 2, ["--framework-overhead='5%%' is not an overhead"]),
        (["--framework-overhead", "abc"], 2, ["--framework-overhead='abc' is not an overhead"]),
        (["--framework-overhead", "1GiB+2GiB"], 2, ["--framework-overhead='1GiB+2GiB'"]),
        (["--memory", "lots"], 2, ["--memory='lots' is not a size"]),
        (["--timings", "alexnet.csv"], 2, ["give --timings FILE or --model, not both"]),
    ],
)
def test_refusals(capsys, extra: list[str], status: int, messages: list[str]) -> None:
    argv = [*ALEXNET, "--memory", "4GiB", *extra, "-q"]
    got, err = failure(capsys, argv)
    assert got == status
    assert err.startswith("ucudnn tune: error: ") and err.count("\n") == 1
    for message in messages:
        assert message in err
    assert failure(capsys, [*argv, "--json"]) == (status, err)  # the same, and no document


def test_nothing_fits_names_what_the_smallest_batch_needs(capsys, alexnet) -> None:
    with pytest.raises(InfeasibleError) as raised:
        tune(*alexnet, 1 << 20)
    needed = raised.value.required_bytes
    assert needed is not None and needed > 1 << 20
    status, err = failure(capsys, [*ALEXNET, "--memory", "1MiB", "-q"])
    assert status == 1
    assert err.startswith(
        f"ucudnn tune: error: no plan fits: the smallest batch size tried, 1, needs {needed} bytes"
    )
    assert "more than the 1048576 bytes (1 MiB) given" in err


def test_layers_at_different_batches_are_refused(capsys) -> None:
    status, err = failure(capsys, ["tune", "deepbench", "--model", "--memory", "16GiB", "-q"])
    assert status == 2
    assert "the timings hold the network's layers at different batches" in err
    assert "measure (or model) it at one --batch" in err


# -- the framework overhead ------------------------------------------------------------------
def test_framework_overhead_is_counted_and_shrinks_the_batch(capsys, alexnet) -> None:
    argv = [*ALEXNET, "--memory", "2GiB"]
    without, _ = document(capsys, [*argv, "--framework-overhead", "0"])
    data, _ = document(capsys, [*argv, "--framework-overhead", "1GiB+30%"])
    model = data["memory_model"]
    assert (model["overhead_bytes"], model["overhead_per_sample_fraction"]) == (GiB, 0.3)
    assert without["memory_model"]["overhead_bytes"] == 0
    overhead = FrameworkOverhead(GiB, Fraction(3, 10))
    assert data["batch"] == tune(*alexnet, 2 * GiB, overhead=overhead).best.batch
    assert data["batch"] <= without["batch"]
    assert data["batch"] < without["batch"]  # at 2 GiB the overhead leaves AlexNet too little
    per_sample = model["activations_per_sample_bytes"] + model["gradients_per_sample_bytes"]
    for point in data["curve"]:
        counted = point["minimum_memory"]["overhead_bytes"]
        assert counted == GiB + math.ceil(Fraction(3, 10) * per_sample * point["batch"])


def test_text_names_the_framework_overhead(capsys) -> None:
    assert main([*ALEXNET, "--memory", "4GiB", "--framework-overhead", "30%", "-q"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("headroom 30% for what the model")


def test_the_default_headroom_is_kept_stated_and_can_be_turned_off(capsys, alexnet) -> None:
    """Without --framework-overhead, 1 GiB and 10 % of the per-sample memory are kept for
    what the model does not see (CUDA context, library handles, allocator slack)."""
    argv = [*ALEXNET, "--memory", "2GiB"]
    data, _ = document(capsys, argv)
    model = data["memory_model"]
    assert (model["overhead_bytes"], model["overhead_per_sample_fraction"]) == (GiB, 0.1)
    best = data["curve"][[p["batch"] for p in data["curve"]].index(data["batch"])]
    assert best["memory"]["overhead_bytes"] >= GiB
    assert data["batch"] == tune(*alexnet, 2 * GiB).best.batch
    assert main([*argv, "-q"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "headroom 1 GiB+10% (the default) for what the model does not see: the CUDA context, "
        "library handles, allocator slack"
    )
    bare, _ = document(capsys, [*argv, "--framework-overhead", "0"])
    assert bare["memory_model"]["overhead_bytes"] == 0
    assert bare["memory_model"]["overhead_per_sample_fraction"] == 0


# -- the plot ----------------------------------------------------------------------------------
def test_plot_writes_a_png_the_document_names(capsys, tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="plots need matplotlib (the [plot] extra)")
    path = tmp_path / "tune.png"
    data, _ = document(capsys, [*ALEXNET, "--memory", "4GiB", "--plot", str(path)])
    assert data["plot_path"] == str(path)
    png = path.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    path.unlink()
    assert main([*ALEXNET, "--memory", "4GiB", "--plot", str(path), "-q"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"plot written to {path}"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_plot_names_where_the_timings_come_from(capsys, tmp_path, monkeypatch) -> None:
    """MODEL timings are not called measured in the plot: the title names them, the legend
    says which batches the timings hold undivided."""
    pytest.importorskip("matplotlib", reason="plots need matplotlib (the [plot] extra)")
    from ucudnn.faces import plots

    saved = []

    def keep(plt, fig, path, *, source=""):
        saved.append(fig)
        return save_png(plt, fig, path, source=source)

    save_png = plots.save_png
    monkeypatch.setattr(plots, "save_png", keep)
    assert main([*ALEXNET, "--memory", "4GiB", "--plot", str(tmp_path / "t.png"), "-q"]) == 0
    (figure,) = saved
    assert figure.get_suptitle() == f"timings: {MODEL_NOTE}"
    labels = [text.get_text() for ax in figure.axes for text in ax.get_legend().get_texts()]
    assert "undivided in the timings" in labels
    assert not any("measured" in label for label in labels)


def test_plot_without_matplotlib_says_how_to_get_it(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    path = tmp_path / "tune.png"
    status, err = failure(capsys, [*ALEXNET, "--memory", "4GiB", "--plot", str(path), "-q"])
    assert status == 1 and "plots need matplotlib" in err
    assert not Path(path).exists()
