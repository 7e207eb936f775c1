"""Where a first use's time goes: cProfile of one empty-cache benchmark of a network on the
device (the calling thread only: plan builds on the build threads show as waits).

    python benchmarks/profile_first_use.py [--network resnet50] [--dtype float16] [--top 40]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import pstats
import sys
import tempfile
import time
from pathlib import Path

DTYPES = {"float16": "tensor_op", "bfloat16": "tensor_op", "float32": "fma"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--dtype", default="float16", choices=sorted(DTYPES))
    parser.add_argument("--search", default="fast", choices=("fast", "exhaustive"))
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)

    from ucudnn._native import _cudnn
    from ucudnn.core.device import device_facts
    from ucudnn.planner.cache import BenchmarkCache
    from ucudnn.planner.networks import load_network
    from ucudnn.runtime.benchmark import Benchmarker, BenchmarkSettings
    from ucudnn.runtime.work import Work, work_from_graph

    graph = load_network(args.network, None, args.dtype, "NCHW")
    work = [
        Work(w.layer, dataclasses.replace(w.problem, math_type=DTYPES[args.dtype]), w.kernel)
        for w in work_from_graph(graph)
    ]
    settings = BenchmarkSettings(
        warmup=3, repeats=10, workspace_cap="4GiB", progress=False, engines=True,
        search=args.search,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, BenchmarkCache(Path(tmp) / "c.sqlite") as cache:
        benchmarker = Benchmarker(_cudnn.Handle(), device_facts(), cache, settings)
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.runcall(benchmarker.tables, work, "powerOfTwo")
        print(f"first use: {time.perf_counter() - started:.1f} s; {benchmarker.search_counts}")
    pstats.Stats(profile, stream=sys.stdout).sort_stats("cumulative").print_stats(args.top)
    pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
