"""The `ucudnn` command's arguments: every subcommand, its options, defaults and exit statuses.

Light on purpose: `ucudnn --help` and `--version` load no numpy and no planner. Each
subcommand's function lives in `ucudnn.faces.commands` and is imported when it runs.

The parser follows the command's rules rather than argparse's defaults:
- an error is one line on stderr, naming the subcommand, with a pointer to its --help;
- options are never abbreviated (`--engine` is not `--engines`);
- a value that starts with "-" is taken by the option before it (`--workspace-limit -64MiB`
  reaches the size check, which says what is wrong with it).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from ucudnn.planner.arguments import (
    MODE_RULE,
    TIMINGS_FORMAT,
    add_limit_arguments,
    add_plan_arguments,
    add_policy_argument,
    add_slab_policy_argument,
    add_solver_arguments,
)
from ucudnn.planner.choices import DEFAULT_OVERHEAD_TEXT, DEFAULT_TIME_LIMIT_S, SEARCHES

NETWORKS = "alexnet, vgg16, resnet18, resnet50, deepbench, cnn3d, cnn3d-large, ucudnn-alexnet"
ENDINGS = "130 interrupted (Ctrl-C), 141 its reader went away, 143 terminated (SIGTERM)"


def _exit_statuses(meanings: str) -> str:
    return f"Exit status: {meanings}, {ENDINGS}."


class Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line, "ucudnn plan: error: ...; see ucudnn plan
    --help", and which never takes an abbreviated option."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(allow_abbrev=False, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


class CommandLine(Parser):
    """The top-level parser: it knows its subcommands' parsers, so that an unknown option is
    reported by the subcommand it was given to, and a value that starts with "-" reaches the
    option before it."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.commands: dict[str, Parser] = {}

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            command = self.commands.get(getattr(parsed, "command", None) or "", self)
            command.error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if args is None:
            import sys

            args = sys.argv[1:]
        return super().parse_known_args(self._attach_dashed_values(list(args)), namespace)

    def _attach_dashed_values(self, args: list[str]) -> list[str]:
        """`--opt -64MiB` as `--opt=-64MiB` where --opt takes a value and -64MiB is no option
        of the subcommand: argparse would take it for an option and say "expected one
        argument" instead of what is wrong with the value."""
        options: set[str] = set()  # the subcommand's options, once it is named
        taking_value: set[str] = set()
        attached: list[str] = []
        for token in args:
            if token == "--":
                return attached + args[len(attached) :]
            previous = attached[-1] if attached else ""
            if previous in taking_value and token.startswith("-") and token not in options:
                attached[-1] = f"{previous}={token}"
                continue
            if not options and token in self.commands:
                actions = self.commands[token]._actions
                options = {name for action in actions for name in action.option_strings}
                taking_value = {
                    name for action in actions if action.nargs is None
                    for name in action.option_strings
                }  # fmt: skip
            attached.append(token)
        return attached


class _Version(argparse.Action):
    """--version: the version line, worked out only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from ucudnn.core.build import version_text

        print(version_text())
        parser.exit()


class _Run:
    """A subcommand's function, imported from ucudnn.faces.commands when it runs."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, args: argparse.Namespace) -> int:
        from ucudnn.faces import commands

        command: commands.Command = getattr(commands, self.name)
        return command(args)


def _network_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "network",
        nargs=None if required else "?",
        help=f"built-in network ({NETWORKS}) or a layer-list CSV",
    )
    parser.add_argument(
        "--batch", help="mini-batch size (default: the network's; 256 for a built-in one)"
    )
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=("float32", "float16", "bfloat16", "float64"),
        help="data type of the tensors (default: float32)",
    )
    parser.add_argument(
        "--layout",
        choices=("NCHW", "NHWC", "NCDHW", "NDHWC"),
        help="tensor layout (default: the layer list's, else channels first: NCHW, NCDHW in 3D)",
    )


def _database_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database",
        metavar="PATH",
        help="benchmark cache (default: UCUDNN_DATABASE, else the user cache folder's)",
    )


def _device_arguments(parser: argparse.ArgumentParser) -> None:
    _database_argument(parser)
    _benchmark_arguments(parser)


def _benchmark_arguments(parser: argparse.ArgumentParser) -> None:
    """How a command that benchmarks measures: which candidates, and how thoroughly."""
    parser.add_argument(
        "--engines",
        choices=("on", "off"),
        help="also measure cuDNN's graph-API engine configurations, and plan with them "
        "(default: UCUDNN_ENGINES, else on where they can run: cuDNN >= 9.2 and heuristics "
        "that answer; ucudnn info says which)",
    )
    parser.add_argument(
        "--search",
        choices=SEARCHES,
        default=SEARCHES[0],
        help="how candidates are measured on first use: fast screens them, prunes what cannot "
        "win and confirms the rest; exhaustive times every candidate at every size in full "
        f"(default: {SEARCHES[0]})",
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


def build_parser() -> CommandLine:
    parser = CommandLine(
        prog="ucudnn",
        description="Faster cuDNN convolutions under a workspace budget, by micro-batching.",
    )
    parser.add_argument("--version", action=_Version)
    _verbosity_arguments(parser, before_command=True)
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )

    def command(name: str, summary: str, description: str, exits: str) -> Parser:
        made: Parser = sub.add_parser(
            name,
            help=summary,
            description=description,
            epilog=_exit_statuses(exits),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        made.set_defaults(func=_Run(name))
        parser.commands[name] = made
        return made

    info = command(
        "info",
        "devices, driver, CUDA and cuDNN versions, cache",
        "Print the versions of ucudnn, cuDNN, CUDA and the driver, the devices (or why none is "
        "usable), whether graph-API engines run and why, problems with UCUDNN_* settings, and "
        "the benchmark cache, which it only reads.",
        "0 done, 2 bad input",
    )
    _database_argument(info)
    _json_argument(info, "ucudnn-info")

    bench = command(
        "bench",
        "benchmark a network's kernels into the cache (GPU)",
        "Measure every convolution kernel of NETWORK at the policy's micro-batch sizes on the "
        "GPU, into the benchmark cache (sizes measured before are served from it). --export "
        "writes the timings, with the device and cuDNN they were measured on, for planning "
        "anywhere with `ucudnn plan --timings`.",
        "0 measured, 1 no GPU or a device or cuDNN failure, 2 bad input",
    )
    _network_arguments(bench)
    _device_arguments(bench)
    add_policy_argument(bench)
    add_slab_policy_argument(bench)
    bench.add_argument("--export", metavar="FILE.csv", help="also write the timings as a CSV")
    _json_argument(bench, "ucudnn-bench")

    plan = command(
        "plan",
        "WR or WD plan for a network, from measurements or a timings file",
        "Plan from --timings FILE (no GPU needed), or measure NETWORK on the GPU "
        "(served from the cache when measured before), or plan NETWORK from --model timings. "
        "Without a GPU, NETWORK is planned from the measured timings that ship with ucudnn "
        "where they cover it exactly (its dtype, layout and batch), else from MODEL timings; "
        "the plan names its source either way. --engines off plans with cuDNN's legacy "
        "algorithms only, also from a timings file.\n\n"
        f"{TIMINGS_FORMAT}\n{MODE_RULE}",
        "0 planned, 1 nothing fits or a device or cuDNN failure, 2 bad input or a solver failure",
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

    tune = command(
        "tune",
        "the mini-batch size, and its WD plan, that trains fastest within a memory size",
        "Model the memory of a training step of NETWORK at each batch size, plan "
        "its convolutions (WD) in the memory left, and pick the batch with the most samples per "
        "second. Timings come from --timings FILE, --model, or measurements on the GPU at "
        "--batch (the network's own by default); without a GPU, from the measured timings "
        "that ship with ucudnn where they cover NETWORK at that batch, else MODEL timings. "
        "Batch sizes above the timings' are refused.",
        "0 tuned, 1 no batch fits or a device or cuDNN failure, 2 bad input or a solver failure",
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
    add_policy_argument(tune)
    add_slab_policy_argument(tune)
    add_solver_arguments(tune)
    tune.add_argument("--plot", metavar="FILE.png", help="also plot samples/s and memory by batch")
    _json_argument(tune, "ucudnn-tune")

    run = command(
        "run",
        "run plan and baseline on the GPU; print measured speedups",
        "Plan NETWORK on the GPU (measuring what the cache lacks), run every kernel's plan and "
        "its undivided baseline, and print the measured times side by side on the device "
        f"that ran them.\n\n{MODE_RULE}",
        "0 ran (and every --check passed), 1 a check failed, no GPU, nothing fits, or a device "
        "or cuDNN failure, 2 bad input",
    )
    _network_arguments(run)
    _device_arguments(run)
    add_limit_arguments(run)
    add_slab_policy_argument(run)
    run.add_argument(
        "--repeats", default=10, help="timed runs per kernel (median), 1 to 10000 (default: 10)"
    )
    run.add_argument("--check", action="store_true", help="also compare with undivided runs")
    _json_argument(run, "ucudnn-run")

    plot = command(
        "plot",
        "desirable sets and a plan's breakdown as PNG files",
        "Plan from --timings FILE and draw, as PNG files in --out, the desirable sets of one "
        "layer (--layer, else the one the plan speeds up most) and the plan's per-layer "
        f"breakdown. Needs matplotlib (the [plot] extra).\n\n{TIMINGS_FORMAT}\n{MODE_RULE}",
        "0 plotted, 1 nothing fits or no matplotlib, 2 bad input",
    )
    plot.add_argument("--timings", required=True, metavar="FILE.csv", help="timings to plot")
    add_limit_arguments(plot)
    plot.add_argument(
        "--out", default=".", metavar="DIR", help="where to write the PNGs (default: .)"
    )
    plot.add_argument(
        "--layer", help="plot the desirable sets of this layer (default: the most improved)"
    )
    plot.add_argument("--deterministic", action="store_true", help="deterministic algorithms only")
    _json_argument(plot, "ucudnn-plot")
    plot.set_defaults(solver="highs", time_limit=DEFAULT_TIME_LIMIT_S)

    demo = command(
        "demo",
        "the README's main job: measure on a GPU, else plan",
        "Print the versions and devices. On a GPU, check a NumPy convolution, then measure, "
        "plan and run NETWORK's convolutions (WR at --workspace-limit), checked against "
        "undivided runs. Without one, say so and print WR and WD plans from the cost MODEL.",
        "0 done, 1 a check failed or a device or cuDNN failure, 2 bad input",
    )
    demo.add_argument(
        "--network", default="alexnet", help="network to demonstrate on (default: alexnet)"
    )
    demo.add_argument("--batch", default=128, help="mini-batch size (default: 128)")
    demo.add_argument(
        "--workspace-limit",
        default="64MiB",
        metavar="SIZE",
        help="WR's limit per kernel; WD's budget is this times the kernels (default: 64MiB)",
    )
    _benchmark_arguments(demo)
    _json_argument(demo, "ucudnn-demo")
    for made in parser.commands.values():
        _verbosity_arguments(made, before_command=False)
        # Its usage errors, found after parsing, name the command as argparse's own do.
        made.set_defaults(usage_error=made.error)
    return parser
