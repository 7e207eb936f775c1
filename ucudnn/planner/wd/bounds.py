"""The LP relaxation of WD and what it bounds: the greedy along the groups' lower convex hulls,
the unit price (Lagrange multiplier) it sets, the integer greedy's solution, and the options
that the bound rules out of every optimal solution (docs/design/wd-planning.md)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence

from ucudnn.planner.kernel_table import KernelId
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.wd.groups import Group, group_kernels


def _increments(groups: list[Group]) -> list[tuple[float, int, int, int]]:
    """(time saved per unit, group, from option, to option) along each group's lower convex
    hull, best first: the steps of the LP relaxation's greedy."""
    steps = []
    for gi, g in enumerate(groups):
        hull = lower_hull(g, range(len(g.options)))
        for (a, b), saved in zip(itertools.pairwise(hull), saves(g, hull), strict=True):
            steps.append((saved, gi, a, b))
    steps.sort(key=lambda step: (-step[0], step[1], step[2]))
    return steps


def lower_hull(g: Group, indices: Iterable[int]) -> list[int]:
    """Those of the group's options `indices` (ascending) on their lower convex hull in the
    (units, time) plane, fewest units first: times fall along it, ever more slowly."""
    hull: list[int] = []
    for i in indices:
        while len(hull) >= 2 and _on_or_above(g, hull[-2], hull[-1], i):
            hull.pop()
        hull.append(i)
    return hull


def saves(g: Group, hull: list[int]) -> list[float]:
    """The time each step along `hull` saves per unit of workspace, falling along it."""
    return [
        (g.times[a] - g.times[b]) / (g.units[b] - g.units[a]) for a, b in itertools.pairwise(hull)
    ]


def _on_or_above(g: Group, a: int, b: int, c: int) -> bool:
    """Whether option b lies on or above the segment from a to c in the (units, time) plane."""
    left = (g.times[b] - g.times[a]) * (g.units[c] - g.units[a])
    return left >= (g.times[c] - g.times[a]) * (g.units[b] - g.units[a])


@dataclasses.dataclass(frozen=True)
class Start:
    """A known solution that uses no dropped option, and the LP's price of a unit."""

    counts: list[dict[int, int]]  # per group: option -> kernels
    time_ms: float
    multiplier: float


def relaxed_choices(
    sets: Mapping[KernelId, Sequence[Schedule]], budget_bytes: int, alignment: int
) -> dict[KernelId, Schedule]:
    """Each kernel's farthest option along its set's convex hull that the LP relaxation's
    optimum weighs: a cheap guess at what the integer optimum needs (the budget in bytes)."""
    groups = group_kernels(sets, alignment)
    reached, _ = _lp_path(groups, _increments(groups), budget_bytes // alignment)
    return {k: g.options[i] for g, i in zip(groups, reached, strict=True) for k in g.kernels}


def possible_options(
    sets: Mapping[KernelId, Sequence[Schedule]], budget_bytes: int, alignment: int
) -> dict[KernelId, list[Schedule]]:
    """Each kernel's options that an optimal solution may use: those the LP bound does not
    rule out against the cost of the integer greedy's solution (the budget in bytes; all of
    them where the smallest do not fit together, for the solver to say so)."""
    groups = group_kernels(sets, alignment)
    budget = budget_bytes // alignment
    if sum(len(g.kernels) * g.units[0] for g in groups) <= budget:
        prove_greedy_or_prune(groups, budget)
    return {k: [g.options[i] for i in g.allowed] for g in groups for k in g.kernels}


def _lp_path(
    groups: list[Group], steps: list[tuple[float, int, int, int]], budget: int
) -> tuple[list[int], float]:
    """How far the LP relaxation's greedy takes each group along its hull (the option of its
    last step, taken in full or in part), and the LP's price of a unit of workspace."""
    reached = [0] * len(groups)
    left = budget - sum(len(g.kernels) * g.units[0] for g in groups)
    for saved, gi, a, b in steps:
        reached[gi] = b
        need = len(groups[gi].kernels) * (groups[gi].units[b] - groups[gi].units[a])
        if need > left:
            return reached, saved
        left -= need
    return reached, 0.0


def prove_greedy_or_prune(groups: list[Group], budget: int) -> Start | None:
    """Settle every group when the integer greedy is provably optimal (None); otherwise drop
    the options no optimal solution uses, settle the groups left with one, and return the
    greedy's solution to start the exact search from."""
    steps = _increments(groups)
    _, multiplier = _lp_path(groups, steps, budget)
    greedy, greedy_ms = _greedy(groups, steps, budget)
    priced = [[t + multiplier * u for t, u in zip(g.times, g.units, strict=True)] for g in groups]
    bound = math.fsum(len(g.kernels) * min(p) for g, p in zip(groups, priced, strict=True))
    bound -= multiplier * budget
    if greedy_ms <= bound:
        for g, counts in zip(groups, greedy, strict=True):
            g.settle(counts)
        return None
    # A solution using option i costs at least bound + (priced[i] - min(priced)); the margin
    # keeps options whose bound exceeds the greedy's cost by rounding alone, which grows with
    # the largest term of the bound.
    margin = 1e-12 * max(1.0, abs(greedy_ms), multiplier * budget)
    for g, p in zip(groups, priced, strict=True):
        lowest = min(p)
        g.allowed = [i for i in g.allowed if bound + p[i] - lowest <= greedy_ms + margin]
        if len(g.allowed) == 1:
            g.settle({g.allowed[0]: len(g.kernels)})
    return Start(greedy, greedy_ms, multiplier)


def _greedy(
    groups: list[Group], steps: list[tuple[float, int, int, int]], budget: int
) -> tuple[list[dict[int, int]], float]:
    """An integer solution: every step's kernels move up the hull while the budget lasts."""
    counts = [{0: len(g.kernels)} for g in groups]
    left = budget - sum(len(g.kernels) * g.units[0] for g in groups)
    for _, gi, a, b in steps:
        step = groups[gi].units[b] - groups[gi].units[a]
        moved = min(counts[gi].get(a, 0), left // step)
        if moved:
            counts[gi][a] -= moved
            counts[gi][b] = counts[gi].get(b, 0) + moved
            left -= moved * step
    time_ms = math.fsum(
        n * g.times[i] for g, c in zip(groups, counts, strict=True) for i, n in c.items()
    )
    return counts, time_ms
