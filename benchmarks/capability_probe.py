"""Which legacy cuDNN algorithms run on this GPU, for the simulated device to learn from.

    python benchmarks/capability_probe.py --out capabilities-probe.json [--commit SHA]

Run on a GPU (benchmarks/device_session.sh does, on every GPU run). On a grid of small
problems (every data type, the four layouts, the math types, stride, dilation, groups and
filter size each at two or three values, a few micro-batch sizes) it asks every algorithm of
every kernel for its workspace and runs it once, recording the status of each failure; then
it measures the statuses of broken contracts (a workspace one byte short, a misaligned input,
Find with no workspace), each in a process of its own, since a fault on the device can leave
the context unusable. Nothing stops it but its time budget: every failure is a row.

Commit the output as ucudnn/testing/simulator/data/probe-<gpu>-<cudnn>.json: the simulator
then answers those cells from it (provenance "probed:<file>"). A cell is what
`ucudnn.testing.simulator.capabilities.cell` names: kernel, algorithm, data type, layout,
math type, and whether stride, dilation and groups are above 1, and the filter size.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ucudnn._native import _cuda, _cudnn
from ucudnn.core.device import device_facts, info
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudaError, CudnnError, UcudnnError
from ucudnn.runtime import backend
from ucudnn.testing.simulator.capabilities import cell
from ucudnn.testing.simulator.problem import SimProblem

MATH = {"float32": ("fma", "default"), "float16": ("tensor_op", "default"),
        "bfloat16": ("tensor_op",), "float64": ("default",)}  # fmt: skip
LAYOUTS = {"NCHW": 2, "NHWC": 2, "NCDHW": 3, "NDHWC": 3}
MICRO_BATCHES = (1, 2, 3, 6)


def problems() -> list[ConvProblem]:
    """The grid: small problems, one per combination (micro-batches are taken from each)."""
    grid = []
    for dtype, layout, stride, dilation, groups, size in itertools.product(
        MATH, LAYOUTS, (1, 2), (1, 2), (1, 2), (1, 3, 5)
    ):
        rank = LAYOUTS[layout]
        for math_type in MATH[dtype]:
            grid.append(
                ConvProblem.create(
                    max(MICRO_BATCHES), 4 * groups, 8 * groups, (11,) * rank, size,
                    padding=size // 2, stride=stride, dilation=dilation, groups=groups,
                    layout=layout, dtype=dtype, math_type=math_type,
                )
            )  # fmt: skip
    return grid


def _sim_problem(problem: ConvProblem, kernel: str) -> SimProblem:
    return SimProblem(
        kernel=kernel,  # type: ignore[arg-type]
        dtype=problem.dtype, compute_dtype=problem.compute_dtype, math_type=problem.math_type,
        layout=problem.layout, filter_layout=problem.filter_layout, x_dims=problem.x_dims,
        w_dims=problem.w_dims, y_dims=problem.y_dims, padding=problem.padding,
        stride=problem.stride, dilation=problem.dilation, groups=problem.groups,
        mode=problem.mode,
    )  # fmt: skip


def _status(exc: UcudnnError) -> int:
    """A cuDNN status, or a CUDA runtime error code (below 1000) for a fault on the device."""
    if isinstance(exc, CudnnError):
        return exc.status
    assert isinstance(exc, CudaError)
    return exc.code


def probe_cells(deadline: float) -> tuple[list[dict[str, object]], bool]:
    """For each cell reached before `deadline`: per micro-batch, the status of running each
    algorithm and the workspace it asked for: {"cell": [...], "results": {b: [status, ws]}}."""
    handle = _cudnn.Handle()
    cells: dict[tuple[object, ...], dict[str, list[int]]] = {}
    complete = True
    for problem, kernel, b in itertools.product(
        problems(), ("forward", "backward_data", "backward_filter"), MICRO_BATCHES
    ):
        if time.monotonic() > deadline:
            complete = False
            break
        for key, result in _probe(handle, problem.with_batch(b), kernel):
            cells.setdefault(key, {})[str(b)] = result
    return [{"cell": list(k), "results": v} for k, v in cells.items()], complete


def _probe(
    handle: _cudnn.Handle, problem: ConvProblem, kernel: str
) -> list[tuple[tuple[object, ...], list[int]]]:
    descs = backend.ProblemDescriptors(problem)
    buffers = [_cuda.DeviceBuffer(problem.nbytes(t)) for t in ("x", "w", "y")]
    for buffer in buffers:
        _cuda.memset(buffer.ptr, 0, buffer.nbytes)
    x, w, y = (b.ptr for b in buffers)
    found = []
    for algo in range(len(_cudnn.ALGORITHMS[kernel])):
        need = 0
        try:
            need = backend.workspace_size(
                handle, descs, kernel, problem.batch, algo, problem.math_type
            )
            workspace = _cuda.DeviceBuffer(need)
            backend.run(handle, descs, kernel, problem.batch, algo, problem.math_type, 1.0,
                        0.0, x, w, y, workspace.ptr, need)  # fmt: skip
            _cuda.stream_synchronize(0)
            workspace.release()
            status = 0
        except (CudnnError, CudaError) as exc:
            status = _status(exc)
        found.append((cell(_sim_problem(problem, kernel), algo), [status, need]))
    for buffer in buffers:
        buffer.release()
    return found


# --- broken contracts, each in its own process -----------------------------------------------

_CONTRACT_PROBLEM = ConvProblem.create(8, 16, 16, (14, 14), 3, padding=1, math_type="fma")


def contract(what: str) -> int:
    """The status cuDNN (or the runtime, for a fault on the device) gives for `what`."""
    problem, kernel = _CONTRACT_PROBLEM, "forward"
    handle = _cudnn.Handle()
    descs = backend.ProblemDescriptors(problem)
    sizes = {}
    for algo in range(len(_cudnn.ALGORITHMS[kernel])):
        try:
            sizes[algo] = backend.workspace_size(handle, descs, kernel, 8, algo, "fma")
        except CudnnError:
            continue
    algo = max(sizes, key=lambda a: sizes[a])
    # One more element in x, so that a misaligned x still lies inside its allocation.
    x = _cuda.DeviceBuffer(problem.nbytes("x") + 16)
    w, y = (_cuda.DeviceBuffer(problem.nbytes(t)) for t in ("w", "y"))
    workspace = _cuda.DeviceBuffer(max(sizes.values()))
    try:
        if what == "workspace_too_small":
            backend.run(handle, descs, kernel, 8, algo, "fma", 1.0, 0.0, x.ptr, w.ptr, y.ptr,
                        workspace.ptr, sizes[algo] - 1)  # fmt: skip
        elif what == "misaligned_pointer":
            backend.run(handle, descs, kernel, 8, 0, "fma", 1.0, 0.0, x.ptr + 2, w.ptr, y.ptr,
                        0, 0)  # fmt: skip
        elif what == "find_without_workspace":
            found = backend.find(handle, descs, kernel, 8, x.ptr, w.ptr, y.ptr, 0, 0)
            needy = [p.status for p in found if sizes.get(p.algo, 0) > 0]
            return max(set(needy), key=needy.count) if needy else 0
        _cuda.device_synchronize()
    except (CudnnError, CudaError) as exc:
        return _status(exc)
    return 0


CONTRACTS = ("workspace_too_small", "misaligned_pointer", "find_without_workspace")


def _contract_in_subprocess(what: str) -> int | str:
    try:
        done = subprocess.run([sys.executable, __file__, "--contract", what],
                              capture_output=True, text=True, timeout=20)  # fmt: skip
    except subprocess.TimeoutExpired:
        return "failed: timed out"
    if done.returncode != 0:
        return f"failed: {done.stderr.strip().splitlines()[-1:]}"
    return int(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--commit", default=os.environ.get("UCUDNN_COMMIT", "unknown"))
    parser.add_argument("--seconds", type=float, default=75.0, help="time budget of the grid")
    parser.add_argument("--contract", choices=CONTRACTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contract:
        print(contract(args.contract))
        return
    if args.out is None:
        parser.error("--out is required")
    started = time.monotonic()
    rows, complete = probe_cells(started + args.seconds)
    report = info()
    facts = device_facts()
    document = {
        "format": "ucudnn-capability-probe",
        "version": 1,
        "device": facts.device_name,
        "driver": report.get("cuda_driver"),
        "cuda": report.get("cuda_runtime"),
        "cudnn": report.get("cudnn"),
        "cudnn_version": facts.cudnn_version,
        "commit": args.commit,
        "date": datetime.date.today().isoformat(),
        "complete": complete,
        "seconds": round(time.monotonic() - started, 1),
        "max_counts": {
            kernel: [backend.algorithm_count(_cudnn.Handle(), kernel), len(names)]
            for kernel, names in _cudnn.ALGORITHMS.items()
        },
        "contract": {what: _contract_in_subprocess(what) for what in CONTRACTS},
        "cells": rows,
    }
    args.out.write_text(json.dumps(document, separators=(",", ":")))
    print(f"{args.out}: {len(rows)} cells, complete={complete}, "
          f"contract statuses {document['contract']}")  # fmt: skip


if __name__ == "__main__":
    main()
