"""How fast the planner plans, on the CPU (printed, not a test).

First the goals of issue 37, each case with its goal and the figure the goal is about: "CLI"
is the median wall time of whole `ucudnn` processes (python -m ucudnn ..., start-up included,
with the package's bytecode compiled by a first run, as pip compiles an installed package),
"in-process" the median of calls in this process once the inputs exist. The cases:

- ResNet-50 WD under policy "all" at 8, 64 and 512 MiB (CLI, MODEL tables: <= 2 s each);
- `ucudnn tune resnet50 --model --memory 16GiB --policy all` (CLI: <= 5 s);
- ResNet-50 WR under policy "all" (CLI, MODEL tables built for all 256 sizes: <= 0.5 s; the
  in-process figure, tables included, is printed beside it);
- deep-600 WD at 512 MiB (in-process: <= 1 s);
- WD on the measured fp16 engine tables at 64 and 512 MiB (in-process: <= 0.1 s);
- the first WR plan of newly read engine tables (in-process: <= 10 ms; nothing of them is
  worked out yet, as after a read);
- reading those tables, 62,165 rows of .csv.gz (in-process: <= 0.3 s).

The start-up of a bare `ucudnn --version` is printed too: the CLI figures include it.

Then, per network at N=256 with the powerOfTwo policy, two from MODEL timing tables
(ucudnn.planner.synthetic: a documented cost model, not measurements):

- ResNet-50: 53 convolution layers x 3 kernels, many of them identical (repeated blocks);
- deep-600: a chain of 600 convolution layers x 3 kernels = 1,800 kernels, all distinct (the
  widths, image sizes and filter sizes cycle with coprime periods), the planner's worst case;

and one MEASURED: resnet50-engines, the H100 probe's cuDNN graph-API engine configurations for
ResNet-50 fp16 NCHW (tests/data/engines-resnet50-fp16-nchw.csv.gz: 158 kernels, 62,165 rows,
about 400 candidates per kernel where the model has a few dozen).

Times what a user calls: make_plan_wr for every kernel at 64 MiB, and make_plan_wd at budgets
of 64 MiB, 512 MiB and 4 GiB (desirable sets, the ILP, and the ILP over undivided runs that
gives WD's baseline). On ResNet-50 it also times ucudnn.planner.tune.tune: the fastest batch size
per sample within 16 GiB of device memory, over 16 batch sizes from 8 to 256 planned from the
N=256 tables (a memory model and a WD plan per batch that fits). Each figure is the median of
--repeat runs.

    python benchmarks/planner_speed.py [--repeat 5] [--solver highs] \
        [--networks resnet50 deep-600 resnet50-engines] [--no-goals | --goals-only]
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ucudnn.core.problem import ConvProblem
from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.plan import make_plan_wd, make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.tune import TuneResult, tune
from ucudnn.planner.units import format_size

MiB = 1 << 20
BUDGETS = (64 * MiB, 512 * MiB, 4096 * MiB)
BATCH = 256
TUNE_MEMORY = 16 << 30
TUNE_BATCHES = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 192, 224, 240, 256)
TUNED = ("resnet50",)  # deep-600 plans 1,800 kernels per batch: too slow to time 16 times
ENGINE_TABLES = Path(__file__).resolve().parents[1] / "tests/data/engines-resnet50-fp16-nchw.csv.gz"


def deep_chain(layers: int = 600) -> LayerGraph:
    """`layers` distinct convolutions in a chain: channels cycle with period 61, image sizes
    with 4 and filter sizes with 3, so no two layers share a problem below 732 layers."""
    graph = LayerGraph()
    previous: list[str] = []
    for i in range(layers):
        kernel = (1, 3, 5)[i % 3]
        problem = ConvProblem.create(
            BATCH, 32 + 8 * (i % 61), 32 + 8 * (7 * i % 61), ((56, 28, 14, 7)[i % 4],) * 2,
            kernel, kernel // 2,
        )  # fmt: skip
        graph.add_layer(f"layer{i}", problem, after=previous)
        previous = [f"layer{i}"]
    return graph


NETWORKS: dict[str, Callable[[], LayerGraph]] = {
    "resnet50": lambda: builtin_network("resnet50", batch=BATCH),
    "deep-600": deep_chain,
}


def median_s(run: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The median time of `run`, and what it returned last. Each run starts from a collected
    heap, so that it pays for no garbage of the cases before it, and its clock stops after a
    collection of the young objects, the pass that what it made would get next: the planner
    pauses the collector while it works (ucudnn.planner.collector)."""
    times, result = [], None
    for _ in range(repeat):
        result = None
        gc.collect()
        start = time.perf_counter()
        result = run()
        gc.collect(0)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def read_engine_tables() -> TimingTables:
    return TimingTables.read_csv(ENGINE_TABLES)


def engine_tables() -> TimingTables:
    start = time.perf_counter()
    tables = read_engine_tables()
    print(f"resnet50-engines: read {ENGINE_TABLES.name} in {time.perf_counter() - start:.1f} s")
    first_s, _ = median_s(lambda: make_plan_wr(tables, 64 * MiB), 1)
    print(f"  WR, 64 MiB per kernel, first plan of the tables: {first_s * 1e3:8.1f} ms")
    return tables


def report(name: str, tables: TimingTables, repeat: int, solver: str, kind: str) -> None:
    rows = sum(len(list(t)) for _, t in tables.items())
    distinct = len({t.content_key() for _, t in tables.items()})
    print(f"{name}: {len(tables)} kernels ({distinct} distinct tables), {rows} {kind} rows")
    wr_s, _ = median_s(lambda: make_plan_wr(tables, 64 * MiB), repeat)
    print(f"  WR, 64 MiB per kernel, all kernels: {wr_s * 1e3:8.1f} ms")
    for budget in BUDGETS:
        wd_s, plan = median_s(
            lambda budget=budget: make_plan_wd(tables, budget, solver=solver), repeat
        )
        print(
            f"  WD, {format_size(budget):>7} total: {wd_s * 1e3:8.1f} ms; solver {plan.solver} "
            f"({plan.solver_status}), predicted {plan.time_ms:.1f} ms in "
            f"{format_size(plan.workspace_bytes)}"
        )


def report_tune(graph: LayerGraph, tables: TimingTables, repeat: int, solver: str) -> None:
    def run() -> TuneResult:
        # No headroom: docs/planner-speed.md plans the whole 16 GiB, so that runs compare.
        return tune(graph, tables, TUNE_MEMORY, batches=TUNE_BATCHES, solver=solver, overhead="0")

    tune_s, result = median_s(run, repeat)
    assert isinstance(result, TuneResult)
    best, fitting = result.best, sum(p.fits for p in result.points)
    print(
        f"  tune, {len(TUNE_BATCHES)} batches {TUNE_BATCHES[0]}-{TUNE_BATCHES[-1]} in "
        f"{format_size(TUNE_MEMORY)}: {tune_s * 1e3:8.1f} ms; {fitting} fit, best batch "
        f"{best.batch} ({best.samples_per_s or 0:.0f} samples/s predicted)"
    )


# The CLI runs as an installed package does, its bytecode compiled once and then read (pip
# compiles a package as it installs it). This machine sets PYTHONDONTWRITEBYTECODE=1, under
# which a source checkout compiles all of its modules again in every process: 0.1-0.2 s more.
_BYTECODE = tempfile.TemporaryDirectory(prefix="ucudnn-bytecode-")
_CLI_ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPYCACHEPREFIX": _BYTECODE.name,
}


def cli_s(args: list[str], repeat: int) -> float | None:
    """The median wall time of `ucudnn ARGS` as a process, after one run that compiles what it
    loads; None if it fails."""
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "ucudnn", *args], capture_output=True, check=False, env=_CLI_ENV
        )
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            return None
    return statistics.median(times[1:])


def resnet50_model_tables(policy: str) -> TimingTables:
    graph = NETWORKS["resnet50"]()
    return model_tables(((n, graph.problem(n), graph.kernels(n)) for n in graph.layers()), policy)


def goal_row(case: str, figure: str, seconds: float | None, goal_s: float | None) -> str:
    took = "refused" if seconds is None else f"{seconds:8.3f} s"
    if goal_s is None:  # shown for what it adds to the others
        return f"  {case:<52} {figure:<11} {took:>10}"
    met = "no" if seconds is None or seconds > goal_s else "yes"
    return f"  {case:<52} {figure:<11} {took:>10}  <= {goal_s:<5g} s {met}"


def deep_600_s(repeat: int, solver: str) -> float:
    """The median time of deep-600's WD plan at 512 MiB; its tables are dropped on return."""
    graph = deep_chain()
    deep = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
    return median_s(lambda: make_plan_wd(deep, 512 * MiB, solver=solver), repeat)[0]


def report_goals(repeat: int, solver: str) -> None:
    """The cases of issue 37's table, each with its goal and the figure it is about."""
    print(
        f"Goals (issue 37); medians of {repeat}; CLI: whole processes, start-up included, "
        "bytecode compiled"
    )
    print(f"  {'case':<52} {'figure':<11} {'median':>10}  goal      met")
    print(goal_row("ucudnn --version (start-up alone)", "CLI", cli_s(["--version"], repeat), None))
    for budget in ("8MiB", "64MiB", "512MiB"):
        args = ["plan", "resnet50", "--model", "--mode", "wd", "--policy", "all"]
        took = cli_s([*args, "--total-workspace", budget, "--solver", solver], repeat)
        print(goal_row(f"ResNet-50 WD, policy all, {budget}", "CLI", took, 2.0))
    tune_args = ["tune", "resnet50", "--model", "--memory", "16GiB", "--policy", "all"]
    print(goal_row("tune resnet50 --memory 16GiB --policy all", "CLI", cli_s(tune_args, repeat), 5))
    wr_args = ["plan", "resnet50", "--model", "--policy", "all"]
    print(goal_row("ResNet-50 WR, policy all, tables included", "CLI", cli_s(wr_args, repeat), 0.5))
    in_process, _ = median_s(
        lambda: make_plan_wr(resnet50_model_tables("all"), 64 * MiB, "all"), repeat
    )
    print(goal_row("  the same, in-process (MODEL tables, then WR)", "in-process", in_process, 0.5))
    deep_s = deep_600_s(repeat, solver)
    print(goal_row("deep-600 WD, 512 MiB (powerOfTwo)", "in-process", deep_s, 1.0))
    read_s, engines = median_s(read_engine_tables, repeat)
    assert isinstance(engines, TimingTables)
    for nbytes in (64 * MiB, 512 * MiB):
        wd_s, _ = median_s(functools.partial(make_plan_wd, engines, nbytes, solver=solver), repeat)
        print(goal_row(f"fp16 engine tables WD, {format_size(nbytes)}", "in-process", wd_s, 0.1))
    # New tables each time (read before the clock starts): nothing of them is worked out yet.
    first = statistics.median(
        median_s(functools.partial(make_plan_wr, read_engine_tables(), 64 * MiB), 1)[0]
        for _ in range(repeat)
    )
    print(goal_row("first WR plan of new engine tables", "in-process", first, 0.010))
    print(goal_row(f"read_csv of {ENGINE_TABLES.name}", "in-process", read_s, 0.3))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--solver", choices=("highs", "cbc"), default="highs")
    names = (*NETWORKS, "resnet50-engines")
    parser.add_argument("--networks", nargs="+", choices=names, default=list(names))
    goals = parser.add_mutually_exclusive_group()
    goals.add_argument("--no-goals", action="store_true", help="skip issue 37's goals")
    goals.add_argument("--goals-only", action="store_true", help="print only those")
    args = parser.parse_args()
    if not args.no_goals:
        report_goals(args.repeat, args.solver)
    if args.goals_only:
        return
    print(f"N={BATCH}, powerOfTwo; medians of {args.repeat}\n")
    for name in args.networks:
        if name == "resnet50-engines":
            report(name, engine_tables(), args.repeat, args.solver, "MEASURED")
            print()
            continue
        graph = NETWORKS[name]()
        tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
        report(name, tables, args.repeat, args.solver, "MODEL")
        if name in TUNED:
            report_tune(graph, tables, args.repeat, args.solver)
        print()


if __name__ == "__main__":
    main()
