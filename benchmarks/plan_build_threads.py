"""Whether cuDNN builds graph-API plans safely, and faster, on several host threads.

For every distinct (problem, kernel) of a network at each batch, it asks the heuristics
(modes A and FALLBACK) for their engine configurations and builds an execution plan of each:
heuristics and finalize only, nothing is launched. It does so serially and on pools of
threads, each in a fresh process (a crash inside cuDNN cannot be caught, so the parent only
sees the child die and reports its signal), and compares every pool's outcome with the serial
one: the same configurations, each built or refused alike, with the same workspace.

    python benchmarks/plan_build_threads.py [--network resnet50] [--batches 256,32]
        [--dtype float16] [--layout NCHW] [--threads 1,4,8,1] [--handles shared,per-thread]
        [--out FILE.json]

`--handles shared` builds with the one cuDNN handle the operation graphs were made with (what
the cuDNN frontend's parallel plan building does); `per-thread` gives each worker its own.
The serial run is repeated last by default, so that a warmer process-independent cache (the
CUDA JIT cache on disk) would show as a faster second serial run rather than as a gain of
threads. It prints one JSON object and writes it to --out.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

GPU_DTYPES = {"float16": "tensor_op", "bfloat16": "tensor_op", "float32": "fma"}


def _kernels(network: str, batch: int, dtype: str, layout: str) -> list:
    from ucudnn.planner.networks import load_network
    from ucudnn.runtime.work import work_from_graph

    layouts = {"NCHW": "NCHW", "NHWC": "NHWC"}
    graph = load_network(network, batch, dtype, layouts[layout])
    seen, distinct = set(), []
    for item in work_from_graph(graph):
        problem = dataclasses.replace(item.problem, math_type=GPU_DTYPES[dtype])
        key = (problem.key(), item.kernel)
        if key not in seen:
            seen.add(key)
            distinct.append((problem, item.kernel))
    return distinct


def child(args: argparse.Namespace) -> dict:
    """One run in this process: heuristics, then every plan built on `args.child_threads`."""
    from ucudnn._native import _cudnn
    from ucudnn.errors import CudnnError
    from ucudnn.runtime import graph

    handle = _cudnn.Handle()
    local = threading.local()

    def thread_handle() -> _cudnn.Handle:
        if args.child_handles == "shared":
            return handle
        if not hasattr(local, "handle"):
            local.handle = _cudnn.Handle()
        return local.handle

    problems = [
        (problem, kernel)
        for batch in args.batches
        for problem, kernel in _kernels(args.network, batch, args.dtype, args.layout)
    ]

    def heuristics(item):
        problem, kernel = item
        try:
            op_graph = graph.operation_graph(
                thread_handle(), problem, kernel, (16, 16, 16), 1.0, 0.0
            )
            return [(problem, kernel, c) for c in graph.heuristic_choices(op_graph)]
        except CudnnError:
            return []

    def build(job):
        problem, kernel, choice = job
        key = f"{problem.key()}|{kernel}|{choice.config.tag}"
        try:
            plan = graph.build_plan(thread_handle(), choice.descriptor, choice.config.tag)
        except CudnnError as exc:
            return key, exc.status_name
        return key, plan.workspace_bytes

    threads = args.child_threads
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        started = time.perf_counter()
        jobs = [job for found in pool.map(heuristics, problems) for job in found]
        heuristics_s = time.perf_counter() - started
        started = time.perf_counter()
        outcomes = dict(pool.map(build, jobs))
        build_s = time.perf_counter() - started
    return {
        "threads": threads,
        "handles": args.child_handles,
        "problems": len(problems),
        "configurations": len(jobs),
        "built": sum(isinstance(v, int) for v in outcomes.values()),
        "heuristics_s": round(heuristics_s, 3),
        "build_s": round(build_s, 3),
        "ms_per_build": round(1000 * build_s / max(1, len(jobs)), 3),
        "outcomes": outcomes,
    }


def _run_child(args: argparse.Namespace, threads: int, handles: str) -> dict:
    command = [
        sys.executable, __file__, "--child-threads", str(threads), "--child-handles", handles,
        "--network", args.network, "--batches", ",".join(map(str, args.batches)),
        "--dtype", args.dtype, "--layout", args.layout,
    ]  # fmt: skip
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=args.child_seconds, check=False
        )
    except subprocess.TimeoutExpired:
        return {"threads": threads, "handles": handles, "error": "timed out (hang?)"}
    wall = round(time.perf_counter() - started, 3)
    if done.returncode != 0:
        how = f"killed by signal {-done.returncode}" if done.returncode < 0 else "failed"
        return {
            "threads": threads, "handles": handles, "error": f"{how} ({done.returncode})",
            "stderr_tail": done.stderr[-2000:], "process_s": wall,
        }  # fmt: skip
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "process_s": wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="resnet50")
    parser.add_argument(
        "--batches", default=[256, 32], type=lambda s: [int(b) for b in s.split(",")]
    )
    parser.add_argument("--dtype", default="float16", choices=sorted(GPU_DTYPES))
    parser.add_argument("--layout", default="NCHW", choices=("NCHW", "NHWC"))
    parser.add_argument(
        "--threads", default=[1, 4, 8, 1], type=lambda s: [int(t) for t in s.split(",")]
    )
    parser.add_argument("--handles", default="shared,per-thread")
    parser.add_argument("--child-seconds", type=float, default=150.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child-threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-handles", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_threads:
        result = child(args)
        print(json.dumps(result))
        return 0
    runs = []
    for handles in args.handles.split(","):
        for threads in args.threads:
            if threads == 1 and handles != "shared":
                continue  # one thread has one handle either way
            runs.append(_run_child(args, threads, handles))
            summary = {k: v for k, v in runs[-1].items() if k != "outcomes"}
            print(json.dumps(summary), file=sys.stderr, flush=True)
    serial = next((r["outcomes"] for r in runs if r.get("threads") == 1 and "outcomes" in r), None)
    for run in runs:
        outcomes = run.pop("outcomes", None)
        if outcomes is not None and serial is not None:  # else: no serial run to compare with
            keys = serial.keys() | outcomes.keys()
            differ = [k for k in keys if serial.get(k) != outcomes.get(k)]
            run["differs_from_serial"] = len(differ)
            run["differences"] = [
                {"key": k, "serial": serial.get(k), "this": outcomes.get(k)} for k in differ[:10]
            ]
    report = {
        "network": args.network, "batches": args.batches, "dtype": args.dtype,
        "layout": args.layout, "cpus": os.cpu_count(), "runs": runs,
    }  # fmt: skip
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
