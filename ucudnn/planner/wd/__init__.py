"""WD (workspace division): one schedule per kernel under one total budget, at minimum total time.

`plan_wd` picks one schedule from each kernel's set so that the chosen workspaces, each
aligned, fit the budget together and the sum of times is minimal, exactly: the kernels are
grouped (`groups`), the LP relaxation's bound proves the greedy's answer or prunes the options
(`bounds`), an exact search settles what is left (`search`), or else an ILP solver (`solver`).
docs/design/wd-planning.md says why each step is exact.

The chosen workspaces are laid out back to back in one arena, each at an offset that is a
multiple of `alignment`, so offsets plus sizes always fit in an arena of `budget_bytes`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers
import time
from collections.abc import Mapping, Sequence

from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.checks import integer, shown
from ucudnn.planner.choices import DEFAULT_TIME_LIMIT_S, SOLVERS
from ucudnn.planner.config import byte_count
from ucudnn.planner.errors import InfeasibleError, SolverError
from ucudnn.planner.kernel_table import KernelId
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.units import bytes_text
from ucudnn.planner.wd.bounds import prove_greedy_or_prune
from ucudnn.planner.wd.groups import Group, aligned, group_kernels, kernel_choices
from ucudnn.planner.wd.search import settle_exactly
from ucudnn.planner.wd.solver import settle_by_ilp

__all__ = ["WDSolution", "aligned", "check_solver", "plan_wd"]

logger = logging.getLogger(__name__)

# A solve past its deadline still gets this long: the solver returns the solution it starts from.
_LEAST_SOLVE_S = 1e-9


@dataclasses.dataclass(frozen=True)
class WDSolution:
    choices: dict[KernelId, Schedule]  # in the order the sets were given
    offsets: dict[KernelId, int]  # byte offset of each kernel's workspace in the arena
    arena_bytes: int  # sum of the aligned workspaces, <= the budget
    status: str  # "optimal", or "feasible" when the time limit stopped the solver first
    solver: str  # "highs" or "cbc"; "none" when the bounds alone proved the answer optimal

    @property
    def time_ms(self) -> float:
        return math.fsum(s.time_ms for s in self.choices.values())


def check_solver(solver: object, time_limit_s: object) -> tuple[str, float]:
    """The solver's name and time limit, checked: a known name and a positive, finite number
    of seconds."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {shown(solver)}; expected one of {', '.join(SOLVERS)}")
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, numbers.Real):
        raise TypeError(f"time_limit_s must be a number of seconds, got {shown(time_limit_s)}")
    # Spelled with `<=` and `<`, the comparisons numbers.Real declares; NaN fails the second.
    if time_limit_s <= 0 or not time_limit_s < math.inf:
        raise ValueError(f"time_limit_s must be a positive number of seconds, got {time_limit_s}")
    return str(solver), float(time_limit_s)


def plan_wd(
    sets: Mapping[KernelId, Sequence[Schedule]],
    budget_bytes: int,
    solver: str = "highs",
    alignment: int = CUDNN_ALIGNMENT,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> WDSolution:
    """Pick one schedule from each kernel's set so that the aligned workspaces fit
    `budget_bytes` and the total time is minimal.

    Determinism filters belong to the sets (see `desirable_set`): filtering a front afterwards
    would lose deterministic schedules that a faster non-deterministic one dominated.
    Raises InfeasibleError with the minimum feasible budget when even the smallest schedules
    do not fit, and SolverError when the solver fails or cannot be loaded (naming the package to
    install; HiGHS that cannot be loaded falls back to CBC, with a SolverWarning). A solver
    stopped by `time_limit_s` returns its best plan with status "feasible" (it starts from a
    known one). Ctrl-C stops the wait at once, but the solver thread runs on, in the
    background, until its time limit.
    """
    budget_bytes = byte_count(budget_bytes, "budget_bytes")
    alignment = integer(alignment, "alignment", minimum=1)
    solver, time_limit_s = check_solver(solver, time_limit_s)
    deadline = time.monotonic() + time_limit_s
    groups = group_kernels(sets, alignment)
    need = sum(len(g.kernels) * g.units[0] for g in groups) * alignment
    if need > budget_bytes:
        raise _budget_infeasible(groups, budget_bytes, need, alignment)
    budget = budget_bytes // alignment
    status, used = "optimal", "none"
    if sum(len(g.kernels) * g.units[-1] for g in groups) <= budget:
        logger.debug("WD over %d kernels: every fastest schedule fits; nothing to trade", len(sets))
        for g in groups:
            g.settle({len(g.options) - 1: len(g.kernels)})
    elif (start := prove_greedy_or_prune(groups, budget)) is None:
        logger.debug(
            "WD over %d kernels: the greedy choice meets the LP bound, so it is optimal", len(sets)
        )
    elif settle_exactly(groups, start, budget, deadline):
        used = "dp"
    else:
        left_s = max(deadline - time.monotonic(), _LEAST_SOLVE_S)
        status, used = settle_by_ilp(groups, start.counts, budget, solver, left_s)
    choices = kernel_choices(sets, groups)
    offsets, end = {}, 0
    for k, schedule in choices.items():
        offsets[k] = end
        end += aligned(schedule.workspace_bytes, alignment)
    if end > budget_bytes:  # the promise the runtime relies on; never trust a solver blindly
        raise SolverError(f"the {used} solver exceeded the budget: {end} > {budget_bytes} bytes")
    return WDSolution(choices, offsets, end, status, used)


def _budget_infeasible(
    groups: list[Group], budget: int, need: int, alignment: int
) -> InfeasibleError:
    smallest = {k: g.units[0] * alignment for g in groups for k in g.kernels}
    worst = max(smallest, key=lambda k: smallest[k])
    return InfeasibleError(
        f"total workspace budget {bytes_text(budget)} is too small: the smallest schedules of "
        f"all {len(smallest)} kernels need {bytes_text(need)} (each aligned to {alignment} "
        f"bytes); the largest of them, {worst[0]}/{worst[1]}, needs "
        f"{bytes_text(smallest[worst])}",
        kernel=worst if smallest[worst] > budget else None,
        required_bytes=need,
    )
