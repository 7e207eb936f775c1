"""Why a plan chose what it chose: per kernel, the chosen schedule beside the runner-up of its
desirable set, and what taking the runner-up instead would have cost or saved.

The runner-up is the next faster schedule of the kernel's desirable set at any workspace: the
one it would take with a little more workspace. WR leaves it out because it needs more than the
per-kernel limit; WD because the bytes it needs beyond the chosen schedule's are more than the
budget has left once every kernel has its schedule (the ILP spent them where they saved more
time). Where the chosen schedule is the fastest of the set, the runner-up is the next smaller
one instead: what the kernel could give back, and the time that would cost.

Pure Python, from the plan and the tables it was made from; `PlanExplanation.report` renders
it as a table and `to_dict` as the "explain" part of a plan document.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from ucudnn.planner.kernel_table import KernelId
from ucudnn.planner.pareto import DesirableSets
from ucudnn.planner.plan_types import KernelPlan, Plan, schedule_numbers
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.textable import render_table
from ucudnn.planner.units import format_size
from ucudnn.planner.wd import aligned

if TYPE_CHECKING:  # it imports REASONS from here
    from ucudnn.planner import plan_formats

# Why a kernel has the schedule it has, as documents name it, and as reports say it.
REASONS = {
    "fastest": "fastest",  # no schedule is faster, at any workspace
    "over_limit": "over limit",  # WR: the next faster schedule needs more than the limit
    "over_budget": "over budget",  # WD: ... more than the budget has left
    "not_taken": "not taken",  # WD: it fits what is left, but the solver stopped before it
}


@dataclasses.dataclass(frozen=True)
class KernelExplanation:
    """One kernel's choice, its runner-up and how large its desirable set is."""

    layer: str
    kernel: str
    chosen: Schedule
    baseline_ms: float | None  # None: no undivided run fits
    desirable_set_size: int  # schedules in the kernel's desirable set, at any workspace
    within_limit: int  # of them, those within the per-kernel limit (WR) or the budget (WD)
    runner_up: Schedule | None  # None: the set has no other schedule
    reason: str  # a key of REASONS

    @property
    def time_saved_ms(self) -> float | None:
        """The baseline's time minus the chosen schedule's (negative: WD gave this kernel's
        bytes to others, where they saved more)."""
        return None if self.baseline_ms is None else self.baseline_ms - self.chosen.time_ms

    def to_dict(self) -> plan_formats.ExplainedKernel:
        runner_up: plan_formats.RunnerUp | None = None
        if self.runner_up is not None:
            runner_up = {
                "relation": "faster" if self.runner_up.time_ms < self.chosen.time_ms else "smaller",
                **schedule_numbers(self.runner_up),
                "workspace_delta_bytes": self.runner_up.workspace_bytes
                - self.chosen.workspace_bytes,
                "time_delta_ms": self.runner_up.time_ms - self.chosen.time_ms,
            }
        return {
            "layer": self.layer,
            "kernel": self.kernel,
            "chosen": schedule_numbers(self.chosen),
            "baseline_time_ms": self.baseline_ms,
            "time_saved_ms": self.time_saved_ms,
            "desirable_set_size": self.desirable_set_size,
            "desirable_within_limit": self.within_limit,
            "runner_up": runner_up,
            "reason": self.reason,
        }


@dataclasses.dataclass(frozen=True)
class PlanExplanation:
    """Why each kernel of a plan has its schedule, and what the limit or budget cost."""

    plan: Plan
    kernels: tuple[KernelExplanation, ...]
    budget_left_bytes: int | None  # WD: the budget the aligned workspaces leave; WR: None
    fastest_time_ms: float  # every kernel at the fastest schedule of its set
    fastest_workspace_bytes: int  # what those need: the largest (WR), aligned sum (WD)

    def to_dict(self) -> plan_formats.Explanation:
        """The "explain" part of a plan document."""
        baseline = self.plan.baseline_time_ms
        return {
            "time_saved_ms": None if baseline is None else baseline - self.plan.time_ms,
            "workspace_used_bytes": self.plan.workspace_bytes,
            "budget_left_bytes": self.budget_left_bytes,
            "fastest_time_ms": self.fastest_time_ms,
            "fastest_workspace_bytes": self.fastest_workspace_bytes,
            "kernels": [k.to_dict() for k in self.kernels],
        }

    def report(self) -> str:
        """A table: per kernel the chosen schedule, its runner-up and why; then the totals."""
        limit = "limit" if self.plan.mode == "wr" else "budget"
        header = ["layer", "kernel", "set", f"in {limit}", "chosen", "workspace", "time ms"]
        header += ["saved ms", "runner-up", "Δ workspace", "Δ ms", "why"]
        rows = [_row(k) for k in self.kernels]
        lines = [f"Why ({self.plan.mode.upper()}): each kernel's choice and its runner-up"]
        lines += render_table(header, rows, first_numeric=2, text_columns=(4, 8, 11))
        lines += self._notes()
        return "\n".join(lines)

    def _notes(self) -> list[str]:
        plan = self.plan
        notes = [
            "set: schedules in the kernel's desirable set (Pareto front of workspace and time);",
            "saved ms: the baseline's time minus the chosen schedule's;",
            "runner-up: the next faster schedule of the set, or the next smaller one where the",
            "chosen schedule is the fastest; Δ: the runner-up's minus the chosen schedule's.",
        ]
        if self.budget_left_bytes is not None:
            notes.append(
                f"Budget {format_size(plan.limit_bytes)}: "
                f"{format_size(plan.limit_bytes - self.budget_left_bytes)} taken by the "
                f"workspaces (each aligned to {plan.alignment} bytes), "
                f"{format_size(self.budget_left_bytes)} left."
            )
        together = "" if plan.mode == "wr" else " together"
        notes.append(
            f"The fastest schedule of every kernel: {self.fastest_time_ms:.3f} ms, needing "
            f"{format_size(self.fastest_workspace_bytes)}{together}; this plan: "
            f"{plan.time_ms:.3f} ms ({plan.time_ms - self.fastest_time_ms:+.3f} ms)."
        )
        return notes


def _row(k: KernelExplanation) -> list[str]:
    row = [k.layer, k.kernel, str(k.desirable_set_size), str(k.within_limit)]
    row += [_schedule_text(k.chosen), format_size(k.chosen.workspace_bytes)]
    row += [f"{k.chosen.time_ms:.3f}", "" if k.time_saved_ms is None else f"{k.time_saved_ms:.3f}"]
    if k.runner_up is None:
        return [*row, "none", "", "", REASONS[k.reason]]
    workspace_delta = k.runner_up.workspace_bytes - k.chosen.workspace_bytes
    return [
        *row,
        _schedule_text(k.runner_up),
        ("+" if workspace_delta >= 0 else "-") + format_size(abs(workspace_delta)),
        f"{k.runner_up.time_ms - k.chosen.time_ms:+.3f}",
        REASONS[k.reason],
    ]


def _schedule_text(schedule: Schedule) -> str:
    """ "4x32 algo 5", "128+2x64 algos 1,0"."""
    algos = schedule.algos_text()
    return f"{schedule.micro_batches_text()} algo{'s' if ',' in algos else ''} {algos}"


def explain_plan(
    plan: Plan, tables: TimingTables, sets: DesirableSets | None = None
) -> PlanExplanation:
    """Why `plan`, made from `tables`, chose what it chose (see the module's docstring).
    `sets`: the desirable sets the plan was made with (`make_plan_wd`'s), so that they are
    not computed again."""
    if sets is None:
        sets = DesirableSets(plan.policy, plan.deterministic_only)
    fronts = _fronts(plan, tables, sets)
    fastest = [fronts[k.kernel_id][-1] for k in plan.kernels]
    if plan.mode == "wr":
        budget_left, fastest_bytes = None, max((s.workspace_bytes for s in fastest), default=0)
    else:
        alignment = plan.alignment or 1
        used = sum(aligned(k.workspace_bytes, alignment) for k in plan.kernels)
        budget_left = plan.limit_bytes - used
        fastest_bytes = sum(aligned(s.workspace_bytes, alignment) for s in fastest)
    return PlanExplanation(
        plan,
        tuple(_explain_kernel(plan, k, fronts[k.kernel_id], budget_left) for k in plan.kernels),
        budget_left,
        math.fsum(s.time_ms for s in fastest),
        fastest_bytes,
    )


def _fronts(
    plan: Plan, tables: TimingTables, sets: DesirableSets
) -> dict[KernelId, list[Schedule]]:
    """Each kernel's desirable set at any workspace, under the plan's policy and determinism;
    computed once per distinct table (identical layers share it)."""
    sets.check_made_for(plan.policy, plan.deterministic_only)
    fronts = {}
    for k in plan.kernels:
        if k.kernel_id not in tables:
            raise ValueError(f"the tables have no timings for {k.place}, which the plan has")
        fronts[k.kernel_id] = sets.front(tables[k.kernel_id])
    return fronts


def _explain_kernel(
    plan: Plan, k: KernelPlan, front: list[Schedule], budget_left: int | None
) -> KernelExplanation:
    chosen = k.schedule
    # The front's times fall as its workspaces grow: the faster schedules are its tail.
    faster = [s for s in front if s.time_ms < chosen.time_ms]
    smaller = [s for s in front if s.workspace_bytes < chosen.workspace_bytes]
    if faster:
        runner_up: Schedule | None = faster[0]
        reason = (
            "over_limit"
            if budget_left is None
            else _wd_reason(plan, chosen, faster[0], budget_left)
        )
    else:
        runner_up, reason = (smaller[-1] if smaller else None), "fastest"
    return KernelExplanation(
        layer=k.layer,
        kernel=k.kernel,
        chosen=chosen,
        baseline_ms=None if k.baseline is None else k.baseline.time_ms,
        desirable_set_size=len(front),
        within_limit=sum(s.workspace_bytes <= plan.limit_bytes for s in front),
        runner_up=runner_up,
        reason=reason,
    )


def _wd_reason(plan: Plan, chosen: Schedule, faster: Schedule, budget_left: int) -> str:
    """Over the budget when the faster schedule's extra aligned bytes exceed what is left;
    an optimal solve leaves out nothing else."""
    alignment = plan.alignment or 1
    extra = aligned(faster.workspace_bytes, alignment) - aligned(chosen.workspace_bytes, alignment)
    return "over_budget" if extra > budget_left else "not_taken"
