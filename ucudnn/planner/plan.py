"""Making plans: `make_plan_wr` (a workspace limit per kernel) and `make_plan_wd` (one budget
shared by all kernels) choose each kernel's schedule and its undivided baseline, and log and
warn about the plan they make. What a plan is (`Plan`, `KernelPlan`) is in `plan_types`.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Mapping
from typing import SupportsIndex, TypeVar

from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.argtypes import PolicyArgument, Size
from ucudnn.core.checks import integer
from ucudnn.core.facts import DeviceFacts
from ucudnn.errors import SlowPlanWarning
from ucudnn.planner.candidate import Candidate
from ucudnn.planner.choices import DEFAULT_TIME_LIMIT_S
from ucudnn.planner.collector import collector_paused
from ucudnn.planner.config import byte_count, micro_batch_policy
from ucudnn.planner.dp import solved_in_closed_form
from ucudnn.planner.eligible import fastest_by_size
from ucudnn.planner.errors import InfeasibleError, SolverError
from ucudnn.planner.kernel_table import ContentKey, KernelId, KernelTable
from ucudnn.planner.pareto import DesirableSets, desirable_set
from ucudnn.planner.partial_fronts import plan_on_partial_fronts
from ucudnn.planner.plan_json import JSON_FORMAT, JSON_VERSION
from ucudnn.planner.plan_types import KernelPlan, Plan
from ucudnn.planner.policies import DEFAULT_POLICY, Policy, policy_text
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.units import format_size
from ucudnn.planner.wd import WDSolution, aligned, check_solver, plan_wd
from ucudnn.planner.wr import fastest_and_undivided, kernel_infeasible

# The public names of plans, those of their types and document (plan_types, plan_json) too.
__all__ = [
    "JSON_FORMAT",
    "JSON_VERSION",
    "KernelPlan",
    "Plan",
    "baseline",
    "make_plan_wd",
    "make_plan_wr",
]

T = TypeVar("T")

logger = logging.getLogger(__name__)

_LEAST_SOLVE_S = 0.001
# How much more than its baseline a plan may take before it is called slower: a millionth is
# the solver's tolerances and rounding, not a worse plan (measurements vary far more).
_SLOWER_BY_MORE_THAN = 1e-6


def baseline(
    table: KernelTable, limit_bytes: Size, deterministic_only: bool = False
) -> Candidate | None:
    """The fastest single whole run (no slabs) at the full batch within `limit_bytes` (bytes,
    or text such as "64MiB"), if any.

    Raises:
        TypeError: `limit_bytes` is neither an integer nor text.
        ValueError: text that is no size, a negative size or one larger than any memory.
    """
    limit_bytes = byte_count(limit_bytes, "limit_bytes")
    whole = table.whole_volume()
    row = fastest_by_size(whole, limit_bytes, "undivided", deterministic_only).get(table.batch)
    return None if row is None else Candidate.of_row(row)


def _per_content(
    tables: TimingTables, solve: Callable[[KernelTable], T], key: Callable[[KernelTable], object]
) -> dict[KernelId, T]:
    """`solve` of each table, computed once per `key`: identical layers (ResNet's repeated
    blocks) share measurements, so they share the answer too. The key is the content key
    where equal tables must share one answer object (`plan_wd` groups the kernels that share
    one list of options), and else `shared_content`, which hashes no rows: the readers, MODEL
    tables and tunes share the content of equal tables, and equal tables that share nothing
    are solved once each (a first WR plan of ResNet-50's engine tables does a quarter less
    work)."""
    solved: dict[object, T] = {}
    answers = {}
    for kernel_id, table in tables.items():
        found = key(table)
        answer = solved.get(found, _UNSOLVED)
        if answer is _UNSOLVED:
            answer = solved[found] = solve(table)
        answers[kernel_id] = answer
    return answers  # type: ignore[return-value]


_UNSOLVED = object()


def make_plan_wr(
    tables: TimingTables,
    limit_bytes: Size,
    policy: PolicyArgument = DEFAULT_POLICY,
    deterministic_only: bool = False,
    device: DeviceFacts | None = None,
    timings_source: str = "",
) -> Plan:
    """WR for every kernel in `tables`: each gets the fastest schedule within `limit_bytes`
    (bytes, or text such as "64MiB").

    Raises:
        TypeError: a size neither an integer nor text, or a micro-batch size that is not an
            integer.
        ValueError: text that is no size, a negative size or one larger than any memory, or
            an unknown or empty policy.
        InfeasibleError: a kernel has no schedule within the limit; `kernel` names it and
            `required_bytes` is the smallest limit that would do, if any would.
    """
    limit_bytes = byte_count(limit_bytes, "limit_bytes")
    policy = micro_batch_policy(policy, "policy")

    def solve(table: KernelTable) -> tuple[Schedule, Candidate | None]:
        schedule, undivided = fastest_and_undivided(table, limit_bytes, policy, deterministic_only)
        if schedule is None:
            raise kernel_infeasible(table, limit_bytes, policy, deterministic_only)
        return schedule, undivided

    # Both from one pass over the contents: finding a content is a large part of a plan.
    with collector_paused():  # a block: a decorator's frame would hide the caller a warning names
        solved = _per_content(tables, solve, KernelTable.shared_content)
    schedules = {k: schedule for k, (schedule, _) in solved.items()}
    baselines = {k: undivided for k, (_, undivided) in solved.items()}
    return _plan(
        "wr",
        tables,
        limit_bytes,
        policy,
        deterministic_only,
        schedules,
        baselines,
        device=device,
        timings_source=timings_source,
    )


def make_plan_wd(
    tables: TimingTables,
    budget_bytes: Size,
    policy: PolicyArgument = DEFAULT_POLICY,
    deterministic_only: bool = False,
    solver: str = "highs",
    alignment: SupportsIndex = CUDNN_ALIGNMENT,
    device: DeviceFacts | None = None,
    timings_source: str = "",
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    sets: DesirableSets | None = None,
) -> Plan:
    """WD over every kernel in `tables`: the fastest set of schedules whose aligned
    workspaces fit together in `budget_bytes` (bytes, or text such as "512MiB").

    `sets` keeps the desirable sets between calls, and the one budget of steps their solves
    share (its policy and determinism must be the plan's): pass the same one to plan tables
    again at other budgets without walking their fronts again. Under sizes that are no
    divisor chain, WD needs no whole front (see `ucudnn.planner.partial_fronts`).

    `time_limit_s` bounds the two solves together: the plan's, then its baseline's. The plan's
    solver_status is "optimal" only when both were proven optimal; a baseline the solver
    fails on is left out rather than failing the plan.

    Raises:
        TypeError: a size neither an integer nor text, a micro-batch size, an alignment or a
            time limit that is not a number of the right kind.
        ValueError: text that is no size, a negative size or one larger than any memory, an
            unknown or empty policy, an unknown solver, a time limit that is not a positive
            number of seconds, an alignment below 1, or `sets` made for another policy or
            determinism.
        InfeasibleError: the kernels' smallest schedules together exceed the budget
            (`required_bytes` is the smallest budget that would do), or a kernel has no
            schedule at any workspace size (`kernel` names it).
        SolverError: no solver can be loaded, or the solver fails or stops at its time limit
            without a plan.
    """
    budget_bytes = byte_count(budget_bytes, "budget_bytes")
    alignment = integer(alignment, "alignment", minimum=1)
    solver, time_limit_s = check_solver(solver, time_limit_s)
    policy = micro_batch_policy(policy, "policy")
    deadline = time.monotonic() + time_limit_s
    if sets is None:
        sets = DesirableSets(policy, deterministic_only)
    else:
        sets.check_made_for(policy, deterministic_only)

    def solve(sets: Mapping[KernelId, list[Schedule]]) -> WDSolution:
        # Past the deadline a solve still gets a moment: it returns the solution it starts from.
        left = max(deadline - time.monotonic(), _LEAST_SOLVE_S)
        return plan_wd(sets, budget_bytes, solver, alignment, time_limit_s=left)

    with collector_paused():  # a block: a decorator's frame would hide the caller a warning names
        fastest, fit = _fastest_within_budget(tables, budget_bytes, sets, alignment)
        if fit:
            # One list per content: plan_wd groups the kernels that share one.
            options = {key: [schedule] for key, schedule in fastest.items() if schedule is not None}
            solution = solve({k: options[t.content_key()] for k, t in tables.items()})
        else:
            solution = plan_on_partial_fronts(
                tables,
                sets,
                budget_bytes,
                alignment,
                solve,
                lambda t: kernel_infeasible(t, budget_bytes, policy, deterministic_only),
                fastest,
            )
        undivided = _per_content(
            tables,
            lambda t: desirable_set(
                t.whole_volume(), budget_bytes, "undivided", deterministic_only
            ),
            KernelTable.content_key,
        )
        try:
            baseline_solution = solve(undivided)
        except (InfeasibleError, SolverError):  # no undivided plan fits, or none was found
            baseline_solution = None
    baselines = (
        {k: s.parts[0] for k, s in baseline_solution.choices.items()} if baseline_solution else {}
    )
    statuses = {solution.status, baseline_solution.status if baseline_solution else "optimal"}
    return _plan(
        "wd",
        tables,
        budget_bytes,
        policy,
        deterministic_only,
        solution.choices,
        baselines,
        offsets=solution.offsets,
        solver=solution.solver,
        solver_status="optimal" if statuses == {"optimal"} else "feasible",
        alignment=alignment,
        device=device,
        timings_source=timings_source,
    )


def _fastest_within_budget(
    tables: TimingTables, budget_bytes: int, sets: DesirableSets, alignment: int
) -> tuple[dict[ContentKey, Schedule | None], bool]:
    """Each table content's fastest schedule within the budget (None: it has none), and
    whether those of all kernels fit in it together.

    If they do, WD has nothing to trade and takes the last point of each desirable set within
    the budget, which is that schedule (the program's answer from the same candidates: the
    fastest, with the least workspace of that time), so one solve per table stands for a
    whole front: a tune that plans small batches in a large memory plans most of them so. If
    not, partial fronts start from them; fronts that are walked whole (divisor chains) need
    none, so theirs are left out once the schedules are known not to fit."""
    fastest: dict[ContentKey, Schedule | None] = {}
    total, fit = 0, True
    for _, table in tables.items():
        key = table.content_key()
        if key not in fastest:
            if not fit and solved_in_closed_form(sets.policy, table.batch):
                continue
            fastest[key], _ = fastest_and_undivided(
                table, budget_bytes, sets.policy, sets.deterministic_only, sets.candidate
            )
        schedule = fastest.get(key)
        if fit and schedule is not None:
            total += aligned(schedule.workspace_bytes, alignment)
        fit = fit and schedule is not None and total <= budget_bytes
    return fastest, fit


def _plan(
    mode: str,
    tables: TimingTables,
    limit_bytes: int,
    policy: Policy,
    deterministic_only: bool,
    schedules: dict[KernelId, Schedule],
    baselines: Mapping[KernelId, Candidate | None],
    offsets: dict[KernelId, int] | None = None,
    **fields: object,
) -> Plan:
    kernels = tuple(
        KernelPlan.of_checked(
            table,
            schedules[kernel_id],
            baselines.get(kernel_id),
            offsets[kernel_id] if offsets is not None else None,
        )
        for kernel_id, table in tables.items()
    )
    plan = Plan(
        mode=mode,
        limit_bytes=limit_bytes,
        policy=policy if isinstance(policy, str) else tuple(policy),
        kernels=kernels,
        deterministic_only=deterministic_only,
        **fields,  # type: ignore[arg-type]
    )
    _log_plan(plan)
    _warn_if_slower(plan)
    return plan


def _log_plan(plan: Plan) -> None:
    """The plan in one line at INFO, each kernel's choice at DEBUG (built only when shown)."""
    if logger.isEnabledFor(logging.INFO):
        limit = "per-kernel limit" if plan.mode == "wr" else "total budget"
        baseline = plan.baseline_time_ms
        logger.info(
            "%s plan of %d kernels, %s %s, policy %s: %.3f ms predicted against %s, "
            "%s of workspace, solver %s (%s)",
            plan.mode.upper(), len(plan.kernels), limit, format_size(plan.limit_bytes),
            policy_text(plan.policy), plan.time_ms,
            "no undivided baseline (none fits)" if baseline is None
            else f"{baseline:.3f} ms undivided ({_speedup_text(plan.speedup)})",
            format_size(plan.workspace_bytes), plan.solver, plan.solver_status,
        )  # fmt: skip
    if logger.isEnabledFor(logging.DEBUG):
        for k in plan.kernels:
            logger.debug(
                "%s: micro-batches %s, algorithms %s, %s of workspace, %.3f ms (baseline %s)",
                k.place, k.schedule.micro_batches_text(), k.schedule.algos_text(),
                format_size(k.workspace_bytes), k.time_ms,
                "none fits" if k.baseline is None else f"{k.baseline.time_ms:.3f} ms",
            )  # fmt: skip


def _speedup_text(ratio: float | None) -> str:
    return "speedup —" if ratio is None else f"speedup {ratio:.2f}x"


def _warn_if_slower(plan: Plan) -> None:
    """Warn when the plan as a whole is predicted slower than its baseline. WR's dynamic
    program and an optimal WD solve never are (the undivided runs are among their choices);
    a WD solver stopped by its time limit may be. One kernel slower than its own baseline is a
    fair trade in WD when the others gain more, so only the totals count."""
    baseline = plan.baseline_time_ms
    if baseline is None or plan.time_ms <= baseline * (1 + _SLOWER_BY_MORE_THAN):
        return
    warnings.warn(
        f"the {plan.mode.upper()} plan is predicted slower than its undivided baseline "
        f"({plan.time_ms:.3f} ms against {baseline:.3f} ms): the {plan.solver} solver stopped "
        f"at its time limit (status {plan.solver_status}) before it found a better plan; give "
        "it more time (time_limit_s, or ucudnn plan --time-limit)",
        SlowPlanWarning,
        stacklevel=4,  # the caller of make_plan_wr or make_plan_wd
    )
