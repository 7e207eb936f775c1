"""WD (workspace division): one schedule per kernel under one total budget, at minimum total time.

An integer linear program over the kernels' desirable sets: binary x[k, c] picks schedule c of
kernel k; exactly one per kernel; the sum of the chosen (aligned) workspaces fits the budget;
the sum of times is minimal. Solved by python-mip with HiGHS (CBC as the fallback) at a
relative and absolute gap of 0, so the answer is the true optimum.

The chosen workspaces are laid out back to back in one arena, each at an offset that is a
multiple of `alignment`. The budget therefore constrains the *aligned* sizes (each rounded up
to the alignment), so offsets plus sizes always fit in an arena of `budget_bytes`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import mip

from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.pareto import pareto_front
from ucudnn.planner.tables import KernelId, Schedule
from ucudnn.planner.units import bytes_text

SOLVERS = {"highs": mip.HIGHS, "cbc": mip.CBC}


@dataclasses.dataclass(frozen=True)
class WDSolution:
    choices: dict[KernelId, Schedule]  # in the order the sets were given
    offsets: dict[KernelId, int]  # byte offset of each kernel's workspace in the arena
    arena_bytes: int  # sum of the aligned workspaces, <= the budget
    status: str  # "optimal"
    solver: str  # "highs", "cbc", or "none" when every kernel's fastest schedule fits

    @property
    def time_ms(self) -> float:
        return math.fsum(s.time_ms for s in self.choices.values())


def aligned(nbytes: int, alignment: int) -> int:
    """`nbytes` rounded up to a multiple of `alignment`."""
    return -(-nbytes // alignment) * alignment


def plan_wd(
    sets: Mapping[KernelId, Sequence[Schedule]],
    budget_bytes: int,
    solver: str = "highs",
    alignment: int = 256,
) -> WDSolution:
    """Pick one schedule from each kernel's set so that the aligned workspaces fit
    `budget_bytes` and the total time is minimal.

    Determinism filters belong to the sets (see `desirable_set`): filtering a front afterwards
    would lose deterministic schedules that a faster non-deterministic one dominated.
    Raises InfeasibleError with the minimum feasible budget when even the smallest schedules
    do not fit.
    """
    if budget_bytes < 0:
        raise ValueError(f"total workspace budget must be >= 0 bytes, got {budget_bytes}")
    if alignment < 1:
        raise ValueError(f"alignment must be >= 1 byte, got {alignment}")
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    options = {k: _options(k, schedules, alignment) for k, schedules in sets.items()}
    need = sum(aligned(opts[0].workspace_bytes, alignment) for opts in options.values())
    if need > budget_bytes:
        raise _budget_infeasible(options, budget_bytes, need, alignment)
    # Options that cannot fit next to the others' smallest ones can never be chosen.
    slack = budget_bytes - need
    options = {
        k: [
            s
            for s in opts
            if aligned(s.workspace_bytes, alignment) - aligned(opts[0].workspace_bytes, alignment)
            <= slack
        ]
        for k, opts in options.items()
    }
    fastest = {k: opts[-1] for k, opts in options.items()}
    if sum(aligned(s.workspace_bytes, alignment) for s in fastest.values()) <= budget_bytes:
        choices, used = fastest, "none"
    else:
        choices, used = _solve(options, budget_bytes, solver, alignment)
    offsets, end = {}, 0
    for k, schedule in choices.items():
        offsets[k] = end
        end += aligned(schedule.workspace_bytes, alignment)
    if end > budget_bytes:  # the promise the runtime relies on; never trust a solver blindly
        raise RuntimeError(f"the {used} solver exceeded the budget: {end} > {budget_bytes} bytes")
    return WDSolution(choices, offsets, end, "optimal", used)


def _options(kernel: KernelId, schedules: Sequence[Schedule], alignment: int) -> list[Schedule]:
    """The kernel's front under aligned sizes, smallest first."""
    front = pareto_front(
        schedules, key=lambda s: (aligned(s.workspace_bytes, alignment), s.time_ms)
    )
    if not front:
        raise InfeasibleError(
            f"{kernel[0]}/{kernel[1]} has no schedules to choose from", kernel=kernel
        )
    return front


def _budget_infeasible(
    options: Mapping[KernelId, list[Schedule]], budget: int, need: int, alignment: int
) -> InfeasibleError:
    smallest = {k: aligned(opts[0].workspace_bytes, alignment) for k, opts in options.items()}
    worst = max(smallest, key=lambda k: smallest[k])
    return InfeasibleError(
        f"total workspace budget {bytes_text(budget)} is too small: the smallest schedules of "
        f"all {len(options)} kernels need {bytes_text(need)} (each aligned to {alignment} "
        f"bytes); the largest of them, {worst[0]}/{worst[1]}, needs "
        f"{bytes_text(smallest[worst])}",
        kernel=worst if smallest[worst] > budget else None,
        required_bytes=need,
    )


def _model(solver: str) -> tuple[mip.Model, str]:
    """A quiet minimisation model, on CBC if HiGHS cannot be loaded."""
    try:
        model = mip.Model(sense=mip.MINIMIZE, solver_name=SOLVERS[solver])
    except Exception:  # python-mip raises plain exceptions when a solver library is missing
        if solver == "cbc":
            raise
        model, solver = mip.Model(sense=mip.MINIMIZE, solver_name=mip.CBC), "cbc"
    model.verbose = 0
    model.max_mip_gap = 0.0
    model.max_mip_gap_abs = 0.0
    return model, solver


def _solve(
    options: Mapping[KernelId, list[Schedule]], budget: int, solver: str, alignment: int
) -> tuple[dict[KernelId, Schedule], str]:
    model, used = _model(solver)
    chosen = {k: [model.add_var(var_type=mip.BINARY) for _ in opts] for k, opts in options.items()}
    # Sizes in units of the alignment keep the coefficients small integers.
    units = {
        k: [aligned(s.workspace_bytes, alignment) // alignment for s in opts]
        for k, opts in options.items()
    }
    for xs in chosen.values():
        model += mip.xsum(xs) == 1
    model += (
        mip.xsum(u * x for k in options for u, x in zip(units[k], chosen[k], strict=True))
        <= budget // alignment
    )
    model.objective = mip.xsum(
        s.time_ms * x for k, opts in options.items() for s, x in zip(opts, chosen[k], strict=True)
    )
    status = model.optimize()
    if status != mip.OptimizationStatus.OPTIMAL:
        raise RuntimeError(f"the {used} solver stopped with status {status.name}")
    picks = {
        k: [s for s, x in zip(opts, chosen[k], strict=True) if x.x >= 0.5]
        for k, opts in options.items()
    }
    if any(len(p) != 1 for p in picks.values()):
        raise RuntimeError(f"the {used} solver returned a solution that picks no single schedule")
    return {k: p[0] for k, p in picks.items()}, used
