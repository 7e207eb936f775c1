"""The `ucudnn` command: info, bench, plan, run, plot and demo."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

from ucudnn.core.build import version_text
from ucudnn.faces import commands, messages
from ucudnn.planner.cli import add_limit_arguments, add_plan_arguments, add_solver_arguments
from ucudnn.planner.memory import DEFAULT_OVERHEAD_TEXT
from ucudnn.planner.search import SEARCHES
from ucudnn.planner.wd import DEFAULT_TIME_LIMIT_S

# The options that name a file or folder, by their dest. An empty one is refused: unchecked, it
# would skip the output (`if args.plot`), write to the current folder (--out) or fall back to a
# default (--database) without a word.
_PATH_OPTIONS = {
    "timings": "--timings",
    "export": "--export",
    "plot": "--plot",
    "out": "--out",
    "database": "--database",
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be, so that the same cleanup runs
    (atomic_write removes its temporary file) before the command exits 143."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def _interrupts() -> Iterator[None]:
    """While a command runs: SIGTERM raises Terminated (unless it is ignored or handled by
    someone else), and an interrupt that a finalizer dropped is raised again."""
    previous_hook = sys.unraisablehook

    def raise_again(unraisable: sys.UnraisableHookArgs) -> None:
        # Python prints and drops an exception raised in a finalizer ("Exception ignored
        # in ..."), and the command would run on: a Ctrl-C lands in one when the WD solver's
        # objects are freed. Raised here it would be dropped again, so a one-shot profile
        # function raises it at the next call or return after this hook, in the code the
        # finalizer interrupted (Python unsets a profile function that raises).
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            previous_hook(unraisable)
            return
        interrupt = type(unraisable.exc_value)

        def reraise(frame: FrameType, event: str, arg: object) -> None:
            if frame.f_code is not raise_again.__code__:
                raise interrupt

        sys.setprofile(reraise)

    terminate = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    if terminate:
        signal.signal(signal.SIGTERM, _terminate)
    sys.unraisablehook = raise_again
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        if terminate:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _network_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "network",
        nargs=None if required else "?",
        help="built-in network (alexnet, vgg16, resnet18, resnet50, deepbench, cnn3d, "
        "ucudnn-alexnet) or a layer-list CSV",
    )
    parser.add_argument("--batch", help="mini-batch size (default: the network's)")
    parser.add_argument(
        "--dtype", default="float32", choices=("float32", "float16", "bfloat16", "float64")
    )
    parser.add_argument("--layout", choices=("NCHW", "NHWC", "NCDHW", "NDHWC"))


def _device_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database", metavar="PATH", help="benchmark cache (UCUDNN_DATABASE)")
    _benchmark_arguments(parser)


def _benchmark_arguments(parser: argparse.ArgumentParser) -> None:
    """How a command that benchmarks measures: which candidates, and how thoroughly."""
    parser.add_argument(
        "--engines",
        choices=("on", "off"),
        help="also measure cuDNN's graph-API engine configurations (default: UCUDNN_ENGINES, "
        "else on where they can run: cuDNN >= 9.2 and heuristics that answer; ucudnn info "
        "says which)",
    )
    parser.add_argument(
        "--search",
        choices=SEARCHES,
        default="fast",
        help="how candidates are measured on first use: fast screens them, prunes what cannot "
        "win and confirms the rest; exhaustive times every candidate at every size in full "
        "(default: fast)",
    )


def _json_argument(parser: argparse.ArgumentParser, document: str) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help=f"print a {document} JSON document instead (fields: ucudnn.faces.schemas)",
    )


def _verbosity_arguments(parser: argparse.ArgumentParser, before_command: bool) -> None:
    """-v and -q, taken before the command and after it. After it, -q defaults to SUPPRESS so
    that it keeps a -q given before, and -v counts apart: `main` adds the two counts up."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        dest="verbose" if before_command else "verbose_after_command",
        help="say more on stderr: -v what is planned and measured, -vv every detail",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if before_command else argparse.SUPPRESS,
        help="errors only: no warnings, no progress bar",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ucudnn",
        description="Faster cuDNN convolutions under a workspace budget, by micro-batching.",
    )
    parser.add_argument("--version", action="version", version=version_text())
    _verbosity_arguments(parser, before_command=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = sub.add_parser("info", help="devices, driver, CUDA and cuDNN versions, cache")
    info.add_argument("--database", metavar="PATH", help="benchmark cache (UCUDNN_DATABASE)")
    _json_argument(info, "ucudnn-info")
    info.set_defaults(func=commands.info)

    bench = sub.add_parser("bench", help="benchmark a network's kernels into the cache (GPU)")
    _network_arguments(bench)
    _device_arguments(bench)
    bench.add_argument("--policy", help="micro-batch sizes (default: powerOfTwo)")
    bench.add_argument("--export", metavar="FILE.csv", help="also write the timings as a CSV")
    _json_argument(bench, "ucudnn-bench")
    bench.set_defaults(func=commands.bench)

    plan = sub.add_parser(
        "plan",
        help="WR or WD plan for a network, from measurements or a timings file",
        description="Plan from --timings FILE (no GPU needed), or measure NETWORK on the GPU "
        "(served from the cache when measured before), or plan NETWORK from --model timings. "
        "Without a GPU, NETWORK is planned from the measured timings that ship with ucudnn "
        "where they cover it exactly (its dtype, layout and batch), else from MODEL timings; "
        "the plan names its source either way.",
    )
    add_plan_arguments(plan)
    _network_arguments(plan, required=False)
    _device_arguments(plan)
    plan.add_argument(
        "--model",
        action="store_true",
        help="plan NETWORK from the built-in cost MODEL (not measurements; for trying the "
        "planner without a GPU)",
    )
    plan.set_defaults(func=commands.plan)

    tune = sub.add_parser(
        "tune",
        help="the mini-batch size, and its WD plan, that trains fastest within a memory size",
        description="Model the memory of a training step of NETWORK at each batch size, plan "
        "its convolutions (WD) in the memory left, and pick the batch with the most samples per "
        "second. Timings come from --timings FILE, --model, or measurements on the GPU at "
        "--batch (the network's own by default); without a GPU, from the measured timings "
        "that ship with ucudnn where they cover NETWORK at that batch, else MODEL timings. "
        "Batch sizes above the timings' are refused.",
    )
    _network_arguments(tune)
    _device_arguments(tune)
    tune.add_argument(
        "--memory", required=True, metavar="SIZE", help="device memory for the whole step"
    )
    tune.add_argument(
        "--batches",
        metavar="LIST",
        help="batch sizes to try, such as 32,64,96 (default: powers of two and multiples "
        "of 8 up to the timings' batch)",
    )
    tune.add_argument(
        "--framework-overhead",
        default=DEFAULT_OVERHEAD_TEXT,
        metavar="SIZE|P%",
        help="headroom for the memory the model does not see: a size (CUDA context, library "
        "handles, optimizer state), a percentage of the per-sample memory (allocator slack, "
        "layers between convolutions), or both: 1GiB+30%%; 0 for none (default: "
        f"{DEFAULT_OVERHEAD_TEXT.replace('%', '%%')})",
    )
    tune.add_argument("--timings", metavar="FILE.csv", help="timings of NETWORK to plan from")
    tune.add_argument(
        "--model", action="store_true", help="plan from the built-in cost MODEL (not measurements)"
    )
    tune.add_argument("--policy", metavar="POLICY", help="micro-batch sizes (default: powerOfTwo)")
    add_solver_arguments(tune)
    tune.add_argument("--plot", metavar="FILE.png", help="also plot samples/s and memory by batch")
    _json_argument(tune, "ucudnn-tune")
    tune.set_defaults(func=commands.tune)

    run = sub.add_parser("run", help="run plan and baseline on the GPU; print measured speedups")
    _network_arguments(run)
    _device_arguments(run)
    add_limit_arguments(run)
    run.add_argument("--repeats", default=10, help="timed runs per kernel (median), 1 to 10000")
    run.add_argument("--check", action="store_true", help="also compare with undivided runs")
    _json_argument(run, "ucudnn-run")
    run.set_defaults(func=commands.run)

    plot = sub.add_parser("plot", help="desirable sets and a plan's breakdown as PNG files")
    plot.add_argument("--timings", required=True, metavar="FILE.csv", help="timings to plot")
    add_limit_arguments(plot)
    plot.add_argument("--out", default=".", metavar="DIR", help="where to write the PNGs")
    plot.add_argument("--layer", help="plot the desirable sets of this layer")
    plot.add_argument("--deterministic", action="store_true", help="deterministic algorithms only")
    _json_argument(plot, "ucudnn-plot")
    plot.set_defaults(func=commands.plot, solver="highs", time_limit=DEFAULT_TIME_LIMIT_S)

    demo = sub.add_parser("demo", help="the README's main job: measure on a GPU, else plan")
    demo.add_argument("--network", default="alexnet", help="network to demonstrate on")
    demo.add_argument("--batch", default=128, help="mini-batch size (default: 128)")
    demo.add_argument("--workspace-limit", default="64MiB", metavar="SIZE")
    _benchmark_arguments(demo)
    _json_argument(demo, "ucudnn-demo")
    demo.set_defaults(func=commands.demo)
    for command in sub.choices.values():
        _verbosity_arguments(command, before_command=False)
        # Its usage errors, found after parsing, name the command as argparse's own do.
        command.set_defaults(usage_error=command.error)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    verbosity = args.verbose + args.verbose_after_command
    if args.quiet and verbosity:
        args.usage_error("give -q or -v, not both")
    empty = [option for dest, option in _PATH_OPTIONS.items() if getattr(args, dest, None) == ""]
    if empty:
        commands.show_error(args.command, f"{empty[0]} is empty; expected a path")
        return 2
    verbosity = messages.QUIET if args.quiet else verbosity
    with messages.shown(verbosity, args.command), _interrupts():
        try:
            command: commands.Command = args.func  # set by the subcommand's parser
            return command(args)
        except Terminated:
            return 143  # 128 + SIGTERM, quietly: whoever sent it knows why
        except KeyboardInterrupt:
            commands.show_error(args.command, "interrupted")
            return 130  # 128 + SIGINT, as shells report a process stopped by Ctrl-C
        except BrokenPipeError:
            # The reader went away (`ucudnn plan ... | head`): stop quietly, as Unix tools do,
            # and keep Python from complaining when it flushes stdout at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141  # 128 + SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
