"""The planner's part of `ucudnn plan`: what its options ask for, a plan from tables and
options, and what the command prints of it. The options themselves are declared in
`ucudnn.planner.arguments`.

Pure Python, so that planning from a timings CSV works without a GPU; `ucudnn.faces.cli`
mounts it and decides where the tables come from.
"""

from __future__ import annotations

import argparse
import dataclasses

from ucudnn.planner.config import Config, parse_policy, parse_size, parse_slab_policy
from ucudnn.planner.documents import document_text
from ucudnn.planner.explain import explain_plan
from ucudnn.planner.kernel_table import KernelTable
from ucudnn.planner.plan import make_plan_wd, make_plan_wr
from ucudnn.planner.plan_types import Plan
from ucudnn.planner.policies import Policy
from ucudnn.planner.tables import TimingTables


def policy_from_args(args: argparse.Namespace, config: Config) -> Policy:
    """--policy, else UCUDNN_BATCH_SIZE_POLICY, else powerOfTwo."""
    # An empty --policy is refused, not read as unset.
    if args.policy is None:
        return config.batch_size_policy
    return parse_policy(args.policy, "--policy")


def slab_policy_from_args(args: argparse.Namespace, config: Config) -> Policy:
    """--slab-policy (of the commands that take it), else UCUDNN_SLAB_POLICY, else
    undivided."""
    text: str | None = getattr(args, "slab_policy", None)
    if text is None:
        return config.slab_policy
    return parse_slab_policy(text, "--slab-policy")


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


@dataclasses.dataclass(frozen=True)
class PlanOptions:
    """What the options ask of a plan, read and checked before any timings are loaded, so
    that a bad option is refused before the command says what it plans from."""

    mode: str  # "wr" or "wd"
    limit: int  # WR's per-kernel limit or WD's budget, in bytes
    policy: Policy
    slab_policy: Policy  # the slab extents measured or modelled, where timings are made

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PlanOptions:
        config = Config.from_env()
        mode, limit = mode_from_args(args, config), limit_from_args(args, config)
        policy, slab_policy = policy_from_args(args, config), slab_policy_from_args(args, config)
        return cls(mode, limit, policy, slab_policy)


def legacy_only(tables: TimingTables) -> TimingTables:
    """`tables` without graph-API engine rows: what a plan with engines off may use."""
    return TimingTables(
        (
            KernelTable(
                table.layer,
                table.kernel,
                table.batch,
                (c for c in table if not c.engine),
                axis=table.axis,
            )
            for _, table in tables.items()
        ),
        device=tables.device,
    )


def plan_tables(
    tables: TimingTables, options: PlanOptions, args: argparse.Namespace, source: str
) -> Plan:
    """The plan that `options` and the solver options in `args` ask for, from `tables` (read
    from `source`)."""
    check_rows(tables, source)
    common = {
        "policy": options.policy,
        "deterministic_only": args.deterministic,
        "timings_source": source,
        "device": tables.device,
    }
    if options.mode == "wr":
        return make_plan_wr(tables, options.limit, **common)
    return make_plan_wd(
        tables, options.limit, solver=args.solver, time_limit_s=args.time_limit, **common
    )


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
