"""benchmarks/torch_step.py: its smoke run on the simulated device, its command line, and the
largest-batch search's bracketing (benchmarks/torch_step_search.py, with a stand-in for the
training step)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="benchmarks/torch_step.py trains PyTorch models")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "torch_step.py"
sys.path.insert(0, str(SCRIPT.parent))  # the scripts import their siblings by name

import torch_step_search as batch_search  # noqa: E402
import torch_step_training as training  # noqa: E402


def run_script(*arguments: str, device: str | None = "sim") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "UCUDNN_DEVICE"}
    if device is not None:
        env["UCUDNN_DEVICE"] = device
    return subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                             dict[str, Any]]:  # fmt: skip
    path = tmp_path_factory.mktemp("torch_step") / "smoke.json"
    result = run_script("--smoke", "--json", str(path))
    assert path.is_file(), result.stderr[-3000:]
    return result, json.loads(path.read_text())


def test_the_smoke_run_trains_both_sides_and_their_losses_agree(
    smoke: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    result, document = smoke
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    rows = document["rows"]
    assert [(r["config"], r["dtype"]) for r in rows] == [
        ("PyTorch", "float16"),
        ("ucudnn WR 64 MiB", "float16"),
        ("PyTorch", "float32"),
        ("ucudnn WR 64 MiB", "float32"),
    ]
    for row in rows:
        assert "error" not in row, row
        assert row["format"] == "channels_last" and row["batch"] == 2
        assert row["images_per_s"] > 0 and row["first_use_s"] > 0
        assert len(row["losses"]) == 2 and row["loss"] == row["losses"][-1]
        assert row["peak_allocated_bytes"] is None  # no CUDA allocator on the simulator
    for row in rows[1::2]:
        assert row["loss_agrees"] is True
        assert row["loss_tolerance"] == training.TOLERANCE[row["dtype"]]
        assert row["loss_relative_difference"] <= row["loss_tolerance"]
        assert row["vs_pytorch"] == pytest.approx(
            row["images_per_s"] / rows[rows.index(row) - 1]["images_per_s"]
        )
        assert isinstance(row["workspace_bytes"], int)


def test_the_smoke_run_says_it_is_simulated_and_prints_the_table(
    smoke: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    result, document = smoke
    assert document["format"] == "ucudnn-torch-step" and document["mode"] == "steps"
    assert document["simulated"] is True and "SIMULATED" in document["note"]
    versions = document["versions"]
    for field in ("torch", "cudnn_torch", "ucudnn", "device", "driver"):
        assert field in versions
    assert versions["device"] == "cpu" and versions["simulated"] is True
    assert "SIMULATED" in versions["ucudnn_device"]
    header, _, table = result.stdout.partition("\n| config |")
    assert "SIMULATED" in header
    lines = ("| config |" + table).strip().splitlines()
    assert lines[0].split(" | ")[4:6] == ["images/s", "vs PyTorch"]
    assert "first use s" in lines[0] and "loss@2" in lines[0]
    assert [line.split(" | ")[0] for line in lines[2:6]] == ["| PyTorch", "| ucudnn WR 64 MiB"] * 2
    assert "n/a" in lines[2]  # peak memory off a GPU
    assert "yes (" in lines[3] and "yes (" in lines[5]


def test_help_names_the_modes_and_options() -> None:
    result = run_script("--help", device=None)
    assert result.returncode == 0
    for option in ("--smoke", "--largest-batch", "--memory", "--limits", "--dtypes",
                   "--formats", "--max-minutes", "--json", "--loss-steps"):  # fmt: skip
        assert option in result.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("torchvision") is not None, reason="torchvision is installed"
)
def test_resnet50_without_torchvision_is_one_clear_line() -> None:
    result = run_script("--model", "resnet50")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "needs torchvision" in result.stderr and "pip install torchvision" in result.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="torch sees a CUDA device")
def test_no_cuda_and_no_simulator_is_one_clear_line() -> None:
    result = run_script("--model", "tiny", device=None)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "no CUDA device" in result.stderr and "UCUDNN_DEVICE=sim" in result.stderr


def test_largest_batch_on_the_simulator_says_it_needs_cuda() -> None:
    result = run_script("--model", "tiny", "--largest-batch")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "--largest-batch needs a CUDA device" in result.stderr


# -- the largest-batch search, with a stand-in for the step ---------------------------------


def searched(largest: int, start: int, first_step: int, **options: Any) -> batch_search.Search:
    def try_batch(batch: int) -> batch_search.Trial:
        return batch_search.Trial(batch, batch <= largest, images_per_s=float(batch))

    settings = {"granularity": 8, "max_batch": 4096, **options}
    return batch_search.find_largest(try_batch, start, first_step, **settings)


@pytest.mark.parametrize("largest", [1, 7, 8, 100, 256, 300, 1000])
@pytest.mark.parametrize("start", [32, 256])
def test_a_doubling_search_brackets_the_largest_batch(largest: int, start: int) -> None:
    search = searched(largest, start, start)
    assert search.stopped == "bracketed"
    assert search.largest is not None and search.largest.batch <= largest
    assert search.failed_above is not None and search.failed_above > largest
    assert search.failed_above - search.largest.batch <= 8
    assert len({t.batch for t in search.trials}) == len(search.trials)  # no batch twice


def test_a_good_first_guess_needs_few_trials() -> None:
    guided = searched(420, 416, 416 // 8)
    blind = searched(420, 256, 256)
    assert guided.largest is not None and guided.largest.batch == 416
    assert guided.failed_above is not None and guided.failed_above <= 424
    assert len(guided.trials) < len(blind.trials)


def test_the_search_stops_when_nothing_fits_or_at_the_largest_batch_allowed() -> None:
    assert searched(0, 64, 64).stopped == "nothing fits"
    assert searched(0, 64, 64).largest is None
    capped = searched(10_000, 256, 256, max_batch=1000)
    assert capped.stopped == "max batch"
    assert capped.largest is not None and capped.largest.batch == 1000


def test_the_search_starts_no_trial_after_its_deadline() -> None:
    search = searched(300, 256, 256, deadline=0.0)
    assert search.stopped == "time" and search.trials == ()


def test_an_interrupted_search_keeps_the_trials_it_made() -> None:
    made: list[int] = []

    def try_batch(batch: int) -> batch_search.Trial:
        if len(made) == 2:
            raise KeyboardInterrupt
        made.append(batch)
        return batch_search.Trial(batch, True)

    search = batch_search.find_largest(try_batch, 64, 64, granularity=8, max_batch=4096)
    assert search.stopped == "interrupted"
    assert [t.batch for t in search.trials] == [64, 128]
    assert search.largest is not None and search.largest.batch == 128
