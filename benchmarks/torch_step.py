"""Training steps of PyTorch's own convolutions against the same model converted with ucudnn.

Each configuration trains the same model from the same initial weights on the same synthetic
data (fixed seed) with SGD and momentum: PyTorch with `torch.backends.cudnn.benchmark = True`,
then ucudnn (`ucudnn.torch.convert`) at each workspace limit of --limits (WR: the limit per
kernel, 1GiB standing for "no limit"; with --mode wd, for the whole network, planned by
`ucudnn.torch.plan` before the first step). For every dtype (AMP float16 with a GradScaler, AMP
bfloat16, float32 with TF32 off) and memory format (channels_last, contiguous) it reports:

  images/s     full training steps (forward, loss, backward, optimizer step) after warm-up
  vs PyTorch   the ratio to PyTorch's images/s measured in the same run
  first use s  the conversion and the first step, timed alone: cuDNN's benchmark for
               PyTorch, ucudnn's first-use benchmarking and planning (not in images/s)
  peak memory  torch.cuda.max_memory_allocated() over the timed steps, and the workspace
               ucudnn holds outside torch's allocator (ucudnn.torch.workspace_bytes)
  loss         the loss of step --loss-steps (20); ucudnn's agrees with PyTorch's when their
               relative difference is within 1e-2 under AMP, 1e-5 in float32 without TF32

With --largest-batch it finds instead, for PyTorch and for ucudnn, the largest batch whose
full step trains within --memory (torch's allocator capped with
set_per_process_memory_fraction, ucudnn's workspace counted against the same memory), and the
images/s at it. ucudnn's search starts from the batch `ucudnn.planner.tune` predicts for
ResNet-50 (a doubling search otherwise), then brackets it by real steps; every new batch costs
a first use, so it stops at --max-minutes with the best found so far.

Prints a Markdown table and writes everything, with the versions, to --json. On the simulated
device (UCUDNN_DEVICE=sim) the model runs on the CPU, ucudnn's convolutions on the simulator
and PyTorch's on the CPU: every output says SIMULATED, and proves nothing about a GPU.

    python benchmarks/torch_step.py --model resnet50 --batch 256 --dtypes float16 \\
        --formats channels_last,contiguous --limits 8MiB,64MiB,1GiB --json step.json
    python benchmarks/torch_step.py --model resnet50 --largest-batch --memory 20GiB
    UCUDNN_DEVICE=sim python benchmarks/torch_step.py --smoke

This file is the command line and the run; its siblings, imported by name, hold the rest:
torch_step_models.py (models and data), torch_step_training.py (one configuration's steps),
torch_step_search.py (--largest-batch) and torch_step_report.py (the table and the JSON).
torch is imported only once a run starts, so that --help and its errors come fast.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import argument_types
import torch_step_models as models
import torch_step_report as report
import torch_step_search as search
import torch_step_training as training

if TYPE_CHECKING:
    import torch

DTYPES = tuple(training.TOLERANCE)
FORMATS = ("channels_last", "contiguous")
DEFAULT_LIMITS = (8 * report.MiB, 64 * report.MiB, training.NO_LIMIT)
SINGLE_LIMIT = 64 * report.MiB  # the default of --largest-batch and --smoke, which take one


class UsageError(Exception):
    """A request this script cannot serve, said in one line (no traceback)."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


# -- arguments ---------------------------------------------------------------------------------


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Needs a CUDA device, or UCUDNN_DEVICE=sim (the simulated device: tiny shapes). "
        "Exit status 1 when a configuration failed or its loss disagrees with PyTorch's, 2 for "
        "a request it cannot serve.",
    )
    parser.add_argument(
        "--model",
        choices=models.MODELS,
        default="resnet50",
        help="resnet50 (needs torchvision), unet3d (a 3D U-Net-style encoder) "
        "or tiny (default resnet50)",
    )
    parser.add_argument("--batch", type=_positive, help="mini-batch (default: the model's own)")
    parser.add_argument("--image-size", type=_positive, help="input height and width (and depth)")
    parser.add_argument(
        "--dtypes",
        type=argument_types.comma_list(DTYPES),
        help=f"comma-separated, of {', '.join(DTYPES)} (default float16; float16,float32 "
        "with --smoke)",
    )
    parser.add_argument(
        "--formats",
        type=argument_types.comma_list(FORMATS),
        default=["channels_last"],
        help="memory formats: channels_last (channels_last_3d for 3D), "
        "contiguous (default channels_last)",
    )
    parser.add_argument(
        "--limits",
        type=argument_types.comma_list(parse=argument_types.size),
        help="ucudnn's workspace limits per kernel (default 8MiB,64MiB,1GiB; "
        "64MiB with --largest-batch)",
    )
    parser.add_argument(
        "--mode",
        choices=("wr", "wd"),
        default="wr",
        help="wr: each limit per kernel (convert(workspace_limit=)); wd: each limit for the "
        "whole network (convert(total_workspace=), then plan(model, example_input)) "
        "(default wr)",
    )
    parser.add_argument("--steps", type=_positive, default=20, help="timed steps (default 20)")
    parser.add_argument(
        "--warmup", type=int, default=3, help="untimed steps after the loss steps (default 3)"
    )
    parser.add_argument(
        "--loss-steps",
        type=_positive,
        default=20,
        help="steps whose last loss is compared (default 20); the first is the first use",
    )
    parser.add_argument(
        "--pytorch-twice",
        action="store_true",
        help="run PyTorch a second time, so that its own run-to-run loss difference (cuDNN's "
        "nondeterministic algorithms) shows beside ucudnn's",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, metavar="PATH", help="write every number here")
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="stop starting configurations (or trial batches) after this long "
        "and report what was measured",
    )
    parser.add_argument(
        "--largest-batch",
        action="store_true",
        help="find the largest batch that trains within --memory instead",
    )
    parser.add_argument(
        "--memory",
        type=argument_types.size,
        default=argument_types.size("20GiB"),
        help="device memory for --largest-batch (default 20GiB)",
    )
    parser.add_argument(
        "--granularity",
        type=_positive,
        default=8,
        help="--largest-batch brackets the batch this closely (default 8)",
    )
    parser.add_argument(
        "--max-batch",
        type=_positive,
        default=4096,
        help="--largest-batch tries no batch above this (default 4096)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny model, batch 2, 2 steps, one limit: a check that runs on the simulated device",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        _smoke_settings(args)
    if args.dtypes is None:
        args.dtypes = ["float16"]
    if args.limits is None:
        args.limits = [SINGLE_LIMIT] if args.largest_batch else list(DEFAULT_LIMITS)
    size, _, _, batch = models.MODEL_SHAPES[args.model]
    args.batch = args.batch or batch
    args.image_size = args.image_size or size
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    return args


def _smoke_settings(args: argparse.Namespace) -> None:
    """--smoke: small enough for the simulator (seconds), yet every code path of a step."""
    args.model = "tiny"
    args.batch = 2
    args.steps = args.loss_steps = 2
    args.warmup = 1
    args.limits = (args.limits or [SINGLE_LIMIT])[:1]
    args.dtypes = args.dtypes or ["float16", "float32"]
    args.largest_batch = False


# -- where it runs -----------------------------------------------------------------------------


def choose_device() -> torch.device:
    """The CPU on the simulated device, else the current CUDA device; no CUDA is an error."""
    import torch

    if report.simulated():
        return torch.device("cpu")
    if not torch.cuda.is_available():
        built = torch.version.cuda
        why = f"torch {torch.__version__} " + (
            f"(CUDA {built}) sees no CUDA device" if built else "is a CPU-only build"
        )
        raise UsageError(
            f"no CUDA device: {why}. Run on a GPU, or on the simulated device with "
            "UCUDNN_DEVICE=sim (slow: tiny shapes only, e.g. --smoke)",
            status=1,
        )
    return torch.device("cuda", torch.cuda.current_device())


def check_model_available(model: str) -> None:
    if model == "resnet50" and importlib.util.find_spec("torchvision") is None:
        raise UsageError(
            "--model resnet50 needs torchvision, which is not installed (pip install "
            "torchvision); --model unet3d and --model tiny need only torch"
        )


def cap_memory(args: argparse.Namespace, device: torch.device) -> None:
    """Torch's allocator may take --memory and no more (ucudnn's workspace is checked
    against the same memory after each step)."""
    import torch

    if device.type != "cuda":
        raise UsageError(
            "--largest-batch needs a CUDA device: it caps torch's CUDA allocator, which the "
            "simulated device (the CPU) does not have",
            status=1,
        )
    total = torch.cuda.get_device_properties(device).total_memory
    if args.memory > total:
        raise UsageError(f"--memory {report.mib(args.memory)} MiB is more than the device's "
                         f"{report.mib(total)} MiB")  # fmt: skip
    torch.cuda.set_per_process_memory_fraction(args.memory / total, device)


# -- main --------------------------------------------------------------------------------------


def warm_process(device: torch.device) -> None:
    """A throwaway step of a small network first, so that what a process pays once (the CUDA
    context, cuBLAS's and cuDNN's handles, torch's lazy initialisation) is not counted in the
    first configuration's first use."""
    import torch
    from torch import nn

    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(4 * 6 * 6, 2)).to(device)
    for dtype in (torch.float16, torch.bfloat16):
        with torch.autocast(device.type, dtype=dtype):
            net(torch.randn(2, 3, 8, 8, device=device)).sum().backward()
    training.synchronize(device)


def configurations(args: argparse.Namespace) -> list[training.Config]:
    """PyTorch (twice with --pytorch-twice), then ucudnn at each limit of --limits."""
    pytorch = [training.Config(None)]
    if args.pytorch_twice and not args.largest_batch:
        pytorch.append(training.Config(None, again=True))
    return [*pytorch, *(training.Config(limit, args.mode) for limit in args.limits)]


def run(args: argparse.Namespace) -> int:
    import torch

    check_model_available(args.model)
    device = choose_device()
    torch.backends.cudnn.benchmark = True
    found = report.versions(device)
    document = report.new_document(args, found)
    if args.largest_batch:
        cap_memory(args, device)
    header = report.header_lines(args, found)
    training.progress(header[-1])
    setup = training.Setup(args, models.build_model(args.model, args.seed), device)
    warm_process(device)
    deadline = None if args.max_minutes is None else time.monotonic() + args.max_minutes * 60
    configs = configurations(args)
    groups = [[training.Case(config, dtype, fmt) for config in configs]
              for dtype in args.dtypes for fmt in args.formats]  # fmt: skip
    try:
        for index, cases in enumerate(groups):
            later = (len(groups) - index - 1) * len(configs)
            run_group(setup, cases, (deadline, later), document)
    except KeyboardInterrupt:
        document["interrupted"] = True
        training.progress("interrupted: reporting what was measured")
    report.write_json(args.json, document)
    rows = document["rows"]
    print(report.markdown(args, header, rows))
    if args.json is not None:
        print(f"\nwritten to {args.json}")
    return 1 if any("error" in r or r.get("loss_agrees") is False for r in rows) else 0


def run_group(
    setup: training.Setup,
    cases: list[training.Case],
    time_left: tuple[float | None, int],
    document: dict[str, Any],
) -> None:
    """The configurations in one dtype and format, their rows into the document (rewritten
    after each); the ratios and the loss agreement are against the group's PyTorch row.
    `time_left` is the run's deadline and how many configurations come after this group's:
    each largest-batch search gets an even share of the time left."""
    args = setup.args
    deadline, later = time_left
    pytorch: dict[str, Any] | None = None
    for index, case in enumerate(cases):
        if deadline is not None and time.monotonic() >= deadline:
            training.progress(f"--max-minutes reached: {case.label} not run")
            document.setdefault("not_run", []).append([case.config.name, case.dtype, case.fmt])
            continue
        if args.largest_batch:
            share = None if deadline is None else (
                time.monotonic() + (deadline - time.monotonic()) / (len(cases) - index + later)
            )  # fmt: skip
            row = search.search_configuration(setup, case, share)
        else:
            row = training.run_configuration(setup, case)
        if pytorch is None and case.config.limit is None:
            pytorch = row
        elif pytorch is not None:
            training.compare_with_pytorch(row, pytorch)
        document["rows"].append(row)
        report.write_json(args.json, document)
        if row.get("stopped") == "interrupted":  # the search kept its trials; now stop
            raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch_step: needs torch (pip install torch)", file=sys.stderr)
        return 2
    try:
        return run(args)
    except UsageError as exc:
        print(f"torch_step: {exc}", file=sys.stderr)
        return exc.status


if __name__ == "__main__":
    sys.exit(main())
