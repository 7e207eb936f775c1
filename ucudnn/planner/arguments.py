"""The options of the planning commands (`ucudnn plan`, `tune`, `run`, `plot`), in a module
that imports only the option vocabularies, so that `--help` does not load the planner.

Help texts state each default in one form: "(default: VALUE)", or "(default: UCUDNN_VARIABLE,
else VALUE)" where the environment changes it.
"""

from __future__ import annotations

import argparse

from ucudnn.planner.choices import (
    DEFAULT_TIME_LIMIT_S,
    SOLVERS,
    TIME_LIMIT_RANGE_S,
    WORKSPACE_SHARING,
)

TIMINGS_FORMAT = """\
The timings CSV (or .csv.gz) has the header layer,kernel,batch,micro_batch,algo,time_ms,
workspace_bytes and optionally math_type,deterministic,engine,slab (see ucudnn.planner.tables).
Sizes are whole bytes and take units: 64MiB, 1.5GiB (KB, MB, GB, TB are decimal)."""

MODE_RULE = """\
The mode is --mode; without it, a total workspace (--total-workspace, else
UCUDNN_TOTAL_WORKSPACE_SIZE) selects wd and --workspace-limit selects wr; an option beats the
environment; with neither, wr at UCUDNN_DEFAULT_WORKSPACE_LIMIT or 64MiB. A total the kernels
share (--workspace-sharing shared) is planned as wr at the total."""

POLICY_HELP = (
    "micro-batch sizes: undivided, powerOfTwo, all, or a list such as 1,2,32 "
    "(default: UCUDNN_BATCH_SIZE_POLICY, else powerOfTwo)"
)


SLAB_POLICY_HELP = (
    "slab extents (planes of the outermost spatial axis per slab) tried at each micro-batch "
    "size, for volumes too large to run whole within the workspace: undivided (none), "
    "powerOfTwo (1, 2, 4, ... below the planes), or a list such as 4,8 "
    "(default: UCUDNN_SLAB_POLICY, else undivided)"
)


def add_policy_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", metavar="POLICY", help=POLICY_HELP)


def add_slab_policy_argument(parser: argparse.ArgumentParser) -> None:
    """--slab-policy: for the commands that measure or model their timings (a timings file
    holds the slab candidates it was measured with)."""
    parser.add_argument("--slab-policy", metavar="POLICY", help=SLAB_POLICY_HELP)


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """--mode, its two sizes and --policy: what every planning command takes."""
    parser.add_argument(
        "--mode",
        choices=("wr", "wd"),
        help="wr: a workspace limit per kernel; wd: one budget shared by all (default: wr if "
        "--workspace-limit is given, wd if --total-workspace or UCUDNN_TOTAL_WORKSPACE_SIZE "
        "is, else wr)",
    )
    parser.add_argument(
        "--workspace-limit",
        metavar="SIZE",
        help="wr: per-kernel limit; selects wr (default: UCUDNN_DEFAULT_WORKSPACE_LIMIT, "
        "else 64MiB)",
    )
    parser.add_argument(
        "--total-workspace",
        metavar="SIZE",
        help="wd: total budget; selects wd (default: UCUDNN_TOTAL_WORKSPACE_SIZE, else none)",
    )
    parser.add_argument(
        "--workspace-sharing",
        choices=WORKSPACE_SHARING,
        help="wd: how the kernels use the total: divided, each its own slice (their sizes add "
        "up), or shared, one buffer each kernel uses in turn (wr at the total) "
        "(default: UCUDNN_WORKSPACE_SHARING, else divided)",
    )
    add_policy_argument(parser)


def add_solver_arguments(parser: argparse.ArgumentParser) -> None:
    """--deterministic, --solver and --time-limit: how plans are chosen."""
    parser.add_argument(
        "--deterministic", action="store_true", help="use deterministic algorithms only"
    )
    parser.add_argument(
        "--solver",
        choices=SOLVERS,
        default=SOLVERS[0],
        help=f"wd: ILP solver (default: {SOLVERS[0]})",
    )
    low, high = TIME_LIMIT_RANGE_S
    parser.add_argument(
        "--time-limit",
        default=DEFAULT_TIME_LIMIT_S,
        metavar="SECONDS",
        help=f"wd: stop the solver after this long, {low:g} to {high:g} "
        f"(default: {DEFAULT_TIME_LIMIT_S:g})",
    )


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `ucudnn plan` that shape the plan and its output."""
    parser.add_argument("--timings", metavar="FILE.csv", help="timings to plan from")
    add_limit_arguments(parser)
    add_slab_policy_argument(parser)
    add_solver_arguments(parser)
    parser.add_argument(
        "--json", action="store_true", help="print the plan as a ucudnn-plan JSON document"
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="also say, per kernel, why it has its schedule: the runner-up of its desirable "
        "set, the time saved and the workspace used",
    )
