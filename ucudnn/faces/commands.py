"""What each `ucudnn` subcommand does; `cli.py` only parses arguments.

Every command returns its exit status: 0 done, 1 could not (no GPU, nothing fits, a device or
cuDNN failure), 2 bad input or a solver failure; `cli.main` adds 130 for Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ucudnn.errors import UcudnnError
from ucudnn.faces.info import info_text, unusable_reason
from ucudnn.planner.cli import (
    limit_from_args,
    mode_from_args,
    plan_output,
    plan_tables,
    policy_from_args,
)
from ucudnn.planner.config import Config, database_from_env, default_database, parse_size
from ucudnn.planner.errors import InfeasibleError, SolverError
from ucudnn.planner.networks import load_network
from ucudnn.planner.policies import policy_text
from ucudnn.planner.tables import check_batch
from ucudnn.planner.units import format_size

if TYPE_CHECKING:
    from ucudnn.planner.graph import LayerGraph
    from ucudnn.planner.policies import Policy
    from ucudnn.planner.tables import TimingTables

# A subcommand: the parsed arguments in, the exit status out.
Command = Callable[[argparse.Namespace], int]

MODEL_NOTE = "MODEL timings (built-in cost model, NOT measurements)"


class CommandError(Exception):
    """A message for the user and the exit status that goes with it."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _command(func: Command) -> Command:
    """Turn expected failures into a one-line message and an exit status."""

    def wrapper(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except CommandError as exc:
            print(f"ucudnn {args.command}: {exc}", file=sys.stderr)
            return exc.status
        except InfeasibleError as exc:
            print(f"ucudnn {args.command}: no plan fits: {exc}", file=sys.stderr)
            return 1
        except BrokenPipeError:
            raise  # not an error of the command: its reader went away (see cli.main)
        except (ValueError, OSError, SolverError) as exc:
            print(f"ucudnn {args.command}: error: {exc}", file=sys.stderr)
            return 2
        except UcudnnError as exc:  # the device or cuDNN failed
            print(f"ucudnn {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


# -- shared argument handling -------------------------------------------------------------
def _network(args: argparse.Namespace) -> LayerGraph:
    return load_network(args.network, _batch(args), args.dtype, args.layout)


def _batch(args: argparse.Namespace) -> int | None:
    """--batch, checked as cuDNN takes a batch (1 to 2**31 - 1); None: the network's own."""
    try:
        return None if args.batch is None else check_batch(args.batch)
    except ValueError as exc:
        raise CommandError(f"--batch: {exc} (cuDNN's dimensions are 32-bit)") from None


def _require_gpu() -> None:
    reason = unusable_reason()
    if reason:
        raise CommandError(f"this command needs a GPU: {reason}", status=1)


def _progress(args: argparse.Namespace) -> bool | None:
    """None lets the bar show itself on a terminal only; --quiet turns it off."""
    return False if args.quiet else None


def _database(args: argparse.Namespace, config: Config) -> Path:
    return Path(args.database) if args.database else config.database


def _configuration_problems() -> list[str]:
    """What is wrong with each UCUDNN_* variable, so that `info` can report them all."""
    problems = []
    for name, value in os.environ.items():
        if name.startswith("UCUDNN_"):
            try:
                Config.from_env({name: value})
            except ValueError as exc:
                problems.append(str(exc))
    return problems


def _database_or_default() -> Path:
    """UCUDNN_DATABASE, or the default when it cannot be read (reported as a warning above)."""
    try:
        return database_from_env()
    except ValueError:
        return default_database()


# -- commands ------------------------------------------------------------------------------
@_command
def info(args: argparse.Namespace) -> int:
    """Versions, devices (or why none), configuration problems and the benchmark cache, which
    it only reads: it creates, migrates or recovers nothing."""
    from ucudnn.planner.cache import inspect_cache

    print(info_text())
    for problem in _configuration_problems():
        print(f"warning: {problem}")
    path = Path(args.database) if args.database else _database_or_default()
    print(f"cache: {inspect_cache(path).describe()}")
    return 0


@_command
def bench(args: argparse.Namespace) -> int:
    """Benchmark every kernel of a network into the cache."""
    from ucudnn.runtime.session import open_benchmarker
    from ucudnn.runtime.work import work_from_graph

    config = Config.from_env()
    graph = _network(args)
    _require_gpu()
    with open_benchmarker(_database(args, config), progress=_progress(args)) as benchmarker:
        start = time.perf_counter()
        tables = benchmarker.tables(work_from_graph(graph), policy_from_args(args, config))
        elapsed = time.perf_counter() - start
        counts = benchmarker.counts
    print(
        f"{args.network}: {len(graph.kernel_ids())} kernels; {counts['measured']} problem sizes "
        f"measured, {counts['cached']} served from the cache, in {elapsed:.1f} s"
    )
    if args.export:
        tables.write_csv(args.export)
        print(f"timings written to {args.export} (plan from them anywhere: ucudnn plan --timings)")
    return 0


@_command
def plan(args: argparse.Namespace) -> int:
    """A plan from a timings file, from measurements (GPU), or from the cost model."""
    from ucudnn.planner.tables import TimingTables

    if args.timings is not None:
        if args.network is not None or args.model:
            raise CommandError("give --timings FILE or a NETWORK, not both")
        tables, source = TimingTables.read_csv(args.timings), f"timings file {args.timings}"
    elif args.network is None:
        raise CommandError("give --timings FILE.csv, or a NETWORK to measure (or --model)")
    elif args.model:
        tables, source = _model_tables(args), MODEL_NOTE
    else:
        tables, source = _measured_tables(args)
    if not args.quiet:
        print(f"planning from {source}", file=sys.stderr)
    print(plan_output(plan_tables(tables, args, source), tables, args))
    return 0


def _model_tables(args: argparse.Namespace) -> TimingTables:
    return _model_tables_for(_network(args), policy_from_args(args, Config.from_env()))


def _measured_tables(args: argparse.Namespace) -> tuple[TimingTables, str]:
    from ucudnn.runtime.session import open_benchmarker
    from ucudnn.runtime.work import work_from_graph

    reason = unusable_reason()
    if reason:
        raise CommandError(
            f"no GPU to measure {args.network} on ({reason}); give --timings FILE.csv with "
            "measured timings, or --model to plan from the cost model",
            status=1,
        )
    config = Config.from_env()
    with open_benchmarker(_database(args, config), progress=_progress(args)) as benchmarker:
        tables = benchmarker.tables(work_from_graph(_network(args)), policy_from_args(args, config))
        facts = benchmarker.facts
    return tables, f"measurements on {facts.device_name} (cuDNN {facts.cudnn_version})"


@_command
def run(args: argparse.Namespace) -> int:
    """Execute plan and baseline on the GPU and print measured times side by side."""
    from ucudnn.faces.report import timing_report
    from ucudnn.runtime.benchmark import BenchmarkSettings
    from ucudnn.runtime.check import EquivalenceCheck
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.measure import measure_plan, run_once
    from ucudnn.runtime.work import work_from_graph

    config = Config.from_env()
    mode, limit = mode_from_args(args, config), limit_from_args(args, config)
    work = work_from_graph(_network(args))
    _require_gpu()
    with Handle(
        workspace_limit=limit if mode == "wr" else None,
        total_workspace=None if mode == "wr" else limit,
        policy=policy_from_args(args, config),
        database=_database(args, config),
        benchmark=BenchmarkSettings(progress=_progress(args)),
    ) as handle:
        timings = measure_plan(handle, work, repeats=args.repeats)
        policy = policy_text(handle.policy)
        print(f"{args.network}: {mode.upper()} at {format_size(limit)}, policy {policy}")
        print(timing_report(timings))
        if args.check:
            handle.check = EquivalenceCheck()
            run_once(handle, work)
            for result in handle.check.results:
                print(result)
            if not all(result.ok for result in handle.check.results):
                return 1
    return 0


@_command
def plot(args: argparse.Namespace) -> int:
    """PNG plots of desirable sets and of a plan's per-layer breakdown."""
    from ucudnn.faces import plots
    from ucudnn.planner.tables import TimingTables

    tables = TimingTables.read_csv(args.timings)
    result = plan_tables(tables, args, f"timings file {args.timings}")
    try:
        written = plots.write_plots(tables, result, args.out, layer=args.layer)
    except plots.PlottingUnavailable as exc:
        raise CommandError(str(exc), status=1) from None
    for path in written:
        print(path)
    return 0


@_command
def demo(args: argparse.Namespace) -> int:
    """The main job: on a GPU, measure and run a network; without one, plan and say so."""
    from ucudnn.planner.plan import make_plan_wd, make_plan_wr

    limit = parse_size(args.workspace_limit, "--workspace-limit")
    graph = load_network(args.network, _batch(args))  # bad arguments first, before any output
    print(info_text())
    print()
    reason = unusable_reason()
    if not reason:
        return _demo_gpu(args, limit)
    print(f"No usable GPU ({reason}), so nothing can be measured or run here.")
    print(f"Planning {args.network} at batch {args.batch} from {MODEL_NOTE}.")
    print("On a GPU this command measures, plans and runs the network instead.\n")
    tables = _model_tables_for(graph)
    wr = make_plan_wr(tables, limit, timings_source=MODEL_NOTE)
    print(wr.report())
    budget = limit * len(graph.kernel_ids())
    print()
    print(make_plan_wd(tables, budget, timings_source=MODEL_NOTE).report())
    return 0


def _model_tables_for(graph: LayerGraph, policy: Policy = "powerOfTwo") -> TimingTables:
    from ucudnn.planner.synthetic import model_tables

    return model_tables(((n, graph.problem(n), graph.kernels(n)) for n in graph.layers()), policy)


def _demo_gpu(args: argparse.Namespace, limit: int) -> int:
    import numpy as np

    import ucudnn
    from ucudnn.runtime.check import normalised_l2

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 16, 32, 32), dtype=np.float32)
    w = rng.standard_normal((32, 16, 3, 3), dtype=np.float32)
    y = ucudnn.conv_forward(x, w, padding=1, workspace_limit=limit)
    undivided = ucudnn.conv_forward(x, w, padding=1, workspace_limit=limit, policy="undivided")
    print(f"numpy conv_forward {x.shape} * {w.shape} -> {y.shape}; micro-batched vs undivided: "
          f"normalised L2 {normalised_l2(y, undivided):.2e}\n")  # fmt: skip
    run_args = argparse.Namespace(
        command="demo", network=args.network, batch=args.batch, dtype="float32", layout=None,
        database=None, quiet=False, mode="wr", workspace_limit=args.workspace_limit,
        total_workspace=None, policy=None, repeats=10, check=True,
    )  # fmt: skip
    return run(run_args)
