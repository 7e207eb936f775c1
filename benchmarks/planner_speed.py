"""How fast the planner plans a ResNet-50-sized network (CPU only; printed, not a test).

53 convolution layers x 3 kernels at N=256 with the powerOfTwo policy, from MODEL timing
tables (ucudnn.planner.synthetic: a documented cost model, not measurements). Times what a
user calls: make_plan_wr for every kernel at 64 MiB, and make_plan_wd at budgets of 64 MiB,
512 MiB and 4 GiB (desirable sets, the ILP, and the ILP over undivided runs that gives WD's
baseline). Each figure is the median of --repeat runs.

    python benchmarks/planner_speed.py [--repeat 7] [--solver highs]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from ucudnn.planner.networks import builtin_network
from ucudnn.planner.plan import make_plan_wd, make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.units import format_size

MiB = 1 << 20
BUDGETS = (64 * MiB, 512 * MiB, 4096 * MiB)


def median_s(run: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--solver", choices=("highs", "cbc"), default="highs")
    args = parser.parse_args()

    graph = builtin_network("resnet50", batch=256)
    tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
    rows = sum(len(list(t)) for _, t in tables.items())
    print(f"ResNet-50, N=256, powerOfTwo: {len(graph)} layers, {len(tables)} kernels,")
    print(f"{rows} MODEL timing rows (not measurements)\n")

    distinct = len({t.content_key() for _, t in tables.items()})
    print(f"{distinct} distinct tables (identical layers share measurements and answers)\n")

    wr_s, _ = median_s(lambda: make_plan_wr(tables, 64 * MiB), args.repeat)
    print(f"WR, 64 MiB per kernel, all kernels: {wr_s * 1e3:8.1f} ms")
    for budget in BUDGETS:
        wd_s, plan = median_s(
            lambda budget=budget: make_plan_wd(tables, budget, solver=args.solver), args.repeat
        )
        print(
            f"WD, {format_size(budget):>7} total: {wd_s * 1e3:7.1f} ms; {plan.solver} "
            f"{plan.solver_status}, predicted {plan.time_ms:.1f} ms in "
            f"{format_size(plan.workspace_bytes)}"
        )


if __name__ == "__main__":
    main()
