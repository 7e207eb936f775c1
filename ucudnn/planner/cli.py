"""The planner's part of `ucudnn plan`: its options, a plan from tables and options, and what
the command prints of it.

Pure Python, so that planning from a timings CSV works without a GPU; `ucudnn.faces.cli`
mounts it and decides where the tables come from.
"""

from __future__ import annotations

import argparse

from ucudnn.planner.config import WORKSPACE_SHARING, Config, parse_policy, parse_size
from ucudnn.planner.documents import document_text
from ucudnn.planner.explain import explain_plan
from ucudnn.planner.plan import Plan, make_plan_wd, make_plan_wr
from ucudnn.planner.policies import Policy
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.wd import DEFAULT_TIME_LIMIT_S, SOLVERS

EPILOG = """\
The timings CSV has the header layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes
and optionally math_type,deterministic,engine (see ucudnn.planner.tables). Sizes are whole
bytes and take units: 64MiB, 1.5GiB (KB, MB, GB, TB are decimal).
The mode is --mode; without it, a total workspace (--total-workspace, else
UCUDNN_TOTAL_WORKSPACE_SIZE) selects wd and --workspace-limit selects wr; an option beats the
environment; with neither, wr at UCUDNN_DEFAULT_WORKSPACE_LIMIT or 64MiB. A total the kernels
share (--workspace-sharing shared) is planned as wr at the total.
Exit status: 0 planned, 1 nothing fits, 2 bad input or a solver failure, 130 interrupted,
143 terminated (SIGTERM).
"""

# --time-limit, seconds: from a nanosecond (which stops the solver at once) to a day. The
# option stays text here; the command reads it within this range (ucudnn.faces.commands).
TIME_LIMIT_RANGE_S = (1e-9, 86_400.0)


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
        help="wd: total budget; selects wd (default: UCUDNN_TOTAL_WORKSPACE_SIZE)",
    )
    parser.add_argument(
        "--workspace-sharing",
        choices=WORKSPACE_SHARING,
        help="wd: how the kernels use the total: divided, each its own slice (their sizes add "
        "up), or shared, one buffer each kernel uses in turn (wr at the total) "
        "(default: UCUDNN_WORKSPACE_SHARING, else divided)",
    )
    parser.add_argument(
        "--policy",
        metavar="POLICY",
        help="micro-batch sizes: undivided, powerOfTwo, all, or a list such as 1,2,32 "
        "(default: UCUDNN_BATCH_SIZE_POLICY, else powerOfTwo)",
    )


def add_solver_arguments(parser: argparse.ArgumentParser) -> None:
    """--deterministic, --solver and --time-limit: how plans are chosen."""
    parser.add_argument(
        "--deterministic", action="store_true", help="use deterministic algorithms only"
    )
    parser.add_argument(
        "--solver", choices=SOLVERS, default="highs", help="wd: ILP solver (default: highs)"
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
    """The options of `ucudnn plan`."""
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--timings", metavar="FILE.csv", help="timings to plan from")
    add_limit_arguments(parser)
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


def policy_from_args(args: argparse.Namespace, config: Config) -> Policy:
    """--policy, else UCUDNN_BATCH_SIZE_POLICY, else powerOfTwo."""
    # An empty --policy is refused, not read as unset.
    if args.policy is None:
        return config.batch_size_policy
    return parse_policy(args.policy, "--policy")


def _size_mode(args: argparse.Namespace, config: Config) -> str:
    """Which size the options name: --mode; else the size option given (--total-workspace: wd,
    --workspace-limit: wr), as an option beats the environment; else wd when
    UCUDNN_TOTAL_WORKSPACE_SIZE is set, else wr. The Handle follows the same rule
    (`ucudnn.runtime.options.workspace_option`)."""
    if args.workspace_limit is not None and args.total_workspace is not None:
        raise ValueError("give --workspace-limit (wr) or --total-workspace (wd), not both")
    mode: str | None = args.mode
    if mode is not None:
        return mode
    if args.total_workspace is not None:
        return "wd"
    if args.workspace_limit is not None:
        return "wr"
    return "wd" if config.workspace_division else "wr"


def mode_from_args(args: argparse.Namespace, config: Config) -> str:
    """The planning mode: as `_size_mode`, except that a total the kernels share (one buffer
    each uses in turn) is planned as wr at the total."""
    mode = _size_mode(args, config)
    sharing: str | None = getattr(args, "workspace_sharing", None)
    if sharing is not None and mode == "wr":
        raise ValueError("--workspace-sharing is for a total workspace (--mode wd)")
    if mode == "wd" and (sharing or config.workspace_sharing) == "shared":
        return "wr"
    return mode


def limit_from_args(args: argparse.Namespace, config: Config) -> int:
    """The WR limit or WD budget in bytes that the mode and its size option ask for."""
    if _size_mode(args, config) == "wr":
        if args.total_workspace is not None:  # only with --mode wr, which says otherwise
            raise ValueError("--total-workspace is for --mode wd; use --workspace-limit")
        if args.workspace_limit is None:
            return config.default_workspace_limit
        return parse_size(args.workspace_limit, "--workspace-limit")
    if args.workspace_limit is not None:  # only with --mode wd
        raise ValueError("--workspace-limit is for --mode wr; use --total-workspace")
    if args.total_workspace is not None:
        return parse_size(args.total_workspace, "--total-workspace")
    if config.total_workspace_size is None:
        raise ValueError("--mode wd needs --total-workspace SIZE (or UCUDNN_TOTAL_WORKSPACE_SIZE)")
    return config.total_workspace_size


def check_rows(tables: TimingTables, source: str) -> None:
    """Refuse timings without a row, as read from a file with a header alone."""
    if not len(tables):
        raise ValueError(f"{source} has no timing rows: expected a header and at least one row")


def plan_tables(tables: TimingTables, args: argparse.Namespace, source: str) -> Plan:
    """The plan that the options in `args` ask for, from `tables` (read from `source`)."""
    check_rows(tables, source)
    config = Config.from_env()
    limit = limit_from_args(args, config)
    common = {
        "policy": policy_from_args(args, config),
        "deterministic_only": args.deterministic,
        "timings_source": source,
    }
    if mode_from_args(args, config) == "wr":
        return make_plan_wr(tables, limit, **common)
    return make_plan_wd(tables, limit, solver=args.solver, time_limit_s=args.time_limit, **common)


def plan_output(plan: Plan, tables: TimingTables, args: argparse.Namespace) -> str:
    """What `ucudnn plan` prints: the plan's report or its JSON document (--json), with why
    each kernel has its schedule (--explain) after the report or as the document's "explain"."""
    explanation = explain_plan(plan, tables) if args.explain else None
    if args.json:
        document = plan.to_dict()
        if explanation is not None:
            document["explain"] = explanation.to_dict()
        return document_text(document)
    if explanation is None:
        return plan.report()
    return f"{plan.report()}\n\n{explanation.report()}"
