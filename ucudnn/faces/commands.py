"""What each `ucudnn` subcommand does; `cli.py` only parses arguments, and `options.py` reads
the values the commands take from them.

Every command returns its exit status: 0 done, 1 could not (no GPU, nothing fits, a device or
cuDNN failure), 2 bad input or a solver failure; `cli.main` adds 130 for Ctrl-C and 143
for SIGTERM.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ucudnn.core.checks import shown
from ucudnn.errors import UcudnnError
from ucudnn.faces import messages
from ucudnn.faces.info import info_text, unusable_reason
from ucudnn.faces.options import (
    batch_list,
    database_or_default,
    database_path,
    engines_choice,
    engines_in_effect,
    network_given,
    read_numbers,
)
from ucudnn.faces.outputs import (
    bench_document,
    demo_document,
    info_document,
    numpy_check_part,
    plot_document,
    run_document,
    tune_document,
)
from ucudnn.planner.cli import (
    PlanOptions,
    check_rows,
    legacy_only,
    limit_from_args,
    mode_from_args,
    plan_output,
    plan_tables,
    policy_from_args,
    slab_policy_from_args,
)
from ucudnn.planner.config import (
    MAX_BYTES,
    Config,
    engines_from_env,
    parse_size,
)
from ucudnn.planner.documents import document_text
from ucudnn.planner.errors import InfeasibleError, SolverError
from ucudnn.planner.networks import load_network
from ucudnn.planner.policies import UNDIVIDED, policy_text
from ucudnn.planner.units import format_size

if TYPE_CHECKING:
    from ucudnn.faces.formats import InfoDocument, NumpyCheck, RunDocument
    from ucudnn.planner.graph import LayerGraph
    from ucudnn.planner.plan import Plan
    from ucudnn.planner.policies import Policy
    from ucudnn.planner.tables import TimingTables
    from ucudnn.runtime.benchmark import BenchmarkSettings
    from ucudnn.runtime.engines_setting import EnginesSetting

# A subcommand: the parsed arguments in, the exit status out.
Command = Callable[[argparse.Namespace], int]

MODEL_NOTE = "MODEL timings (built-in cost model, NOT measurements)"


class CommandError(Exception):
    """A message for the user and the exit status that goes with it."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _command(func: Command) -> Command:
    """Turn expected failures into a one-line error (`show_error`) and an exit status."""

    def wrapper(args: argparse.Namespace) -> int:
        try:
            read_numbers(args)
            return func(args)
        except CommandError as exc:
            show_error(args.command, str(exc))
            return exc.status
        except InfeasibleError as exc:
            show_error(args.command, f"no plan fits: {exc}")
            return 1
        except BrokenPipeError:
            raise  # not an error of the command: its reader went away (see cli.main)
        except (ValueError, OSError, SolverError) as exc:
            show_error(args.command, _error_text(exc))
            return 2
        except UcudnnError as exc:  # the device or cuDNN failed
            show_error(args.command, f"{type(exc).__name__}: {exc}")
            return 1

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


def _error_text(exc: Exception) -> str:
    """The message of `exc`; of an OSError, with its file names cut short (str() of one
    quotes them whole: a pasted 24 KiB --timings would come back)."""
    if not isinstance(exc, OSError) or exc.filename is None or not exc.strerror:
        return str(exc)
    names = [exc.filename] if exc.filename2 is None else [exc.filename, exc.filename2]
    return f"{exc.strerror}: {' -> '.join(shown(os.fsdecode(n)) for n in names)}"


def show_error(command: str, message: str) -> None:
    """Show `message` on stderr as every error of `command` is: "ucudnn plan: error: ..."."""
    print(f"{messages.line_prefix(command)}: error: {message}", file=sys.stderr)


# -- what the commands share --------------------------------------------------------------
def _network(args: argparse.Namespace) -> LayerGraph:
    return load_network(args.network, args.batch, args.dtype, args.layout)


def _require_gpu() -> None:
    reason = unusable_reason()
    if reason:
        raise CommandError(f"this command needs a GPU: {reason}", status=1)


def _benchmark_settings(args: argparse.Namespace) -> BenchmarkSettings:
    """How the command measures: --engines (unset: as a Handle decides), --search, for
    deterministic plans where --deterministic asks for them, and a progress bar for a person
    watching."""
    from ucudnn.runtime.benchmark import BenchmarkSettings

    return BenchmarkSettings(
        progress=_progress(args), engines=engines_choice(args), search=args.search,
        deterministic_only=getattr(args, "deterministic", False),
    )  # fmt: skip


def _progress(args: argparse.Namespace) -> bool:
    """Whether long work shows a progress bar (on stderr): only for a person watching, so
    only when stdout and stderr are both terminals (not when piped, redirected or read by a
    program, as --json output usually is), and never with -q."""
    return not args.quiet and sys.stderr.isatty() and sys.stdout.isatty()


def _emit(document: Mapping[str, object]) -> None:
    """Print a --json document: the one thing on stdout."""
    print(document_text(document))


def _configuration_problems() -> list[str]:
    """What is wrong with each UCUDNN_* variable, so that `info` can report them all: the
    settings' and the cache's own (its lock timeout)."""
    from ucudnn.planner.cache import timeout_from_env

    problems = []
    for name, value in os.environ.items():
        if name.startswith("UCUDNN_"):
            for read in (Config.from_env, timeout_from_env):
                try:
                    read({name: value})
                except ValueError as exc:
                    problems.append(str(exc))
    return problems


# -- commands ------------------------------------------------------------------------------
@_command
def info(args: argparse.Namespace) -> int:
    """Versions, devices (or why none), configuration problems and the benchmark cache, which
    it only reads: it creates, migrates or recovers nothing."""
    from ucudnn.planner.cache import inspect_cache

    path = Path(args.database) if args.database else database_or_default()
    engines = engines_in_effect(args)
    if args.json:
        _emit(_info_document(path, engines))
        return 0
    print(info_text(engines))
    for problem in _configuration_problems():
        print(f"warning: {problem}")
    print(f"cache: {inspect_cache(path).describe()}")
    return 0


def _info_document(database: Path, engines: EnginesSetting) -> InfoDocument:
    from ucudnn.core import device
    from ucudnn.planner.cache import inspect_cache

    return info_document(device.info(), _configuration_problems(), inspect_cache(database), engines)


@_command
def bench(args: argparse.Namespace) -> int:
    """Benchmark every kernel of a network into the cache."""
    from ucudnn.runtime.session import open_benchmarker
    from ucudnn.runtime.work import work_from_graph

    config = Config.from_env()
    graph, policy = _network(args), policy_from_args(args, config)
    slab_policy = slab_policy_from_args(args, config)
    _require_gpu()
    with open_benchmarker(database_path(args, config), _benchmark_settings(args)) as benchmarker:
        start = time.perf_counter()
        tables = benchmarker.tables(work_from_graph(graph), policy, slab_policy=slab_policy)
        elapsed = time.perf_counter() - start
        counts, facts = benchmarker.counts, benchmarker.facts
    kernels = len(graph.kernel_ids())
    if args.export:
        tables.device = facts  # the CSV records where it was measured
        tables.write_csv(args.export)
    if args.json:
        network = network_given(args)
        _emit(bench_document(network, policy, kernels, counts, elapsed, args.export, facts, tables))
        return 0
    print(
        f"{args.network}: {kernels} kernels on {facts.device_name}; {counts['measured']} "
        f"problem sizes measured, {counts['cached']} served from the cache, in {elapsed:.1f} s"
    )
    if args.export:
        print(f"timings written to {args.export} (plan from them anywhere: ucudnn plan --timings)")
    return 0


@_command
def plan(args: argparse.Namespace) -> int:
    """A plan from a timings file, from measurements (the GPU's, or those shipped with
    ucudnn), or from the cost model."""
    if args.timings is not None and args.network is not None:
        raise CommandError("give --timings FILE or a NETWORK, not both")
    if args.timings is not None and args.model:
        raise CommandError("give --timings FILE or --model, not both")
    if args.timings is None and args.network is None:
        raise CommandError("give --timings FILE.csv, or a NETWORK to measure (or --model)")
    options = PlanOptions.from_args(args)
    if args.timings is not None:
        tables, source = _timings_file(args)
    else:
        graph = _network(args)
        if args.model:
            tables = _model_tables_for(graph, options.policy, options.slab_policy)
            source = MODEL_NOTE
        else:
            tables, source = _network_timings(args, graph, options.policy, options.slab_policy)
    if not args.quiet:
        print(f"planning from {source}", file=sys.stderr)
    print(plan_output(plan_tables(tables, options, args, source), tables, args))
    return 0


def _timings_file(args: argparse.Namespace) -> tuple[TimingTables, str]:
    """The timings of --timings and where they come from; without their engine rows when
    engines are off (--engines off, else UCUDNN_ENGINES), as a Handle would run them. Their
    slab rows are what was measured: --slab-policy, which says what to measure or model, is
    refused beside them."""
    from ucudnn.planner.tables import TimingTables
    from ucudnn.runtime.engines_setting import EnginesRequest

    if getattr(args, "slab_policy", None) is not None:
        raise CommandError(
            "--slab-policy says which slab extents to measure or model; a timings file holds "
            "those it was measured with"
        )
    tables = TimingTables.read_csv(args.timings)
    source = f"timings file {args.timings}"
    if tables.device is not None:
        source += f", measured on {tables.device.describe()}"
    check_rows(tables, source)
    if EnginesRequest.of(engines_choice(args), engines_from_env()).asked is False:
        tables, source = legacy_only(tables), f"{source}, legacy algorithms only (engines off)"
    return tables, source


@_command
def tune(args: argparse.Namespace) -> int:
    """The batch size, and its plan, with the most samples per second within --memory."""
    from ucudnn.faces import plots
    from ucudnn.planner.memory import parse_overhead
    from ucudnn.planner.tune import tune as tune_network

    config = Config.from_env()
    if args.plot:
        _check_plotting()
    memory = parse_size(args.memory, "--memory")
    overhead = parse_overhead(args.framework_overhead, "--framework-overhead")
    batches = None if args.batches is None else batch_list(args.batches)
    policy, slab_policy = policy_from_args(args, config), slab_policy_from_args(args, config)
    graph = _network(args)
    if args.timings is not None:
        if args.model:
            raise CommandError("give --timings FILE or --model, not both")
        if args.batch is not None:
            raise CommandError(
                "--batch is the batch to measure or model at; a timings file has its own"
            )
        tables, source = _timings_file(args)
    elif args.model:
        tables, source = _model_tables_for(graph, policy, slab_policy), MODEL_NOTE
    else:
        tables, source = _network_timings(args, graph, policy, slab_policy)
    if not args.quiet:
        print(f"tuning from {source}", file=sys.stderr)
    result = tune_network(
        graph, tables, memory, batches=batches, overhead=overhead, policy=policy,
        deterministic_only=args.deterministic, solver=args.solver,
        time_limit_s=args.time_limit, timings_source=source,
    )  # fmt: skip
    plot = plots.write_tune_plot(result, args.plot) if args.plot else None
    if args.json:
        _emit(tune_document(network_given(args), result, plot))
        return 0
    assert result.best.plan is not None  # the best point fits
    print(result.report())
    print()
    print(result.best.plan.report())
    if plot is not None:
        print(f"plot written to {plot}")
    return 0


def _check_plotting() -> None:
    """Whether plots can be drawn, asked before any work is done or anything is created."""
    from ucudnn.faces import plots

    try:
        plots.pyplot()
    except plots.PlottingUnavailable as exc:
        raise CommandError(str(exc), status=1) from None


def _network_timings(
    args: argparse.Namespace, graph: LayerGraph, policy: Policy, slab_policy: Policy
) -> tuple[TimingTables, str]:
    """NETWORK's timings, and where they come from, when neither --timings nor --model is
    given: measured on the GPU; without one, the measurements that ship with ucudnn where they
    cover the network exactly (they hold no slabs: only under slab policy undivided), else
    MODEL timings (the log says why)."""
    from ucudnn.planner.measured import shipped_tables

    if not unusable_reason():
        return _measured_tables(args, graph, policy, slab_policy)
    shipped = shipped_tables(args.network, graph) if slab_policy == UNDIVIDED else None
    if shipped is not None:
        return shipped.tables, shipped.label
    return _model_tables_for(graph, policy, slab_policy), MODEL_NOTE


def _measured_tables(
    args: argparse.Namespace, graph: LayerGraph, policy: Policy, slab_policy: Policy
) -> tuple[TimingTables, str]:
    from ucudnn.runtime.session import open_benchmarker
    from ucudnn.runtime.work import work_from_graph

    database = database_path(args, Config.from_env())
    with open_benchmarker(database, _benchmark_settings(args)) as benchmarker:
        tables = benchmarker.tables(work_from_graph(graph), policy, slab_policy=slab_policy)
        tables.device = benchmarker.facts
    return tables, f"measurements on {tables.device.describe()}"


@_command
def run(args: argparse.Namespace) -> int:
    """Execute plan and baseline on the GPU and print measured times side by side."""
    status, document = _run_network(args)
    if document is not None:
        _emit(document)
    return status


def _run_network(args: argparse.Namespace) -> tuple[int, RunDocument | None]:
    """Measure plan and baseline of the network on the GPU, and compare them with undivided
    runs (--check): print what it finds as it goes, or with --json return it as a ucudnn-run
    document instead. The exit status is 1 when a comparison fails."""
    from ucudnn.faces.report import timing_report
    from ucudnn.runtime.check import CheckResult, EquivalenceCheck
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.measure import measure_plan, run_once
    from ucudnn.runtime.work import work_from_graph

    config = Config.from_env()
    mode, limit = mode_from_args(args, config), limit_from_args(args, config)
    work = work_from_graph(_network(args))
    _require_gpu()
    checks: list[CheckResult] | None = None
    with Handle(
        workspace_limit=limit if mode == "wr" else None,
        total_workspace=None if mode == "wr" else limit,
        policy=policy_from_args(args, config),
        slab_policy=slab_policy_from_args(args, config),
        database=database_path(args, config),
        benchmark=_benchmark_settings(args),
    ) as handle:
        timings = measure_plan(handle, work, repeats=args.repeats, progress=_progress(args))
        if not args.json:
            policy = policy_text(handle.policy)
            device = handle.plan.device if handle.plan is not None else None
            where = f" on {device.describe()}" if device is not None else ""
            print(f"{args.network}: {mode.upper()} at {format_size(limit)}, policy {policy}{where}")
            print(timing_report(timings))
        if args.check:
            handle.check = EquivalenceCheck()
            run_once(handle, work)
            checks = handle.check.results
            if not args.json:
                for result in checks:
                    print(result)
        plan = handle.plan
    status = 0 if checks is None or all(result.ok for result in checks) else 1
    if not args.json:
        return status, None
    assert plan is not None  # measure_plan planned the work
    return status, run_document(network_given(args), args.repeats, timings, checks, plan)


@_command
def plot(args: argparse.Namespace) -> int:
    """PNG plots of desirable sets and of a plan's per-layer breakdown."""
    from ucudnn.faces import plots

    _check_plotting()
    options = PlanOptions.from_args(args)
    tables, source = _timings_file(args)
    result = plan_tables(tables, options, args, source)
    layer = args.layer or plots.most_improved_layer(result)
    written = plots.write_plots(tables, result, args.out, layer=layer)
    if args.json:
        _emit(plot_document(layer, written))
        return 0
    for path in written:
        print(path)
    return 0


@_command
def demo(args: argparse.Namespace) -> int:
    """The main job: on a GPU, measure and run a network; without one, plan and say so."""
    from ucudnn.planner.plan import make_plan_wd, make_plan_wr

    limit = parse_size(args.workspace_limit, "--workspace-limit")
    graph = load_network(args.network, args.batch)  # bad arguments first, before any output
    engines = engines_in_effect(args)
    if not args.json:
        print(info_text(engines))
        print()
    reason = unusable_reason()
    if not reason:
        status, numpy_check, run_part = _demo_gpu(args, limit)
        if args.json:
            info_part = _info_document(database_or_default(), engines)
            _emit(
                demo_document(args.network, args.batch, limit, info_part,
                              numpy_check=numpy_check, run=run_part)
            )  # fmt: skip
        return status
    if not args.json:
        print(f"No usable GPU ({reason}), so nothing can be measured or run here.")
        print(f"Planning {args.network} at batch {args.batch} from {MODEL_NOTE}.")
        print("On a GPU this command measures, plans and runs the network instead.\n")
    tables = _model_tables_for(graph)
    wr = make_plan_wr(tables, limit, timings_source=MODEL_NOTE)
    # Each kernel its limit; past any memory's size a budget means no more.
    budget = min(limit * len(graph.kernel_ids()), MAX_BYTES)
    wd = _with_baselines_of(make_plan_wd(tables, budget, timings_source=MODEL_NOTE), wr)
    if args.json:
        info_part = _info_document(database_or_default(), engines)
        _emit(demo_document(args.network, args.batch, limit, info_part, model_plans=(wr, wd)))
        return 0
    print(
        f"Both plans are compared with one baseline: each kernel's fastest undivided algorithm "
        f"within {format_size(limit)}.\n"
    )
    print(wr.report())
    print()
    print(wd.report())
    return 0


def _with_baselines_of(plan: Plan, reference: Plan) -> Plan:
    """`plan` compared with `reference`'s baselines: WD's own baseline is the undivided plan
    within its budget, whose per-kernel choices trade workspace among kernels, so beside a WR
    plan its kernels would each be measured against something else."""
    return dataclasses.replace(
        plan,
        kernels=tuple(
            dataclasses.replace(k, baseline=reference[k.kernel_id].baseline) for k in plan.kernels
        ),
    )


def _model_tables_for(
    graph: LayerGraph, policy: Policy = "powerOfTwo", slab_policy: Policy = UNDIVIDED
) -> TimingTables:
    from ucudnn.planner.synthetic import model_tables

    layers = ((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
    return model_tables(layers, policy, slab_policy)


def _demo_gpu(args: argparse.Namespace, limit: int) -> tuple[int, NumpyCheck, RunDocument | None]:
    """A checked numpy convolution, then the network run and checked: (exit status, the
    convolution's document part, the run's document with --json)."""
    import numpy as np

    import ucudnn
    from ucudnn.runtime.check import normalised_l2

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 16, 32, 32), dtype=np.float32)
    w = rng.standard_normal((32, 16, 3, 3), dtype=np.float32)
    engines = engines_choice(args)
    y = ucudnn.conv_forward(x, w, padding=1, workspace_limit=limit, engines=engines)
    undivided = ucudnn.conv_forward(
        x, w, padding=1, workspace_limit=limit, policy="undivided", engines=engines
    )
    distance = normalised_l2(y, undivided)
    if not args.json:
        print(f"numpy conv_forward {x.shape} * {w.shape} -> {y.shape}; micro-batched vs "
              f"undivided: normalised L2 {distance:.2e}\n")  # fmt: skip
    status, run_part = _run_network(_demo_run_arguments(args))
    return status, numpy_check_part(x.shape, w.shape, y.shape, distance), run_part


def _demo_run_arguments(args: argparse.Namespace) -> argparse.Namespace:
    """What the demo runs: `ucudnn run NETWORK --check` in WR mode at the demo's limit, with
    its -q (so its progress bars too), --json, --engines and --search."""
    return argparse.Namespace(
        command="demo", network=args.network, batch=args.batch, dtype="float32", layout=None,
        database=None, quiet=args.quiet, json=args.json, mode="wr",
        workspace_limit=args.workspace_limit, total_workspace=None, policy=None, repeats=10,
        check=True, engines=args.engines, search=args.search,
    )  # fmt: skip
