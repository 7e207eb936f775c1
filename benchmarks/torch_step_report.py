"""What benchmarks/torch_step.py reports: the versions the numbers depend on, the Markdown
table of either mode with its warnings, and the JSON document of every number.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch_step_training as training

if TYPE_CHECKING:
    import argparse

    import torch

MiB = 1 << 20
SIMULATED_NOTE = (
    "SIMULATED DEVICE (UCUDNN_DEVICE=sim): ucudnn's convolutions ran on a test double in "
    "Python and numpy, PyTorch's on the CPU; these numbers say nothing about a GPU"
)


def simulated() -> bool:
    """Whether ucudnn runs on the simulated device (the test as ucudnn._native makes it,
    without importing it: that would load the native libraries)."""
    return os.environ.get("UCUDNN_DEVICE", "").strip().lower() == "sim"


# -- versions ----------------------------------------------------------------------------------


def versions(device: torch.device) -> dict[str, Any]:
    """What the numbers depend on: torch, cuDNN, ucudnn, the device and its driver."""
    import torch

    import ucudnn

    found: dict[str, Any] = {
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn_torch": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "ucudnn": ucudnn.__version__,
        "python": platform.python_version(),
        "simulated": simulated(),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
    }
    try:
        report = ucudnn.info()
    except Exception as exc:  # the versions are a record, never a reason to fail
        found["ucudnn_info_error"] = f"{type(exc).__name__}: {exc}"
        return found
    found["cudnn_ucudnn"] = report.get("cudnn")
    found["cuda_runtime"] = report.get("cuda_runtime")
    found["driver"] = report.get("cuda_driver")
    devices = report.get("devices") or []
    if devices:
        found["ucudnn_device"] = devices[0].get("name")
    if device.type == "cuda":
        found["driver_version"] = nvidia_driver()
    return found


def nvidia_driver() -> str | None:
    """The driver's own version (as nvidia-smi prints it), where nvidia-smi answers."""
    if shutil.which("nvidia-smi") is None:
        return None
    command = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
        return done.stdout.strip().splitlines()[0] if done.stdout.strip() else None
    return None


# -- the Markdown report -----------------------------------------------------------------------


def header_lines(args: argparse.Namespace, found: dict[str, Any]) -> list[str]:
    lines = [f"**{SIMULATED_NOTE}**", ""] if simulated() else []
    mode = (
        f"largest batch within {mib(args.memory)} MiB" if args.largest_batch
        else f"batch {args.batch}, {args.steps} timed steps after {args.loss_steps} loss steps "
        f"and {args.warmup} warm-up"
    )  # fmt: skip
    lines.append(
        f"torch_step: {args.model} ({args.image_size} px), {mode}; torch {found['torch']}, "
        f"cuDNN {found.get('cudnn_torch') or 'n/a'} (torch's), ucudnn {found['ucudnn']}, "
        f"device {found['device']}"
        + (f", driver {found['driver_version']}" if found.get("driver_version") else "")
        + (f", CUDA driver API {found['driver']}" if found.get("driver") else "")
        + (" [SIMULATED]" if simulated() else "")
    )
    return lines


def markdown(args: argparse.Namespace, header: list[str], rows: list[dict[str, Any]]) -> str:
    """The header, the table of the run's mode, and the warnings under it."""
    table = largest_table(rows) if args.largest_batch else steps_table(rows, args.loss_steps)
    return "\n".join([*header, "", *table, *notes(rows)])


def steps_table(rows: list[dict[str, Any]], loss_steps: int) -> list[str]:
    """The steps mode's table; memory is "n/a" off a GPU (the CPU, or the simulator's)."""
    header = ["config", "dtype", "format", "batch", "images/s", "vs PyTorch", "first use s",
              "peak MiB (torch)", "workspace MiB", "total MiB", f"loss@{loss_steps}",
              "loss agrees"]  # fmt: skip
    lines = [_cells(header), _cells(["---"] * len(header))]
    for row in rows:
        if "error" in row:
            cells = [row["config"], row["dtype"], row["format"], str(row["batch"]),
                     f"FAILED: {row['error']}"] + [""] * 7  # fmt: skip
        else:
            peak = row["peak_allocated_bytes"]
            workspace = None if peak is None else row["workspace_bytes"]
            total = None if peak is None else peak + (workspace or 0)
            cells = [
                row["config"], row["dtype"], row["format"], str(row["batch"]),
                number(row["images_per_s"]), number(row.get("vs_pytorch"), 3),
                number(row["first_use_s"], 2), _mib_or_na(peak), _mib_or_na(workspace),
                _mib_or_na(total), f"{row['loss']:.6f}", _agreement(row),
            ]  # fmt: skip
        lines.append(_cells(cells))
    return lines


def largest_table(rows: list[dict[str, Any]]) -> list[str]:
    header = ["config", "dtype", "format", "largest batch", "fails at", "images/s",
              "vs PyTorch", "first use s", "peak reserved MiB", "workspace MiB", "started at",
              "trials", "search s", "stopped"]  # fmt: skip
    lines = [_cells(header), _cells(["---"] * len(header))]
    for row in rows:
        if "error" in row:
            lines.append(_cells([row["config"], row["dtype"], row["format"],
                                 f"FAILED: {row['error']}"] + [""] * 10))  # fmt: skip
            continue
        lines.append(_cells([
            row["config"], row["dtype"], row["format"], str(row["largest_batch"] or "none"),
            str(row["failed_above"] or ""), number(row["images_per_s"]),
            number(row.get("vs_pytorch"), 3), number(row["first_use_s"], 2),
            _mib_or_na(row["peak_reserved_bytes"]), _mib_or_na(row["workspace_bytes"]),
            str(row["start"]) + (" (planner)" if "guess" in row else ""),
            str(len(row["trials"])), number(row["search_s"], 0), row["stopped"],
        ]))  # fmt: skip
    return lines


def notes(rows: list[dict[str, Any]]) -> list[str]:
    """The warnings each configuration met, under the table (at most three each)."""
    lines = []
    for row in rows:
        for text in row.get("warnings", [])[:3]:
            lines.append(f"- {row['config']}, {row['dtype']}, {row['format']}: {text}")
    return ["", "Warnings:", *lines] if lines else []


def _agreement(row: dict[str, Any]) -> str:
    if row.get("loss_agrees") is None:
        return ""
    difference, tolerance = row["loss_relative_difference"], row["loss_tolerance"]
    if row["loss_agrees"]:
        return f"yes ({difference:.1e} <= {tolerance:.0e})"
    return f"NO ({difference:.1e} > {tolerance:.0e})"


def number(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def mib(nbytes: int) -> str:
    return f"{nbytes / MiB:.0f}"


def _mib_or_na(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else mib(nbytes)


def _cells(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


# -- the JSON document -------------------------------------------------------------------------


def new_document(args: argparse.Namespace, found: dict[str, Any]) -> dict[str, Any]:
    """The JSON document before any row: the settings, tolerances and versions."""
    return {
        "format": "ucudnn-torch-step",
        "version": 1,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "simulated": simulated(),
        "note": SIMULATED_NOTE if simulated() else None,
        "mode": "largest-batch" if args.largest_batch else "steps",
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "tolerances": training.TOLERANCE,
        "versions": found,
        "rows": [],
    }


def write_json(path: Path | None, document: dict[str, Any]) -> None:
    """Rewritten after each configuration, so that a run cut short keeps what it measured."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(document, indent=1, default=str) + "\n")
    temporary.replace(path)
