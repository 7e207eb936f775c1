"""How long the planner takes on hostile inputs the validation accepts (printed, not a test).

Each case runs the command line as a subprocess, from MODEL timings (no GPU), and is either
planned or refused with a message; either way it should end within the goal (5 s on two CPU
cores), and is stopped at --timeout:

- tune at batch 65,536 and at 2**31 - 1: the default batch sizes are bounded (powers of two
  and at most 64 evenly spaced multiples), and a batch over memory needs only its smallest
  schedules;
- tune with policy all (ResNet-50 at its batch, 256), and plan --policy all --explain and
  --mode wd on one kernel of batch 4,096: the desirable sets under sizes that are no divisor
  chain are solved again at each workspace size, all within one step budget;
- 40,000 layers sharing one label named "conv", "conv#2", ... in linear time, alone and as a
  layer list read into a LayerGraph (planning that list from the model is left out: the
  model's tables of 120,000 kernels take minutes of their own).

    python benchmarks/hostile_inputs.py [--timeout 300] [--cases NAME ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 5.0
HEADER = "source,W,H,C_in,N,C_out,kernel_w,kernel_h,pad_w,pad_h,stride_w,stride_h"
ONE_KERNEL = "conv,14,14,256,4096,256,3,3,1,1,1,1"  # one layer at batch 4,096
SMALL_ROW = "conv,8,8,8,1,8,1,1,0,0,1,1"
READ_GRAPH = "from ucudnn.planner.graph import LayerGraph; LayerGraph.from_csv"
NAME_ROWS = (  # the naming alone, without reading the file's rows
    "from ucudnn.core.problem import ConvProblem; from ucudnn.planner.graph import LayerGraph; "
    "LayerGraph.from_layers([('conv', ConvProblem.create(1, 8, 8, (8, 8), 1))] * 40_000)"
)


def _layer_list(folder: Path, name: str, rows: list[str]) -> str:
    path = folder / name
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return str(path)


def cases(folder: Path) -> dict[str, list[str]]:
    """Each case's arguments to `ucudnn`."""
    one = _layer_list(folder, "one-kernel-4096.csv", [ONE_KERNEL])
    same = _layer_list(folder, "same-label-40000.csv", [SMALL_ROW] * 40_000)
    tune = ["tune", "resnet50", "--model", "--memory", "16GiB"]
    wd = ["--mode", "wd", "--total-workspace", "256MiB"]
    return {
        "tune-batch-65536": [*tune, "--batch", "65536"],
        "tune-batch-2147483647": [*tune, "--batch", "2147483647"],
        "tune-policy-all": [*tune, "--policy", "all"],
        "plan-all-4096-explain": ["plan", one, "--model", "--policy", "all", "--explain"],
        "plan-all-4096-wd": ["plan", one, "--model", "--policy", "all", *wd],
        "name-40000-same-label": ["-c", NAME_ROWS],
        "read-40000-same-label": ["-c", f"{READ_GRAPH}({same!r})"],
    }


def run(args: list[str], timeout_s: float) -> tuple[float, str]:
    """Seconds taken and how it ended: "done", "refused: <message>" or "timed out". `args`
    are the command line's, or ["-c", code] for Python code."""
    command = args if args[0] == "-c" else ["-m", "ucudnn.faces.cli", *args, "--quiet"]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, *command],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, "timed out"
    elapsed = time.perf_counter() - start
    if done.returncode == 0:
        return elapsed, "done"
    message = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return elapsed, f"refused (exit {done.returncode}): {message[:160]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    parser.add_argument("--cases", nargs="+", help="names of the cases to run (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        chosen = cases(Path(folder))
        for name in args.cases or list(chosen):
            elapsed, outcome = run(chosen[name], args.timeout)
            verdict = "ok" if elapsed <= GOAL_S else f"OVER the {GOAL_S:g} s goal"
            print(f"{name:24} {elapsed:7.1f} s  {verdict:18} {outcome}", flush=True)


if __name__ == "__main__":
    main()
